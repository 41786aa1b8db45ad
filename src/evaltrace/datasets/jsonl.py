r"""JSONL datasets, ``*.evaltrace.jsonl``: a header line, then one entry per line, read lazily.

Line 1 holds everything a dataset file holds but its entries (``name``, ``runnable``,
``evaluators``, ``epochs``, ``reducer``, ``$schema``), as one JSON object; each further line
holds one entry. Blank lines are skipped. The file is read once, line by line, when it is
loaded (:func:`load_jsonl_dataset`): every line is checked as the JSON and YAML forms are (and
every problem reported at once, each with its line), and where each entry's line starts is
kept (8 bytes an entry), nothing more. Afterwards an entry is parsed again from its line when
it is asked for (:class:`JsonlEntries`), so a run over a dataset of 10**6 entries never holds
them all, and a shard (``--shard K/N``) parses only its own entries' lines while it runs.

Example:
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [{"name": "faq", "evaluators": ["ExactMatch"]},
    ...          {"name": "hi", "entry_kwargs": {"q": "hi"}}]
    >>> _ = (folder / "faq.evaltrace.jsonl").write_text(
    ...     "".join(json.dumps(line) + "\n" for line in lines))
    >>> dataset = load_jsonl_dataset(folder / "faq.evaltrace.jsonl")
    >>> dataset.name, [entry.name for entry in dataset.entries]
    ('faq', ['hi'])
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import re
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Final, overload

from pydantic import ValidationError

from evaltrace.datasets._json import parse_json
from evaltrace.datasets._validation_problems import problems_from_errors
from evaltrace.datasets.model import (
    Dataset,
    DatasetEntry,
    EvaluatorSpec,
    ValidationScope,
    entry_problems,
    with_default_name,
)
from evaltrace.datasets.problems import DatasetError, DatasetProblem, describe_value

__all__ = [
    "JSONL_SUFFIX",
    "JsonlEntries",
    "OffsetEntries",
    "SeenNames",
    "is_jsonl",
    "jsonl_lines",
    "load_jsonl_dataset",
    "with_entry_lines",
]

JSONL_SUFFIX: Final = ".jsonl"
"""The suffix of a JSONL dataset file (``faq.evaltrace.jsonl``)."""

_ENTRY_KEYS: Final = frozenset(
    field.alias or name for name, field in DatasetEntry.model_fields.items()
)
_HEADER_KEYS: Final = frozenset(field.alias or name for name, field in Dataset.model_fields.items())
_HEADER_ONLY: Final = _HEADER_KEYS - _ENTRY_KEYS
_ENTRY_ONLY: Final = _ENTRY_KEYS - _HEADER_KEYS
# The header is validated as a dataset of this one entry.
_PLACEHOLDER: Final[dict[str, Any]] = {"entry_kwargs": {}}
_ENTRY_AT: Final = re.compile(r"entries\[(\d+)\]")


def is_jsonl(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a JSONL dataset file (its suffix is ``.jsonl``)."""
    return Path(path).suffix.lower() == JSONL_SUFFIX


class OffsetEntries(Sequence[DatasetEntry]):
    """Entries kept as where each one's text starts, each read when asked for.

    Args:
        offsets: Where each entry's text starts, then where the last one ends.
    """

    def __init__(self, offsets: array[int]) -> None:
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> DatasetEntry: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[DatasetEntry]: ...

    def __getitem__(self, index: int | slice) -> DatasetEntry | Sequence[DatasetEntry]:
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        position = range(len(self))[index]  # IndexError, and negative positions, as a list
        return self._entry(position)

    def _entry(self, position: int) -> DatasetEntry:
        """The entry at ``position`` (0 to ``len(self) - 1``), read afresh."""
        raise NotImplementedError


