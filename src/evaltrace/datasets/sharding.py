r"""Splitting a dataset's entries into shards: ``evaltrace test --shard K/N``.

The rule, the same on every machine and Python version: the selected entries are ordered by
the SHA-256 digest of ``"<dataset name>\0<entry name>"`` (the digest's bytes, then the name,
to break a tie), and shard ``K`` of ``N`` takes the entries at positions ``K-1``, ``K-1+N``,
``K-1+2N``, ... of that order. So every entry is in exactly one shard, shard sizes differ by
at most one, and an entry's shard depends only on the dataset's name and the names of the
entries selected, never on their order in the file or on ``hash()`` (which Python salts per
process). Adding or removing entries moves others between shards: shard a fixed dataset.

Example:
    >>> shard = Shard.parse("2/3")
    >>> names = [f"q{i}" for i in range(10)]
    >>> sorted(len(shard_positions("faq", names, Shard(k, 3))) for k in (1, 2, 3))
    [3, 3, 4]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from evaltrace._safe_text import safe_repr
from evaltrace.errors import EvaltraceError

__all__ = ["Shard", "ShardSpecError", "selection_digest", "shard_positions"]

_SHARD: Final = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class ShardSpecError(EvaltraceError, ValueError):
    """A shard is not ``K/N`` with ``1 <= K <= N``."""


@dataclass(frozen=True)
class Shard:
    """One slice of a dataset's entries: shard :attr:`index` of :attr:`count`.

    Raises:
        ShardSpecError: ``index`` is not in ``1..count``.
    """

    index: int
    """Which shard, from 1 to :attr:`count`."""
    count: int
    """How many shards the entries are split into."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.index, bool)
            or isinstance(self.count, bool)
            or not isinstance(self.index, int)
            or not isinstance(self.count, int)
            or not 1 <= self.index <= self.count
        ):
            raise ShardSpecError(
                f"a shard is K/N with 1 <= K <= N (such as 2/3), got "
                f"{safe_repr(self.index)}/{safe_repr(self.count)}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Read ``"K/N"``, such as ``"2/3"``.

        Raises:
            ShardSpecError: ``text`` is not ``K/N`` with ``1 <= K <= N``.
        """
        match = _SHARD.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ShardSpecError(
                f"a shard is written K/N, the shard K (from 1) of N, such as 2/3; got "
                f"{safe_repr(text)}"
            )
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def _key(dataset: str, name: str) -> tuple[bytes, str]:
    return hashlib.sha256(f"{dataset}\0{name}".encode()).digest(), name


def shard_positions(dataset: str, names: Sequence[str], shard: Shard) -> Sequence[int]:
    """The positions in ``names`` of the entries in ``shard``, in ascending order.

    Args:
        dataset: The dataset's name (what the digest is salted with).
        names: The names of the selected entries (unique), in dataset order.
        shard: Which shard.
    """
    if shard.count == 1:
        return range(len(names))
    order = sorted(range(len(names)), key=lambda position: _key(dataset, names[position]))
    return sorted(order[shard.index - 1 :: shard.count])


def selection_digest(names: Iterable[str]) -> str:
    """SHA-256 (hex) of entry names, in order: which entries of a dataset a run was given."""
    digest = hashlib.sha256()
    for name in names:
        encoded = name.encode("utf-8", "surrogatepass")
        digest.update(f"{len(encoded)}:".encode())
        digest.update(encoded)
    return digest.hexdigest()
