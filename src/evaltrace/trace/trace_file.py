"""Reading a trace file one trace at a time, reporting the lines it cannot read.

:func:`read_traces` reads a file of any shape :func:`~evaltrace.load_traces` reads, but
instead of building one tree of every span and raising at the first bad line it gives a
:class:`TraceFile`: the traces, one :class:`StoredTrace` per trace id in the order the file
first mentions them, each with the lines of it that could not be read, and the lines that
could be tied to no trace.

Only a regular file is opened (a named pipe, a device or a folder is refused before it is
opened, so that nothing waits on it); a file of which no span can be read is refused, naming
what it looks like instead (a dataset file, a saved run, binary data) or its first problem.
A trace whose parent links go round in a loop is read, broken at the loop's earliest span,
with the loop as a problem: it is incomplete.

A file of evaltrace's JSON lines (one span per line, as ``EVALTRACE_TRACE_FILE``,
``save_traces`` and a results folder's ``traces.jsonl`` hold) is read in two passes, so that
a file of millions of spans is never in memory: the first finds each line's trace id from its
first bytes and keeps only where the line is; iterating then reads each trace's lines back,
builds its tree, and lets it go. Lines of other shapes (an OTLP-JSON batch, a Phoenix page,
a pretty-printed document) hold spans of several traces together; they are read into span
records at once and kept until their traces are given out.

Example:
    >>> traces = read_traces("spans.jsonl")  # doctest: +SKIP
    >>> for stored in traces:  # doctest: +SKIP
    ...     print(stored.trace_id, len(stored.roots), stored.problems)
"""

from __future__ import annotations

import json
import os
import re
import stat
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Final

from pydantic_core import ValidationError

from evaltrace.capture.codec import read_json
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import NotATraceFileError, TraceFormatError
from evaltrace.trace._fields import Invalid
from evaltrace.trace._span_json import (
    TOO_DEEP,
    ReadSpan,
    conflict_message,
    cycle_message,
    not_json,
    own_line_validator,
    read_line_by_fields,
    read_span_object,
    same_span,
    span_objects,
    unreadable,
)
from evaltrace.trace.spans import SpanRecord
from evaltrace.trace.tree import (
    ObservationNode,
    ParentCycle,
    build_from_records,
    unlink_unshared,
)

__all__ = ["StoredTrace", "TraceFile", "TraceFileProblem", "read_traces"]

# A line as save_traces and the JSONL exporter write it opens with its trace id.
_OWN_LINE: Final = re.compile(rb'\s*\{"trace_id":\s*"([0-9a-fA-F]{32})"')
# Any trace id a line mentions, to tie a line that is not valid JSON to its trace.
_ANY_TRACE_ID: Final = re.compile(rb'"(?:trace_id|traceId)"\s*:\s*"([0-9a-fA-F]{32})"')
_BOM: Final = b"\xef\xbb\xbf"
_LINE_FIELDS: Final = 4  # offset, length, first line number, lines
# The start of a line as encode_span_document writes it: no space, the id's 32 hex digits, a quote.
_COMPACT: Final = re.compile(rb'\{"trace_id":"([0-9a-fA-F]{32})"')
_CHUNK_BYTES: Final = 1 << 20  # how much of a file the first pass reads at once
_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)
_SAMPLE_BYTES: Final = 64 * 1024  # how much of a file holding no span is read to tell what it is
_DATASET_SUFFIXES: Final = (".evaltrace.json", ".evaltrace.yaml", ".evaltrace.yml")
# The keys that tell a dataset file (entries) and a saved run (run_id, entries), JSON or YAML.
_ENTRIES_KEY: Final = re.compile(r'(?:^|[{,])\s*"?entries"?\s*:', re.MULTILINE)
_RUN_ID_KEY: Final = re.compile(r'"run_id"\s*:')


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceFileProblem:
    """A line of a trace file (or a part of it) that could not be read.

    Example:
        >>> print(TraceFileProblem(place="runs.jsonl, line 3", line=3, message="not JSON"))
        runs.jsonl, line 3: not JSON
    """

    place: str
    """Where: the file and line, and the span's place within the line when it holds many."""
    line: int
    """The line number, from 1."""
    message: str
    """What is wrong, and what was expected."""
    trace_id: str | None = None
    """The trace (32 hex digits) the line belongs to, when that could be told."""

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredTrace:
    """One trace read from a file: its roots and the lines of it that could not be read."""

    trace_id: str
    """The trace id, 32 hex digits."""
    roots: list[ObservationNode]
    """The trace tree, as :func:`~evaltrace.trace.build_trace` builds it (empty when none of
    its spans could be read)."""
    problems: tuple[TraceFileProblem, ...] = ()
    """Lines holding spans of this trace that could not be read, and loops of parent links
    (each also in :attr:`cycles`); the trace is then incomplete."""
    cycles: tuple[ParentCycle, ...] = ()
    """Loops of the parent links of this trace's spans (a damaged file's), each broken at its
    earliest span in :attr:`roots`. Such a trace cannot be written out and read back."""

    @property
    def complete(self) -> bool:
        """Whether every line of this trace was read."""
        return not self.problems

    def __del__(self) -> None:
        # A trace scored and let go is freed at once, not by the garbage collector
        # (bench_stored.py, bench/README.md), when nothing else refers to it. One whose
        # making failed has no roots.
        if hasattr(self, "roots"):
            unlink_unshared(self.roots)


