r"""JSONL datasets, ``*.evaltrace.jsonl``: a header line, then one entry per line, read lazily.

Line 1 holds everything a dataset file holds but its entries (``name``, ``runnable``,
``evaluators``, ``epochs``, ``reducer``, ``$schema``), as one JSON object; each further line
holds one entry. Blank lines are skipped. The file is read once, line by line, when it is
loaded (:func:`load_jsonl_dataset`): every line is checked as the JSON and YAML forms are (and
every problem reported at once, each with its line), and where every 64th entry's line starts
is kept, nothing more. Afterwards an entry is parsed again from its line when it is asked for
(:class:`JsonlEntries`), so a run over a dataset of 10**6 entries never holds them all, and a
shard (``--shard K/N``) parses only its own entries' lines while it runs.

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

import numpy as np
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
    "LazyEntries",
    "NameHashes",
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
_EVERY: Final = 64
"""Where one entry in this many starts is kept: 8 bytes an entry would be 7.6 MiB of the
16 MiB a 10**6-entry run may add over a 10**5-entry one (goal 1.2x, bench/README.md,
bench_dataset_memory.py); reaching an entry reads at most this many lines past the one kept
before it."""


def is_jsonl(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a JSONL dataset file (its suffix is ``.jsonl``)."""
    return Path(path).suffix.lower() == JSONL_SUFFIX


class LazyEntries(Sequence[DatasetEntry]):
    """Entries kept as their place in a text, each read when asked for.

    Args:
        count: How many entries there are.
    """

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

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