class JsonlEntries(OffsetEntries):
    """The entries of a JSONL dataset file, each parsed from its line when asked for.

    Holds where each entry's line starts (and the line numbers, when blank lines make them
    differ from the positions), never the entries. Each entry asked for is a new object; an
    omitted name is its position, as in the other forms.

    Args:
        path: The file, checked by :func:`load_jsonl_dataset`.
        file: How problems name it.
        offsets: Where each entry's line starts, then where the last one ends.
        lines: Each entry's line number, or ``None`` when entry ``i`` is on line ``i + 2``.
    """

    def __init__(
        self, path: Path, *, file: str, offsets: array[int], lines: array[int] | None
    ) -> None:
        self.path = path
        """The dataset file."""
        self.file = file
        """How problems name the file."""
        super().__init__(offsets)
        self._lines = lines
        self._stream: IO[bytes] | None = None

    def _entry(self, position: int) -> DatasetEntry:
        stream = self._open()
        stream.seek(self._offsets[position])
        return self._parse(position, stream.read(self._offsets[position + 1] - stream.tell()))

    def __iter__(self) -> Iterator[DatasetEntry]:
        with self.path.open("rb") as stream:
            stream.seek(self._offsets[0])
            for position in range(len(self)):
                size = self._offsets[position + 1] - self._offsets[position]
                yield self._parse(position, stream.read(size))

    def line_of(self, position: int) -> int:
        """The 1-based line number of the entry at ``position``."""
        return self._lines[position] if self._lines is not None else position + 2

    def __reduce__(self) -> tuple[Any, ...]:  # an open file does not cross processes
        return (
            _rebuild,
            (self.path, self.file, self._offsets, self._lines),
        )

    def _open(self) -> IO[bytes]:
        if self._stream is None:
            self._stream = self.path.open("rb")
            weakref.finalize(self, self._stream.close)
        return self._stream

    def _parse(self, position: int, text: bytes) -> DatasetEntry:
        try:
            entry = DatasetEntry.model_validate_json(text)
        except ValidationError:
            raise DatasetError(
                [
                    DatasetProblem(
                        file=self.file,
                        location=f"entries[{position}]",
                        line=self.line_of(position),
                        message="the line changed after the dataset was loaded",
                        hint="load the dataset again",
                    )
                ]
            ) from None
        return with_default_name(entry, position, copy=False)


def _rebuild(path: Path, file: str, offsets: array[int], lines: array[int] | None) -> JsonlEntries:
    return JsonlEntries(path, file=file, offsets=offsets, lines=lines)


def load_jsonl_dataset(path: str | os.PathLike[str], *, file: str | None = None) -> Dataset:
    """Read and check a JSONL dataset file, keeping only where each entry's line starts.

    Args:
        path: The ``.evaltrace.jsonl`` file.
        file: How problems name it; ``path`` as given by default.

    Returns:
        The dataset; its ``entries`` are a :class:`JsonlEntries`.

    Raises:
        DatasetError: Every problem of the file, each with its line: a line that is not
            JSON or not an object, a first line that is not a header or a second header, an
            invalid header or entry, duplicate entry names, no entry.
    """
    location = Path(path)
    name = os.fspath(path) if file is None else file
    reader = _Reader(name)
    try:
        with location.open("rb") as stream:
            reader.read(stream)
    except FileNotFoundError:
        raise DatasetError(
            [
                DatasetProblem(
                    file=name,
                    message="no such file",
                    hint=f"check the path (relative paths start from {os.getcwd()})",
                    missing="file",
                )
            ]
        ) from None
    except IsADirectoryError:
        raise DatasetError(
            [DatasetProblem(file=name, message="is a folder, not a dataset file")]
        ) from None
    except OSError as exc:
        raise DatasetError(
            [DatasetProblem(file=name, message=f"cannot be read: {exc.strerror or exc}")]
        ) from None
    return reader.dataset(location)


