"""A JSON dataset read entry by entry, its entries kept as their compact text.

:func:`~evaltrace.datasets.load_dataset` first reads a ``.json`` dataset here: the document's
members are decoded one at a time, each entry validated (with every check the whole-document
validation makes of it: its fields, its evaluators against the dataset's, its name against
the names before it, stored and run entries not mixed) and then kept only as its text, one
byte string for all of them (:class:`PackedEntries`). The parsed document and the entries'
models are never all held at once, so a large dataset's run holds about its file's size, not
2.5 KB an entry (bench_cli_scale.py, peak RSS at 10**5 entries vs 10**4).

Whatever this reader does not take, it leaves to the whole-document validation, which reports
every problem with its line and column: a problem of any kind (it stops at the first), a
document whose ``entries`` come before the dataset's other keys.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from evaltrace.datasets._json import strict_decoder
from evaltrace.datasets.jsonl import LazyEntries, NameHashes
from evaltrace.datasets.model import (
    Dataset,
    DatasetEntry,
    ValidationScope,
    entry_problems,
    with_default_name,
)

__all__ = ["PackedEntries", "read_valid_json_dataset"]

_PLACEHOLDER: Final[dict[str, Any]] = {"entry_kwargs": {}}
"""The header is validated as a dataset of this one entry (its own entries come apart)."""
_SPACE: Final = re.compile(r"[ \t\r\n]*")


class PackedEntries(LazyEntries):
    """A dataset's entries kept as their JSON text, each validated again when asked for.

    About the size of the entries in the file (and 8 bytes an entry), where the entries'
    models take about 1.4 KB each. Each entry asked for is a new object; an omitted name is
    its position.

    Args:
        data: The entries' UTF-8 text, one after the other.
        offsets: Where each entry's text starts in ``data``, then where the last one ends.
    """

    def __init__(self, data: bytes | bytearray, offsets: array[int]) -> None:
        super().__init__(len(offsets) - 1)
        self._offsets = offsets
        self._data = data

    def _entry(self, position: int) -> DatasetEntry:
        text = self._data[self._offsets[position] : self._offsets[position + 1]]
        return with_default_name(DatasetEntry.model_validate_json(text), position, copy=False)

    def __iter__(self) -> Iterator[DatasetEntry]:
        for position in range(len(self)):
            yield self[position]


def read_valid_json_dataset(text: str, *, file: str, path: Path) -> Dataset | None:
    """The dataset in ``text`` with :class:`PackedEntries`, or ``None`` if this reader leaves it.

    ``None`` when the document has any problem, or its ``entries`` come before another of
    the dataset's keys: the whole-document validation then reads it and reports every
    problem.

    Args:
        text: The file's text.
        file: How the dataset names its file.
        path: The file.
    """
    try:
        return _Reader(text, file, path).read()
    except (ValueError, RecursionError):  # json.JSONDecodeError, ValidationError among them
        return None


class _Left(Exception):
    """The document is left to the whole-document validation."""


class _Reader:
    """One pass over a JSON dataset's members and entries."""

    def __init__(self, text: str, file: str, path: Path) -> None:
        self.text = text
        self.file = file
        self.path = path
        self.repeated: list[str] = []
        self.decoder = strict_decoder(self.repeated)

    def read(self) -> Dataset | None:
        try:
            return self._read()
        except _Left:
            return None

    def _read(self) -> Dataset:
        text = self.text
        at = self._expect("{", self._space(0))
        header: dict[str, Any] = {}
        dataset: Dataset | None = None
        entries: PackedEntries | None = None
        if not text.startswith("}", at):
            while True:
                if not text.startswith('"', at):
                    raise _Left
                key, at = self._decode(at)
                at = self._space(self._expect(":", at))
                if key in header or entries is not None:
                    raise _Left  # a repeated key, or one after the entries
                if key == "entries":
                    dataset = self._header(header)
                    entries, at = self._entries(dataset, at)
                else:
                    header[key], at = self._decode(at)
                at = self._space(at)
                if text.startswith(",", at):
                    at = self._space(at + 1)
                    continue
                at = self._expect("}", at)
                break
        if self._space(at) != len(text) or dataset is None or entries is None:
            raise _Left
        dataset.entries = entries
        return dataset

    def _header(self, header: dict[str, Any]) -> Dataset:
        """The dataset of ``header``, validated with a stand-in entry."""
        scope = ValidationScope(self.file, self.path)
        dataset = Dataset.model_validate(
            {**header, "entries": [_PLACEHOLDER]}, context=scope.context()
        )
        if scope.problems:
            raise _Left
        return dataset

    def _entries(self, dataset: Dataset, at: int) -> tuple[PackedEntries, int]:
        """The entries of the array at ``at``, each checked, kept as its text."""
        text = self.text
        at = self._space(self._expect("[", at))
        data = bytearray()
        offsets = array("q", [0])
        names = NameHashes()
        stored: bool | None = None
        evaluators = dataset.evaluators
        if text.startswith("]", at):
            raise _Left  # no entry
        while True:
            start = at
            raw, at = self._decode(at)
            if not isinstance(raw, dict):
                raise _Left
            index = len(offsets) - 1
            entry = DatasetEntry.model_validate(raw)
            if entry_problems(self.file, index, entry, evaluators):
                raise _Left
            if stored is None:
                stored = entry.stored
            name = entry.name if entry.name is not None else str(index)
            if entry.stored != stored:
                raise _Left  # mixed: reported by the other path
            names.add(name)
            data += text[start:at].encode("utf-8")
            offsets.append(len(data))
            at = self._space(at)
            if text.startswith(",", at):
                at = self._space(at + 1)
                continue
            break
        if names.repeated():
            raise _Left  # perhaps a name seen twice: reported by the other path
        return PackedEntries(data, offsets), self._expect("]", at)

    def _decode(self, at: int) -> tuple[Any, int]:
        value, end = self.decoder.raw_decode(self.text, at)
        if self.repeated:
            raise _Left
        return value, end

    def _expect(self, mark: str, at: int) -> int:
        at = self._space(at)
        if not self.text.startswith(mark, at):
            raise _Left
        return at + 1

    def _space(self, at: int) -> int:
        found = _SPACE.match(self.text, at)
        return found.end() if found is not None else at
