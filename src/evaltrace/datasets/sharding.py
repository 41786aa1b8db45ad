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
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

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


def shard_key(dataset: str, name: str) -> tuple[bytes, str]:
    """What orders an entry among the shards: its salted SHA-256 digest, then its name."""
    return hashlib.sha256(f"{dataset}\0{name}".encode()).digest(), name


def shard_positions(dataset: str, names: Sequence[str], shard: Shard) -> Sequence[int]:
    """The positions in ``names`` of the entries in ``shard``, in ascending order.

    ``names`` is read once in order, and again only for the rare entries whose digests share
    their first 8 bytes: a sequence that reads each name when asked (a JSONL dataset's) is
    never held whole.

    Args:
        dataset: The dataset's name (what the digest is salted with).
        names: The names of the selected entries (unique), in dataset order.
        shard: Which shard.
    """
    if shard.count == 1:
        return range(len(names))
    # 8 bytes an entry, not a list of (digest, name) keys: choosing a shard of a JSONL
    # dataset peaked at ~220 bytes an entry (tests/test_dataset_memory.py).
    prefixes = np.fromiter(
        (_prefix(shard_key(dataset, name)[0]) for name in names),
        dtype=np.uint64,
        count=len(names),
    )
    order = order_by_key(prefixes, lambda position: shard_key(dataset, names[position]))
    del prefixes
    chosen = np.sort(order[shard.index - 1 :: shard.count]).astype(np.int64, copy=False)
    del order
    positions = array("q")
    positions.frombytes(chosen.data.cast("B"))
    return positions


def _prefix(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "big")


def order_by_key(
    prefixes: npt.NDArray[np.uint64], key: Callable[[int], tuple[bytes, str]]
) -> npt.NDArray[np.intp]:
    """Positions ordered by their keys, given each key's leading bytes as a number.

    The positions whose prefixes are equal are put in order by their whole key (``key``).
    ``prefixes`` is sorted in place (no copy of it is made).
    """
    order = np.argsort(prefixes)  # equal prefixes are put in order below
    prefixes.sort()
    ranked = prefixes
    shared = np.flatnonzero(ranked[1:] == ranked[:-1])
    start = 0
    for index in shared.tolist():  # runs of equal prefixes: almost never, past a few entries
        if index < start:
            continue
        end = index + 1
        while end < len(ranked) and ranked[end] == ranked[index]:
            end += 1
        order[index:end] = sorted(order[index:end].tolist(), key=key)
        start = end
    return order


def selection_digest(names: Iterable[str]) -> str:
    """SHA-256 (hex) of entry names, in order: which entries of a dataset a run was given."""
    digest = hashlib.sha256()
    for name in names:
        encoded = name.encode("utf-8", "surrogatepass")
        digest.update(f"{len(encoded)}:".encode())
        digest.update(encoded)
    return digest.hexdigest()