class _Reader:
    """One pass over a JSONL dataset's lines: offsets, names seen, problems."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[DatasetProblem] = []
        self.header: dict[str, Any] | None = None
        self.header_line = 0
        self.evaluators: list[EvaluatorSpec] | None = []
        self.offsets = array("q")
        self.lines: array[int] | None = None
        self.names = SeenNames()
        self.suspects: set[str] = set()  # names perhaps seen twice, confirmed by a second pass
        self.stored: bool | None = None

    def read(self, stream: IO[bytes]) -> None:
        offset = 0
        number = 0
        for raw in stream:
            number += 1
            start, offset = offset, offset + len(raw)
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if not raw.strip():
                continue
            data = self._parse(raw, number)
            if self.header is None and not self.header_line:
                self._read_header(data, number)
                continue
            if self._is_header(data):
                self._problem(
                    number,
                    f"a second header (the header is line {self.header_line or 1}): only the "
                    "first line holds the dataset's name, runnable and evaluators",
                    hint="move its keys into the first line, or make this line an entry",
                )
                continue
            self._read_entry(data, number, start)
        self.offsets.append(offset)
        if self.suspects:
            self._report_duplicates(stream)
            self.problems.sort(key=lambda problem: problem.line or 0)

    def dataset(self, path: Path) -> Dataset:
        if self.header is None and not self.header_line:
            self._problem(
                None, "the file is empty", expected="a header line, then one entry per line"
            )
        elif len(self.offsets) <= 1:
            self.problems.append(
                DatasetProblem(
                    file=self.file,
                    location="entries",
                    message="a dataset needs at least one entry",
                    expected="one entry per line after the header",
                )
            )
        if self.problems:
            raise DatasetError(self.problems)
        scope = ValidationScope(self.file, path)
        dataset = Dataset.model_validate(
            {**(self.header or {}), "entries": [_PLACEHOLDER]}, context=scope.context()
        )
        # Absolute: the entries may be read from another folder (a Ray worker's).
        dataset.entries = JsonlEntries(
            path.absolute(), file=self.file, offsets=self.offsets, lines=self.lines
        )
        return dataset

    # -- one line ---------------------------------------------------------------------------

    def _problem(self, line: int | None, message: str, **more: Any) -> None:
        self.problems.append(DatasetProblem(file=self.file, message=message, line=line, **more))

    def _parse(self, raw: bytes, number: int) -> object:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._problem(
                number,
                "the line is not valid UTF-8",
                column=exc.start + 1,
                found=f"the byte 0x{raw[exc.start]:02x}",
                hint="save the file as UTF-8",
            )
            return _UNREAD
        try:
            data, duplicated = parse_json(text)
        except json.JSONDecodeError as exc:
            self._problem(number, f"not valid JSON: {exc.msg}", column=exc.colno)
            return _UNREAD
        except RecursionError:
            self._problem(number, "the data nests too deeply to be read", hint="flatten it")
            return _UNREAD
        for key in duplicated:
            self._problem(
                number,
                f"the key {key!r} appears twice in an object of this line",
                hint="keep one; the later one would silently replace the first",
            )
        return _UNREAD if duplicated else data

    def _is_header(self, data: object) -> bool:
        return (
            isinstance(data, dict)
            and bool(data.keys() & _HEADER_ONLY)
            and not data.keys() & _ENTRY_ONLY
        )

    def _read_header(self, data: object, number: int) -> None:
        self.header_line = number
        if data is _UNREAD:
            self.header = {}
            return
        if not isinstance(data, dict):
            self._problem(
                number,
                "the first line is the header: an object",
                expected='an object such as {"name": ..., "runnable": ..., "evaluators": [...]}',
                found=describe_value(data),
            )
            self.header = {}
            return
        if data.keys() & _ENTRY_ONLY and not data.keys() & _HEADER_ONLY:
            self._problem(
                number,
                "the first line is an entry, but a JSONL dataset starts with a header line",
                hint='add a first line with the dataset\'s keys, such as {"runnable": '
                '"app.py:run", "evaluators": ["ExactMatch"]} (at least {})',
            )
            self.header = {}
            self._read_entry(data, number, 0)
            return
        header = dict(data)
        if "entries" in header:
            del header["entries"]
            self._problem(
                number,
                "the header holds no entries: in a JSONL dataset each entry is a line of its own",
                hint="write each entry of 'entries' on a line after the header",
            )
        self.header = header
        self._check_header(header, number)

    def _check_header(self, header: dict[str, Any], number: int) -> None:
        scope = ValidationScope(self.file)
        try:
            Dataset.model_validate({**header, "entries": [_PLACEHOLDER]}, context=scope.context())
        except ValidationError as exc:
            found = problems_from_errors(exc.errors(include_url=False), file=self.file)
            self.problems += [dataclasses.replace(problem, line=number) for problem in found]
        except RecursionError:
            self._problem(number, "the data nests too deeply to be read", hint="flatten it")
        self.problems += [dataclasses.replace(problem, line=number) for problem in scope.problems]
        raw = header.get("evaluators", [])
        try:
            self.evaluators = [EvaluatorSpec.model_validate(item) for item in raw]
        except (ValidationError, TypeError, RecursionError):
            self.evaluators = None

    def _read_entry(self, data: object, number: int, start: int) -> None:
        index = len(self.offsets)
        self.offsets.append(start)
        if self.lines is None and number != index + 2:
            self.lines = array("q", range(2, index + 2))
        if self.lines is not None:
            self.lines.append(number)
        if data is _UNREAD:
            return
        if not isinstance(data, dict):
            self.problems.append(
                DatasetProblem(
                    file=self.file,
                    location=f"entries[{index}]",
                    line=number,
                    message="an entry is an object",
                    expected='an object with "entry_kwargs" (or "trace")',
                    found=describe_value(data),
                )
            )
            return
        given = data.get("name")
        if given is None or isinstance(given, str):
            self._check_name(index, given, number)
        try:
            entry = DatasetEntry.model_validate(data)
        except ValidationError as exc:
            errors = [
                {**error, "loc": ("entries", index, *error["loc"])}
                for error in exc.errors(include_url=False)
            ]
            found = problems_from_errors(errors, file=self.file)  # type: ignore[arg-type]
            self.problems += [dataclasses.replace(problem, line=number) for problem in found]
            return
        except RecursionError:
            self._problem(number, "the data nests too deeply to be read", hint="flatten it")
            return
        found = entry_problems(self.file, index, entry, self.evaluators)
        self.problems += [dataclasses.replace(problem, line=number) for problem in found]
        if self.stored is None:
            self.stored = entry.stored
        elif entry.stored != self.stored:
            self.problems.append(
                DatasetProblem(
                    file=self.file,
                    location=f"entries[{index}]",
                    line=number,
                    message="entries scored from stored traces ('trace') and entries that run "
                    "the runnable ('entry_kwargs') are mixed in one dataset",
                    hint="put the entries with 'trace' in a dataset file of their own",
                )
            )
            self.stored = entry.stored  # reported once, where the mix starts

    def _check_name(self, index: int, given: str | None, number: int) -> None:
        name = str(index) if given is None else given
        if self.names.add(name):
            self.suspects.add(name)

    def _report_duplicates(self, stream: IO[bytes]) -> None:
        """Read the entries' names again, to name each duplicate and its first entry."""
        first: dict[str, int] = {}
        for index in range(len(self.offsets) - 1):
            stream.seek(self.offsets[index])
            try:
                data = json.loads(stream.read(self.offsets[index + 1] - self.offsets[index]))
            except (ValueError, RecursionError):
                continue  # reported already
            given = data.get("name") if isinstance(data, dict) else 0
            if given is not None and not isinstance(given, str):
                continue
            name = str(index) if given is None else given
            if name not in self.suspects:
                continue
            other = first.setdefault(name, index)
            if other != index:
                self.problems.append(
                    DatasetProblem(
                        file=self.file,
                        location=f"entries[{index}].name",
                        line=self.lines[index] if self.lines is not None else index + 2,
                        message=f"duplicate entry name {name!r}, also the name of entries[{other}]",
                        hint="give each entry a unique name",
                    )
                )