class JsonlEntries(LazyEntries):
    """The entries of a JSONL dataset file, each parsed from its line when asked for.

    Holds where every 64th entry's line starts (and its line number, when blank lines make
    line numbers differ from the positions), never the entries: an entry is reached by
    reading on from the one kept before it, or from the entry read last. Each entry asked
    for is a new object; an omitted name is its position, as in the other forms.

    Args:
        path: The file, checked by :func:`load_jsonl_dataset`.
        file: How problems name it.
        count: How many entries the file holds.
        marks: Where the line of entry ``0``, ``64``, ``128``, ... starts.
        lines: The line number of each of those entries, or ``None`` when entry ``i`` is on
            line ``i + 2``.
    """

    def __init__(
        self,
        path: Path,
        *,
        file: str,
        count: int,
        marks: array[int],
        lines: array[int] | None,
    ) -> None:
        self.path = path
        """The dataset file."""
        self.file = file
        """How problems name the file."""
        super().__init__(count)
        self._marks = marks
        self._lines = lines
        self._stream: IO[bytes] | None = None
        self._next = (-1, 0, 0)  # the entry after the one read last: position, offset, line

    def _entry(self, position: int) -> DatasetEntry:
        stream = self._open()
        after, offset, line = self._next
        skip = position - after
        if not 0 <= skip <= position % _EVERY:  # read on from the mark before: it is nearer
            offset, line = self._mark_before(position)
            skip = position % _EVERY
        stream.seek(offset)
        number, text, offset = _next_entry_line(stream, line, skip, offset)
        if not text:
            raise self._changed(position)
        self._next = (position + 1, offset, number)
        return self._parse(position, text)

    def __iter__(self) -> Iterator[DatasetEntry]:
        if not len(self):
            return
        with self.path.open("rb") as stream:
            offset, line = self._mark_before(0)
            stream.seek(offset)
            for position in range(len(self)):
                line, text, offset = _next_entry_line(stream, line, 0, offset)
                if not text:
                    raise self._changed(position)
                yield self._parse(position, text)

    def line_of(self, position: int) -> int:
        """The 1-based line number of the entry at ``position``."""
        if self._lines is None:
            return position + 2
        offset, line = self._mark_before(position)
        stream = self._open()
        stream.seek(offset)
        number, _, _ = _next_entry_line(stream, line, position % _EVERY, offset)
        return number

    def _mark_before(self, position: int) -> tuple[int, int]:
        """The mark at or before ``position``: where its line starts, the line number before."""
        mark = position // _EVERY
        line = self._lines[mark] if self._lines is not None else mark * _EVERY + 2
        return self._marks[mark], line - 1

    def __reduce__(self) -> tuple[Any, ...]:  # an open file does not cross processes
        return (
            _rebuild,
            (self.path, self.file, len(self), self._marks, self._lines),
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
            raise self._changed(position) from None
        return with_default_name(entry, position, copy=False)

    def _changed(self, position: int) -> DatasetError:
        self._next = (-1, 0, 0)
        try:
            line: int | None = self.line_of(position)
        except OSError:
            line = None
        return DatasetError(
            [
                DatasetProblem(
                    file=self.file,
                    location=f"entries[{position}]",
                    line=line,
                    message="the line changed after the dataset was loaded",
                    hint="load the dataset again",
                )
            ]
        )


def _rebuild(
    path: Path, file: str, count: int, marks: array[int], lines: array[int] | None
) -> JsonlEntries:
    return JsonlEntries(path, file=file, count=count, marks=marks, lines=lines)


def _next_entry_line(
    stream: IO[bytes], line: int, skip: int, offset: int
) -> tuple[int, bytes, int]:
    """The next entry's line from ``stream``, past ``skip`` entries' lines and blank lines.

    Args:
        stream: The file, at ``offset``, the start of the line after line ``line``.
        line: The number of the line before.
        skip: How many entries' lines to pass first.
        offset: Where ``stream`` is.

    Returns:
        The entry's line number, its text (empty at the end of the file), and where the line
        after it starts.
    """
    while True:
        raw = stream.readline()
        if not raw:
            return line + 1, b"", offset
        line += 1
        offset += len(raw)
        if not raw.strip():
            continue
        if skip:
            skip -= 1
            continue
        return line, raw, offset


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
        self.count = 0
        self.marks = array("q")
        self.lines: array[int] | None = None
        self.names = NameHashes()
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
        suspects = self.names.repeated()
        self.names = NameHashes()
        if suspects:
            self._report_duplicates(stream, suspects)
            self.problems.sort(key=lambda problem: problem.line or 0)

    def dataset(self, path: Path) -> Dataset:
        if self.header is None and not self.header_line:
            self._problem(
                None, "the file is empty", expected="a header line, then one entry per line"
            )
        elif not self.count:
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
            path.absolute(), file=self.file, count=self.count, marks=self.marks, lines=self.lines
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
        index = self.count
        self.count += 1
        if self.lines is None and number != index + 2:  # the marks so far are on line i + 2
            self.lines = array("q", range(2, index + 2, _EVERY))
        if not index % _EVERY:
            self.marks.append(start)
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
        self.names.add(str(index) if given is None else given)

    def _report_duplicates(self, stream: IO[bytes], suspects: set[int]) -> None:
        """Read the entries' names again, to name each duplicate and its first entry.

        Args:
            stream: The file.
            suspects: The hashes of the names perhaps seen twice (two names may share one).
        """
        first: dict[str, int] = {}
        offset, line = self.marks[0], (self.lines[0] if self.lines is not None else 2) - 1
        stream.seek(offset)
        index = -1
        while index + 1 < self.count:
            line, raw, offset = _next_entry_line(stream, line, 0, offset)
            if not raw:
                break
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                index += 1
                continue  # reported already
            if self._is_header(data):
                continue  # a second header, reported already: not an entry
            index += 1
            given = data.get("name") if isinstance(data, dict) else 0
            if given is not None and not isinstance(given, str):
                continue
            name = str(index) if given is None else given
            if hash(name) not in suspects:
                continue
            other = first.setdefault(name, index)
            if other != index:
                self.problems.append(
                    DatasetProblem(
                        file=self.file,
                        location=f"entries[{index}].name",
                        line=line,
                        message=f"duplicate entry name {name!r}, also the name of entries[{other}]",
                        hint="give each entry a unique name",
                    )
                )


class NameHashes:
    """The entry names seen, as their 64-bit hashes, to find the repeated ones at the end.

    8 bytes a name, sorted in place once all are in and then let go: a hash table of them
    took 16-24 bytes a name, and its last growth alone raised a 10**6-entry run's peak by
    13 MiB (bench/README.md, bench_dataset_memory.py). Two names with one hash are only
    suspects, confirmed by reading the names again.

    Example:
        >>> names = NameHashes()
        >>> for name in ["a", "b", "a"]:
        ...     names.add(name)
        >>> names.repeated() == {hash("a")}
        True
    """

    def __init__(self) -> None:
        self._hashes = array("q")

    def add(self, name: str) -> None:
        """Add ``name``."""
        self._hashes.append(hash(name))

    def repeated(self) -> set[int]:
        """The hashes added more than once (the names are sorted by hash in the process)."""
        hashes = np.frombuffer(self._hashes, dtype=np.int64)  # a view: sorted in place
        hashes.sort()
        return set(hashes[1:][hashes[1:] == hashes[:-1]].tolist())


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