_new_stored = object.__new__
_set_trace_id = StoredTrace.__dict__["trace_id"].__set__
_set_roots = StoredTrace.__dict__["roots"].__set__
_set_problems = StoredTrace.__dict__["problems"].__set__
_set_cycles = StoredTrace.__dict__["cycles"].__set__


class TraceFile:
    """A trace file, read trace by trace; made by :func:`read_traces`.

    Iterating reads the file again each time (it must still be there, unchanged).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        """The file."""
        self.problems: list[TraceFileProblem] = []
        """Lines that could be tied to no trace (not JSON, and naming no trace id)."""
        self._lines: dict[bytes, array[int]] = {}
        self._read: dict[bytes, list[tuple[ReadSpan, str, int]]] = {}
        self._trace_problems: dict[bytes, list[TraceFileProblem]] = {}
        self._order: dict[bytes, None] = {}
        self._whole = False  # whether the file was read as one pretty-printed document
        self._index()

    def __len__(self) -> int:
        """The number of traces."""
        return len(self._order)

    @property
    def trace_ids(self) -> list[str]:
        """The trace ids, in the order the file first mentions them."""
        return [key.decode("ascii") for key in self._order]

    def __iter__(self) -> Iterator[StoredTrace]:
        """Yield each trace, in the order the file first mentions them."""
        with open_trace_file(self.path) as file:
            for key in self._order:
                yield self._trace(file, key)

    def get(self, trace_id: str) -> StoredTrace | None:
        """The trace ``trace_id`` (32 hex digits, any case), read now; ``None`` if absent.

        Example:
            >>> read_traces("runs.jsonl").get("5b8efff798038103d269b633813fc60c")  # doctest: +SKIP
        """
        key = trace_id.strip().lower().encode("ascii", "replace")
        if key not in self._order:
            return None
        with open_trace_file(self.path) as file:
            return self._trace(file, key)

    def __repr__(self) -> str:
        return f"TraceFile({self.path!r}, traces={len(self)}, problems={len(self.problems)})"

    # --- the first pass: where each trace's lines are --------------------------------------

    def _index(self) -> None:
        with open_trace_file(self.path) as file:
            self._find_lines(file)
        if not self._order and self.problems:
            raise _nothing_read(self.path, self.problems[0], whole=self._whole)

    def _find_lines(self, file: BinaryIO) -> None:
        offset = 0  # where ``buffer`` starts in the file
        number = 0  # the lines before ``buffer``
        buffer = b""
        ended = False
        while not ended:
            # A line longer than a chunk is read on in reads as long as what is held, so
            # that it is scanned again only as often as what is held doubles.
            chunk = file.read(max(_CHUNK_BYTES, len(buffer)))
            ended = not chunk
            buffer = buffer + chunk if buffer else chunk
            unended = ended and bool(buffer) and not buffer.endswith(b"\n")
            if unended:
                buffer += b"\n"  # the last line, unended: read as if it were, but not its end
            position = 0
            size = len(buffer)
            find = buffer.find
            follows = buffer.startswith
            while position < size:
                # The lines of one trace written together, as encode_span_document writes them, told
                # by the first one's prefix, which each next line repeats: 0.66-0.92x the
                # first pass's CPU line by line (median 0.76x, 8 rounds in one process;
                # bench_stored.py's file).
                first = _COMPACT.match(buffer, position)
                if first is not None:
                    prefix = first.group()
                    start = position
                    lines = 0
                    while True:
                        end = find(b"\n", position) + 1
                        if not end:
                            break  # the line goes on in the next chunk
                        lines += 1
                        position = end
                        if not follows(prefix, position):
                            break
                    if lines:
                        length = position - start - (unended and position == size)
                        self._lines_of_trace(first.group(1).lower()).extend(
                            (offset + start, length, number + 1, lines)
                        )
                        number += lines
                    if not end:
                        break
                    continue
                end = find(b"\n", position) + 1
                if not end:
                    break  # the line goes on in the next chunk
                number += 1
                line = buffer[position : end - (unended and end == size)]
                if self._read_other(file, line, offset + position, number):
                    return
                position = end
            offset += position
            buffer = buffer[position:]

    def _read_other(self, file: BinaryIO, line: bytes, start: int, number: int) -> bool:
        """File one line not told by the prefix of its run; ``True`` when the file was read."""
        length = len(line)
        if number == 1 and line.startswith(_BOM):
            line = line[len(_BOM) :]
            start += len(_BOM)
            length -= len(_BOM)
        own = _OWN_LINE.match(line)
        if own is not None:
            self._lines_of_trace(own.group(1).lower()).extend((start, length, number, 1))
            return False
        stripped = line.strip()
        if not stripped:
            return False
        if stripped in (b"{", b"[") and not self._order and not self.problems:
            # A lone bracket opens a pretty-printed document (an OTLP-JSON export,
            # a page of spans), which is read whole.
            file.seek(0)
            self._whole = True
            self._read_whole(file.read(), number)
            return True
        self._read_line(line, number)
        return False

    def _lines_of_trace(self, key: bytes) -> array[int]:
        """Where the lines of trace ``key`` (lower-case hex) are, kept as they are found."""
        lines = self._lines.get(key)
        if lines is None:
            lines = self._lines[key] = array("q")
            self._order[key] = None
        return lines

    def _read_whole(self, data: bytes, first: int) -> None:
        """Read a file holding one pretty-printed document."""
        place = f"{self.path}, line {first}"
        try:
            document = read_json(data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            self._problem(first, place, f"not UTF-8 text (invalid byte at offset {exc.start})")
            return
        except json.JSONDecodeError as exc:
            self._problem(
                exc.lineno,
                f"{self.path}, line {exc.lineno}",
                not_json(exc),
            )
            return
        except (RecursionError, ValueError) as exc:
            self._problem(first, place, unreadable(exc))
            return
        self._read_document(document, place, first, b"")

    def _read_line(self, line: bytes, number: int) -> None:
        """Read a line of another shape at once; or note why it cannot be read."""
        place = f"{self.path}, line {number}"
        try:
            document = read_json(line)
        except json.JSONDecodeError as exc:
            message = not_json(exc)
            self._problem(number, place, message, line)
            return
        except UnicodeDecodeError as exc:
            self._problem(number, place, f"not UTF-8 text (invalid byte at {exc.start})", line)
            return
        except (RecursionError, ValueError) as exc:
            self._problem(number, place, unreadable(exc), line)
            return
        self._read_document(document, place, number, line)

    def _read_document(self, document: Any, where: str, number: int, line: bytes) -> None:
        for place, item in span_objects(document, where):
            try:
                read = read_span_object(item, place)
            except Invalid as exc:
                self._problem(number, place, str(exc), line)
                continue
            except RecursionError:
                self._problem(number, place, f"the span is {TOO_DEEP}.", line)
                continue
            for span, span_place in read:
                key = f"{span[0].trace_id:032x}".encode("ascii")
                self._order.setdefault(key, None)
                self._read.setdefault(key, []).append((span, span_place, number))

    def _problem(self, number: int, place: str, message: str, line: bytes = b"") -> None:
        """Note a problem, under each trace the line names (or the file's when none)."""
        keys = dict.fromkeys(match.lower() for match in _ANY_TRACE_ID.findall(line))
        if not keys:
            self.problems.append(TraceFileProblem(place=place, line=number, message=message))
            return
        for key in keys:
            self._order.setdefault(key, None)
            self._trace_problems.setdefault(key, []).append(
                TraceFileProblem(
                    place=place, line=number, message=message, trace_id=key.decode("ascii")
                )
            )

    # --- the second pass: one trace -----------------------------------------------------------

    def _trace(self, file: IO[bytes], key: bytes) -> StoredTrace:
        trace_id = key.decode("ascii")
        problems = list(self._trace_problems.get(key, ()))
        spans = _Spans(self.path)
        for span, place, number in self._read.get(key, ()):
            conflict = spans.add(span, place, number)
            if conflict:
                problems.append(_conflict(place, number, conflict, trace_id))
        lines = self._lines.get(key)
        if lines is not None:
            self._read_lines(file, lines, trace_id, spans, problems)
        roots, cycles = build_from_records(spans.records, spans.values())
        if cycles:
            where = {span_key: position for position, span_key in enumerate(spans.records)}
            for cycle in cycles:
                first = cycle.spans[0]
                position = where[(first.trace_id, first.span_id)]
                problems.append(
                    TraceFileProblem(
                        place=spans.place((first.trace_id, first.span_id), position),
                        line=spans.numbers[position],
                        message=cycle_message(cycle),
                        trace_id=trace_id,
                    )
                )
        # Made through its slots, not its frozen __init__: 0.6 us instead of 1.5 us a trace
        # (timeit), for every trace of a file.
        stored: StoredTrace = _new_stored(StoredTrace)
        _set_trace_id(stored, trace_id)
        _set_roots(stored, roots)
        _set_problems(stored, tuple(problems))
        _set_cycles(stored, tuple(cycles))
        return stored

    def _read_lines(
        self,
        file: IO[bytes],
        lines: array[int],
        trace_id: str,
        spans: _Spans,
        problems: list[TraceFileProblem],
    ) -> None:
        """Read the lines of trace ``trace_id`` at ``lines`` into ``spans``."""
        # Each line straight through the validator of its usual shape, its span kept unless
        # its ids are taken, its place in the file written out only for an error: 6% less
        # to read a trace than with a place and a pair per line (bench_stored.py,
        # bench/README.md). Other lines are read field by field.
        validate = own_line_validator()
        records = spans.records
        numbers = spans.numbers
        for first, texts, ended in _blocks_of(file, lines):
            last = len(texts) - 1
            for at, text in enumerate(texts):
                try:
                    record = validate(text)
                except ValidationError:
                    number = first + at
                    place = f"{self.path}, line {number}"
                    line = text + b"\n" if at < last or ended else text
                    read = self._own_line(line, place, number, trace_id, problems)
                    if read is not None:
                        conflict = spans.add(read, None, number)
                        if conflict:
                            problems.append(_conflict(place, number, conflict, trace_id))
                    continue
                span_key = (record.trace_id, record.span_id)
                if span_key not in records:
                    records[span_key] = record
                    numbers.append(first + at)
                    continue
                number = first + at
                conflict = spans.add((record, ()), None, number)
                if conflict:
                    place = f"{self.path}, line {number}"
                    problems.append(_conflict(place, number, conflict, trace_id))

    def _own_line(
        self,
        text: bytes,
        place: str,
        number: int,
        trace_id: str,
        problems: list[TraceFileProblem],
    ) -> ReadSpan | None:
        """Read one of evaltrace's own JSON lines; a problem is noted and gives ``None``."""
        message: str
        try:
            return read_line_by_fields(text)
        except json.JSONDecodeError as exc:
            message = not_json(exc)
        except UnicodeDecodeError as exc:
            message = f"not UTF-8 text (invalid byte at {exc.start})"
        except Invalid as exc:
            message = str(exc)
        except RecursionError:
            message = f"the span is {TOO_DEEP}."
        except ValueError as exc:
            message = unreadable(exc)
        problems.append(
            TraceFileProblem(place=place, line=number, message=message, trace_id=trace_id)
        )
        return None


class _Spans:
    """The spans of one trace, each kept once, with where in the file each one is."""

    __slots__ = ("named", "numbers", "path", "places", "records")

    def __init__(self, path: str) -> None:
        self.path = path
        self.records: dict[tuple[int, int], SpanRecord] = {}
        """Each span under its ids, in the order they were read."""
        self.numbers: list[int] = []
        """The line of each span, in the order of :attr:`records`."""
        self.places: dict[tuple[int, int], str] = {}
        """Where a span is, for one that is not alone on its line (an OTLP batch's)."""
        self.named: dict[tuple[int, int], tuple[WrapRecord, ...]] = {}
        """The values the file stored beside a span, for those beside which it stored some."""

    def add(self, span: ReadSpan, place: str | None, number: int) -> str:
        """Keep ``span`` (at ``place``, else alone on line ``number``) unless its ids are taken.

        Returns:
            An empty string when it was kept or is a copy of the span kept under its ids;
            else why it cannot be read (naming where the other span is).
        """
        record, named = span
        key = (record.trace_id, record.span_id)
        first = self.records.get(key)
        if first is None:
            self.records[key] = record
            self.numbers.append(number)
            if place is not None:
                self.places[key] = place
            if named:
                self.named[key] = named
            return ""
        if same_span((first, self.named.get(key, ())), span):
            return ""
        position = list(self.records).index(key)
        return conflict_message(record, self.place(key, position))

    def place(self, key: tuple[int, int], position: int) -> str:
        """Where the span kept under ``key`` (the ``position``-th kept) is in the file."""
        return self.places.get(key) or f"{self.path}, line {self.numbers[position]}"

    def values(self) -> list[WrapRecord]:
        """The values stored beside the spans, by time."""
        if not self.named:  # evaltrace's own lines store none
            return []
        values = [value for named in self.named.values() for value in named]
        values.sort(key=_timestamp)
        return values


def _timestamp(value: WrapRecord) -> int:
    return value.timestamp_ns


def _conflict(place: str, number: int, conflict: str, trace_id: str) -> TraceFileProblem:
    """A span found twice with other content, at ``place`` (the conflict names both)."""
    return TraceFileProblem(place=place, line=number, message=conflict, trace_id=trace_id)


def _blocks_of(file: IO[bytes], lines: array[int]) -> Iterator[tuple[int, list[bytes], bool]]:
    """Read back the lines at ``lines``, each stretch of lines that follow one another at once.

    ``lines`` holds (offset, length, first line number, lines) for each run of lines.

    Yields:
        The number of a stretch's first line, its lines without their newlines, and whether
        its last line ended with one (only the file's last line may not).
    """
    position = 0
    count = len(lines)
    while position < count:
        start = lines[position]
        end = start + lines[position + 1]
        last = position + _LINE_FIELDS
        while last < count and lines[last] == end:  # the next lines follow: read them too
            end += lines[last + 1]
            last += _LINE_FIELDS
        texts = _read_at(file, start, end - start).split(b"\n")
        ended = not texts[-1]
        if ended:
            texts.pop()
        yield lines[position + 2], texts, ended
        position = last


def _read_at(file: IO[bytes], start: int, size: int) -> bytes:
    """``size`` bytes of ``file`` from offset ``start`` (fewer at the file's end)."""
    if _PREAD is None:
        file.seek(start)
        return file.read(size)
    # One system call, past the file's buffer, which a seek empties: 5.2 us instead of
    # 7.1 us to read back a trace of 10 lines (bench_stored.py's file, timeit).
    descriptor = file.fileno()
    data = _PREAD(descriptor, size, start)
    while len(data) < size:  # a read cut short: read on, up to the file's end
        more = _PREAD(descriptor, size - len(data), start + len(data))
        if not more:
            break
        data += more
    return data


_PREAD: Final[Callable[[int, int, int], bytes] | None] = getattr(
    os, "pread", None
)  # not on Windows


def open_trace_file(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a trace file to read its bytes; anything but a regular file is refused unopened.

    A named pipe, a device or a folder could block the open or the reads forever: the path
    is checked before it is opened, and the file opened is checked again, in case the path
    was swapped meanwhile (it is opened without blocking, so that even then nothing waits).

    Raises:
        NotATraceFileError: The path is not a regular file; the message says what it is.
        OSError: The file cannot be opened (it does not exist, it may not be read).
    """
    name = os.fspath(path)
    _check_regular(name, os.stat(name).st_mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(name, flags)
    try:
        _check_regular(name, os.fstat(descriptor).st_mode)
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def _check_regular(name: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((kind for test, kind in _KINDS if test(mode)), "not a file")
    raise NotATraceFileError(
        f"{name} is {kind}, not a regular file: a trace file is a file of evaltrace's JSON "
        "lines, an OTLP-JSON export or Phoenix span JSON"
    )


def _nothing_read(path: str, first: TraceFileProblem, *, whole: bool) -> TraceFormatError:
    """The error for a file of which no span could be read, saying what it looks like."""
    no_span = f"{path}: no line of it is a span"
    text = _text_sample(path)
    if text is None:
        return NotATraceFileError(
            f"{no_span}; it holds binary data, not text ({_detail(path, first)})"
        )
    other = _other_evaltrace_file(path, text)
    if other is not None:  # where the file goes is all there is to say
        return NotATraceFileError(f"{no_span}; {other}")
    if whole:  # one document, damaged or holding no span: its first problem says which
        return TraceFormatError(str(first))
    return NotATraceFileError(f"{no_span} ({_detail(path, first)})")


def _detail(path: str, problem: TraceFileProblem) -> str:
    return f"{problem.place.removeprefix(f'{path}, ')}: {problem.message}"


def _text_sample(path: str) -> str | None:
    """The first bytes of the file as text; ``None`` when they are binary data."""
    try:
        with open_trace_file(path) as file:
            sample = file.read(_SAMPLE_BYTES)
    except OSError:
        return ""  # gone since it was read: nothing more to tell
    try:
        text = sample.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if len(sample) < _SAMPLE_BYTES or exc.start < len(sample) - 3:
            return None
        text = sample[: exc.start].decode("utf-8-sig")  # a character cut by the sample's end
    return None if "\x00" in text else text


def _other_evaltrace_file(path: str, text: str) -> str | None:
    """What to do with a dataset file or a saved run given as a trace file."""
    dataset = f"this is a dataset file: run `evaltrace test {path}`"
    if path.lower().endswith(_DATASET_SUFFIXES):
        return dataset
    if not _ENTRIES_KEY.search(text):
        return None
    if _RUN_ID_KEY.search(text):
        return f"this is a saved run: read it with `evaltrace report {path}`"
    return dataset


def read_traces(path: str | os.PathLike[str]) -> TraceFile:
    """Read a trace file trace by trace, reporting the lines that cannot be read.

    Reads every shape :func:`~evaltrace.load_traces` reads (evaltrace's JSON lines, OTLP-JSON,
    Phoenix span JSON). Where ``load_traces`` raises at the first line it cannot read, this
    reads the rest: a bad line is a :class:`TraceFileProblem` with its line number, filed
    under the trace it names (that trace is then incomplete: see :attr:`StoredTrace.problems`)
    or, naming none, under :attr:`TraceFile.problems`. A span found twice with other content
    is a problem of its trace too.

    The file is read once here, to find where each trace is, and again by each iteration of
    the :class:`TraceFile`, one trace at a time: memory holds one trace's spans (and where
    the other traces' lines are), not the file.

    A trace whose parent links go round in a loop (a damaged file's) is read with the loop
    broken at its earliest span, and the loop is a problem of the trace. An empty file holds
    no trace; a file with lines none of which is a span is refused.

    Args:
        path: The file.

    Returns:
        The traces of the file.

    Raises:
        NotATraceFileError: ``path`` is not a regular file (a named pipe, a device, a folder:
            it is not opened), or no line of it is a span; the message says what it looks
            like instead (a dataset file, a saved run, binary data).
        TraceFormatError: The file is one pretty-printed document of which no span can be
            read (the message names its first problem).
        OSError: The file cannot be read.

    Example:
        >>> for stored in read_traces("spans.jsonl"):  # doctest: +SKIP
        ...     print(stored.trace_id, stored.roots[0].span.name)
    """
    return TraceFile(path)