class SeenNames:
    """The entry names seen, as 64-bit hashes in an open-addressed table.

    At most 32 bytes a name, where a set of the names takes about 100: a 10**6-entry JSONL
    dataset is checked in flat memory (bench_dataset_memory.py). Two names with one hash
    are only suspects, confirmed by reading the names again.
    """

    def __init__(self) -> None:
        self._table = array("q", bytes(8 * 1024))
        self._count = 0

    def add(self, name: str) -> bool:
        """Add ``name``; whether a name with its hash was added before."""
        key = hash(name) or 1  # 0 marks an empty slot
        table = self._table
        mask = len(table) - 1
        slot = key & mask
        while table[slot]:
            if table[slot] == key:
                return True
            slot = (slot + 1) & mask
        table[slot] = key
        self._count += 1
        if self._count * 2 > len(table):
            self._grow()
        return False

    def _grow(self) -> None:
        old = self._table
        table = self._table = array("q", bytes(16 * len(old)))
        mask = len(table) - 1
        for key in old:
            if key:
                slot = key & mask
                while table[slot]:
                    slot = (slot + 1) & mask
                table[slot] = key


_UNREAD: Final = object()  # a line whose problem is already reported


def with_entry_lines(dataset: Dataset, problems: Sequence[DatasetProblem]) -> list[DatasetProblem]:
    """``problems``, those about an entry of a JSONL dataset given the entry's line.

    Problems found after loading (an argument the runnable does not take, an evaluator that
    cannot be built) name the entry by its place, ``entries[10].entry_kwargs``; in a JSONL
    file its line says where it is.
    """
    entries = dataset.entries
    if not isinstance(entries, JsonlEntries):
        return list(problems)
    located = []
    for problem in problems:
        match = _ENTRY_AT.match(problem.location)
        if (
            match is not None
            and problem.line is None
            and problem.file == entries.file
            and int(match.group(1)) < len(entries)
        ):
            problem = dataclasses.replace(problem, line=entries.line_of(int(match.group(1))))
        located.append(problem)
    return located


def jsonl_lines(header: dict[str, Any], entries: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The lines of a JSONL dataset file (each ending with a newline), from its data.

    Args:
        header: Every key of the dataset but ``entries``.
        entries: Each entry's data.
    """
    yield json.dumps(header, ensure_ascii=False) + "\n"
    for entry in entries:
        yield json.dumps(entry, ensure_ascii=False) + "\n"
