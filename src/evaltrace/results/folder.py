"""The results folder of a run, ``evaltrace_results/<run-id>/``: writing it and reading it back.

A run writes its files into a folder of its own, named by its run id (sortable, unique to the
microsecond, such as ``20261123T104107.123456Z``):

* ``run.json``: the run as it starts (a :class:`~evaltrace.evals.RunResult` without entries:
  its name, source, settings, selection and aggregators), written before the first entry
  runs, so that an interrupted run can be resumed (``evaltrace test --resume``) on the same
  entries.
* ``traces.jsonl``: every entry's spans in the JSON-lines format of
  :func:`evaltrace.save_traces` (one span per line, as exporters put them on the wire: values
  past the size limit truncated, content left out when content capture is off).
* ``entries.jsonl``: one :class:`~evaltrace.evals.EntryResult` per line, in the order the
  entries finished.
* ``result.json``: the :class:`~evaltrace.evals.RunResult`, written once at the end to a
  temporary file that then replaces ``result.json``: a reader never sees half of it, and an
  interrupted run still writes it, with the entries that finished.
* ``.lock``, while a process writes the folder: locked by it (``flock``), with its process
  id in it, and removed when it is done. A second writer (two ``--resume`` of one folder at
  once) is refused with :class:`RunFolderBusyError`, before it changes anything.

As each entry finishes, its spans are appended to ``traces.jsonl``, then the entry to
``entries.jsonl``, each in one write, so that the run holds no finished entry in memory, a
file never ends part-way through a line unless the process was killed in that write, and a
crash keeps every entry that finished. ``result.json`` is assembled from ``entries.jsonl`` by
streaming: its entries, in entry order, are the lines of that file, so writing it needs 8
bytes of memory per entry (where each line is), not the entries.

:class:`ResultsFolder` writes the folder as the run goes (:meth:`ResultsFolder.reopen` takes an
interrupted one up again); :func:`load_result` reads a ``result.json`` (or the folder holding
one) back, :func:`read_run_header` a ``run.json``, :func:`iter_entries` an ``entries.jsonl``;
:func:`find_runs` finds every run's folder under the folders given.

Example:
    >>> folder = ResultsFolder.create(tmp_path, header=started)  # doctest: +SKIP
    >>> folder.add_entry(entry, handler.raw_spans)  # doctest: +SKIP
    >>> folder.finish(run_result)  # doctest: +SKIP
    PosixPath('.../evaltrace_results/20261123T104107.123456Z/result.json')
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import secrets
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Final, Self

from pydantic import ValidationError

from evaltrace._safe_text import exception_message, printable
from evaltrace.constants import RESULTS_DIR
from evaltrace.errors import (
    EvaltraceError,
    ResultFileError,
    ResultFileNotFoundError,
    ResultsFolderError,
    RunFolderBusyError,
)
from evaltrace.results.model import SCHEMA_VERSION, EntryResult, RunResult, migrate_result
from evaltrace.trace import SpanRecord, span_to_json

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "ENTRIES_FILE",
    "RESULTS_DIR",
    "RESULT_FILE",
    "RUN_FILE",
    "TRACES_FILE",
    "DuplicateEntryError",
    "EntryLines",
    "LOCK_FILE",
    "RunFolderBusyError",
    "ResultFileError",
    "ResultsFolder",
    "ResultsFolderError",
    "RunFolders",
    "check_writable",
    "find_runs",
    "iter_entries",
    "load_result",
    "new_run_id",
    "parse_result",
    "read_run_header",
    "save_result",
    "scan_entries",
    "write_atomically",
    "write_atomically_with",
    "write_result",
    "write_result_line",
]

RESULT_FILE: Final = "result.json"
"""The run's :class:`~evaltrace.evals.RunResult`, in a run's folder."""
TRACES_FILE: Final = "traces.jsonl"
"""Every entry's spans, in a run's folder."""
ENTRIES_FILE: Final = "entries.jsonl"
"""Every finished entry (one :class:`~evaltrace.evals.EntryResult` per line), in a run's folder."""
RUN_FILE: Final = "run.json"
"""The run as it started (a :class:`~evaltrace.evals.RunResult` without entries)."""
LOCK_FILE: Final = ".lock"
"""Locked by the process writing a run's folder, which writes its process id in it; removed
when it is done."""

# Read instead of parsing each line (bench_dataset_run.py: a run with its folder at 1.24x
# evaluate_inputs; bench_scale.py: a 10^5-entry result.json assembled in flat memory).
_INDEX_PREFIX: Final = re.compile(rb'\{"index":(\d+),')
"""The start of an entry's line (``index`` is the first field an EntryResult writes)."""
_ENTRIES_KEY: Final = '\n  "entries": []'
_ENTRIES_KEY_COMPACT: Final = '"entries":[]'
"""The entries of a RunResult written with ``indent=2`` and none: the one top-level key at
that indentation (nested keys are indented further; text in strings has no raw newline)."""

_OLD_PIPELINE_FORMAT: Final = "evaltrace.pipeline-evaluation"
"""The marker of the file format pipeline evaluations were saved in before RunResult."""

_RUN_ID_FORMAT: Final = "%Y%m%dT%H%M%S.%fZ"
_last_run_id: datetime | None = None
_run_id_lock = threading.Lock()


def _lock(folder: Path) -> int:
    """Take the run folder's lock; the descriptor that holds it.

    The lock file is removed by :func:`_unlock` while still locked, so a process that opened
    it just before may then lock a file that is gone: it checks, after locking, that the
    file it holds is still the folder's, and tries again if not.

    Raises:
        RunFolderBusyError: Another process holds it.
        ResultsFolderError: The lock file cannot be written.
    """
    path = folder / LOCK_FILE
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unwritable(folder, exc) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            os.close(descriptor)
            raise RunFolderBusyError(folder, holder or "unknown") from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(descriptor).st_ino:
            break
        os.close(descriptor)  # removed by the writer that just finished: lock the new one
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
    return descriptor


def _unlock(folder: Path, descriptor: int) -> None:
    """Remove the lock file and release the lock taken by :func:`_lock`."""
    try:
        (folder / LOCK_FILE).unlink(missing_ok=True)
    finally:
        os.close(descriptor)  # closing releases the lock


class DuplicateEntryError(EvaltraceError, ValueError):
    """Two lines of the entries being assembled into one result hold the same entry."""

    def __init__(self, message: str, *, index: int, files: tuple[Path, Path]) -> None:
        super().__init__(message)
        self.index = index
        """The entry's index."""
        self.files = files
        """The files holding the first and the second line of it."""


def new_run_id(now: datetime | None = None) -> str:
    """A run id: the UTC time to the microsecond, such as ``20261123T104107.123456Z``.

    Ids sort in the order the runs started, and this process never hands out one twice: an id
    that would equal or precede the last one is moved a microsecond past it.

    Args:
        now: The time to use (default: now); a naive time is read as UTC.

    Example:
        >>> first, second = new_run_id(), new_run_id()
        >>> len(first), first[8], first[15], first[-1], first < second
        (23, 'T', '.', 'Z', True)
    """
    global _last_run_id
    moment = now if now is not None else datetime.now(UTC)
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    with _run_id_lock:
        if _last_run_id is not None and moment <= _last_run_id:
            moment = _last_run_id + timedelta(microseconds=1)
        _last_run_id = moment
    return moment.strftime(_RUN_ID_FORMAT)


def _next_id(run_id: str) -> str:
    try:
        moment = datetime.strptime(run_id, _RUN_ID_FORMAT).replace(tzinfo=UTC)
    except ValueError:  # an id chosen by the caller: number the second one
        return f"{run_id}-1"
    return new_run_id(moment + timedelta(microseconds=1))


def check_writable(parent: str | os.PathLike[str]) -> Path:
    """Make sure run folders can be created in ``parent`` (creating it if needed).

    Called before a run starts, so that an unwritable place fails at once rather than after
    the entries ran.

    Returns:
        ``parent`` as an absolute path.

    Raises:
        ResultsFolderError: ``parent`` cannot be created, is not a folder, or is not writable.
    """
    where = Path(parent).absolute()
    try:
        where.mkdir(parents=True, exist_ok=True)
        descriptor, probe = tempfile.mkstemp(dir=where, prefix=".evaltrace-probe-")
        os.close(descriptor)
        os.unlink(probe)
    except OSError as exc:
        raise _unwritable(where, exc) from None
    return where


def _unwritable(where: Path, exc: OSError) -> ResultsFolderError:
    reason = exc.strerror or exception_message(exc)
    return ResultsFolderError(
        f"cannot write results to {where}: {reason}; choose a folder you can write to "
        "(the output directory option)"
    )


class ResultsFolder:
    """Writes one run's folder: ``run.json`` first, each entry as it finishes, ``result.json``.

    Use :meth:`create` (or :meth:`reopen` to go on with an interrupted run). The folder is also
    a context manager that closes its files; an entry, once given to :meth:`add_entry`, is on
    disk with its spans and may be dropped.
    """

    def __init__(
        self,
        path: Path,
        run_id: str,
        traces: io.FileIO,
        entries: io.FileIO,
        lock: int,
        done: EntryLines | None = None,
    ) -> None:
        self.path = path
        """The run's folder."""
        self.run_id = run_id
        """The run id: the folder's name."""
        self.done = done if done is not None else EntryLines(files=[], where=array("q"), count=0)
        """The entries written before this process opened the folder (none for a new one)."""
        self._traces: io.FileIO | None = traces
        self._entries: io.FileIO | None = entries
        self._lock: int | None = lock
        # Joined once: add_entry names them only when a write fails, and joining paths for
        # each entry was a sixth of its cost (bench_cli.py, evaltrace test vs evaluate_inputs).
        self._traces_path = path / TRACES_FILE
        self._entries_path = path / ENTRIES_FILE

    @classmethod
    def create(
        cls,
        parent: str | os.PathLike[str] = RESULTS_DIR,
        run_id: str | None = None,
        *,
        header: RunResult | None = None,
    ) -> ResultsFolder:
        """Create ``parent/<run-id>/`` with its ``run.json`` and two empty ``.jsonl`` files.

        Args:
            parent: The folder holding the runs' folders (created if needed).
            run_id: The id, and the folder's name; :func:`new_run_id` by default. When a
                folder of that name exists, the next free id is taken.
            header: The run as it starts, written to ``run.json`` (with the id taken and no
                entries); no ``run.json`` without it.

        Raises:
            ResultsFolderError: The folder cannot be created or written.
        """
        where = check_writable(parent)
        chosen = run_id or new_run_id()
        while True:
            folder = where / chosen
            try:
                folder.mkdir()
            except FileExistsError:
                chosen = _next_id(chosen)
                continue
            except OSError as exc:
                raise _unwritable(folder, exc) from None
            break
        lock = _lock(folder)
        try:
            if header is not None:
                started = header.model_copy(update={"run_id": chosen, "entries": []})
                write_atomically(folder / RUN_FILE, started.model_dump_json(indent=2) + "\n")
            traces = io.FileIO(folder / TRACES_FILE, "x")
            entries = io.FileIO(folder / ENTRIES_FILE, "x")
        except OSError as exc:
            _unlock(folder, lock)
            raise _unwritable(folder, exc) from None
        except BaseException:
            _unlock(folder, lock)
            raise
        return cls(folder, chosen, traces, entries, lock)

    @classmethod
    def reopen(
        cls,
        path: str | os.PathLike[str],
        *,
        check: Callable[[RunResult], object] | None = None,
    ) -> ResultsFolder:
        """Open the folder of an interrupted run to append the entries it did not finish.

        Everything is checked before anything is written: the folder's lock is taken, its
        ``run.json`` read and given to ``check``, and its ``entries.jsonl`` read through
        (:attr:`done`). Only then is what a killed process may have left half-done cut off:
        a last line of ``entries.jsonl`` or ``traces.jsonl`` without its end, and the spans
        written for an entry whose own line never followed (spans are written before their
        entry), so that the entries run again leave no trace twice.

        Args:
            path: The run's folder.
            check: Called with the run's ``run.json``; what it raises refuses the folder,
                unchanged.

        Raises:
            RunFolderBusyError: Another process is writing the folder.
            ResultFileError: ``path`` is not a run's folder (no ``run.json``, no
                ``entries.jsonl``).
            DuplicateEntryError: ``entries.jsonl`` holds an entry twice (the folder is left
                as it is).
            ResultsFolderError: Its files cannot be read or written.
        """
        folder = Path(path)
        if not (folder / RUN_FILE).is_file():
            read_run_header(folder)  # raises, naming what the folder lacks
        lock = _lock(folder)
        try:
            header = read_run_header(folder)
            if check is not None:
                check(header)
            entries_path = folder / ENTRIES_FILE
            traces_path = folder / TRACES_FILE
            if not entries_path.is_file():
                raise ResultFileError(
                    f"{folder}: no {ENTRIES_FILE}; only a run's folder written by evaltrace "
                    "(with run.json and entries.jsonl) can be resumed"
                )
            done = scan_entries([entries_path])
            try:
                last_traces = _complete_lines(entries_path)
                _complete_lines(traces_path)
                _drop_orphan_spans(traces_path, last_traces)
                traces = io.FileIO(traces_path, "a")
                entries = io.FileIO(entries_path, "a")
            except OSError as exc:
                raise _unwritable(folder, exc) from None
        except BaseException:
            _unlock(folder, lock)
            raise
        return cls(folder, header.run_id or folder.name, traces, entries, lock, done)

    @property
    def result_path(self) -> Path:
        """Where ``result.json`` is (or will be) written."""
        return self.path / RESULT_FILE

    @property
    def traces_path(self) -> Path:
        """Where the spans are written."""
        return self._traces_path

    @property
    def entries_path(self) -> Path:
        """Where the finished entries are written."""
        return self._entries_path

    def add_entry(
        self, entry: EntryResult, spans: Iterable[ReadableSpan | SpanRecord | str] = ()
    ) -> None:
        """Append an entry's spans to ``traces.jsonl``, then the entry to ``entries.jsonl``.

        Each file gets one write, so that neither ends part-way through a line.

        Args:
            entry: The finished entry.
            spans: Its spans: live or recorded spans, or lines already encoded by
                :func:`~evaltrace.trace.span_to_json`.

        Raises:
            ResultsFolderError: A file cannot be written (the disk is full, ...).
        """
        if self._traces is None or self._entries is None:
            return
        lines = "".join(
            (span if isinstance(span, str) else span_to_json(span)) + "\n" for span in spans
        )
        if lines:
            self._write(self._traces, lines.encode("utf-8"), self._traces_path, entry)
        self._write(
            self._entries, entry.model_dump_json().encode() + b"\n", self._entries_path, entry
        )

    @staticmethod
    def _write(file: io.FileIO, data: bytes, path: Path, entry: EntryResult) -> None:
        view = memoryview(data)
        try:
            while view:
                written = file.write(view)
                view = view[written or 0 :]
        except OSError as exc:
            raise ResultsFolderError(
                f"cannot write {path} (entry {entry.name!r}): "
                f"{exc.strerror or exception_message(exc)}"
            ) from None

    def finish(self, result: RunResult) -> Path:
        """Close the files and write ``result.json`` atomically.

        ``result``'s own entries are not used: those of ``result.json`` are the lines of
        ``entries.jsonl``, in entry order. It is written even when a file cannot be closed.

        Returns:
            The path of ``result.json``.

        Raises:
            ResultsFolderError: A file cannot be written; no half-written ``result.json`` is
                left behind.
            DuplicateEntryError: ``entries.jsonl`` holds an entry twice.
        """
        try:
            try:
                self._close_files()
            finally:
                write_result(self.result_path, result, scan_entries([self.entries_path]))
        finally:
            self._release()
        return self.result_path

    def close(self) -> None:
        """Close the files and release the folder's lock (idempotent)."""
        try:
            self._close_files()
        finally:
            self._release()

    def _close_files(self) -> None:
        traces, self._traces = self._traces, None
        entries, self._entries = self._entries, None
        try:
            if traces is not None:
                traces.close()
        finally:
            if entries is not None:
                entries.close()

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            _unlock(self.path, lock)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsFolder({str(self.path)!r})"


def _complete_lines(path: Path) -> bytes | None:
    """Cut a last line left without its end; return the last line holding trace ids, if any.

    The file is read forwards in blocks, so that a large one costs no memory.
    """
    if not path.exists():
        path.touch()
        return None
    last_with_traces: bytes | None = None
    end = 0
    with open(path, "rb") as stream:
        for line in stream:
            if not line.endswith(b"\n"):
                break
            end += len(line)
            if b'"trace_ids":["' in line:
                last_with_traces = line
    if end != path.stat().st_size:
        os.truncate(path, end)
    return last_with_traces


def _drop_orphan_spans(traces: Path, last_entry: bytes | None) -> None:
    """Cut the spans after those of the last entry that has spans (written, its line not)."""
    keep: set[str] = set()
    if last_entry is not None:
        keep = set(json.loads(last_entry).get("trace_ids", []))
    end = 0
    position = 0
    with open(traces, "rb") as stream:
        for line in stream:
            position += len(line)
            try:
                span = json.loads(line)
            except ValueError:  # a line cut short: cut with what follows it
                continue
            if isinstance(span, dict) and span.get("trace_id") in keep:
                end = position
    if end != traces.stat().st_size:
        os.truncate(traces, end)


_FILE_BITS: Final = 16
"""Where an entry's line is, in one integer: its offset in its file, shifted past the file's
position in the files scanned (so up to 65,536 files of up to 2**47 bytes each)."""
_FILE_MASK: Final = (1 << _FILE_BITS) - 1
"""The bits of that integer that say which file."""


@dataclass(frozen=True, kw_only=True)
class EntryLines:
    """Where each entry's line is, in one or more ``entries.jsonl`` files, by entry index.

    Built by :func:`scan_entries`: nothing per entry when the files hold entries ``0`` to
    ``count - 1`` in index order, or nearly (as a run writes them: an entry finishes at most a
    few thousand places early), else 8 bytes per entry, whatever the entries hold.
    """

    files: list[Path]
    """The files scanned."""
    where: array[int]
    """For each entry index: its line's offset and its file (``offset << 16 | file``), or -1;
    empty when :attr:`in_order`."""
    count: int
    """The lines read."""
    in_order: bool = False
    """Whether the lines read are entries ``0, 1, ..., count - 1``, each at most
    ``_WINDOW`` lines before its place in index order (then :attr:`where` is empty)."""

    def __len__(self) -> int:
        return self.count

    def has(self, index: int) -> bool:
        """Whether an entry of this index was read."""
        if self.in_order:
            return 0 <= index < self.count
        return 0 <= index < len(self.where) and self.where[index] >= 0

    def lines(self) -> Iterator[bytes]:
        """Each entry's line (without its end), in index order."""
        if self.in_order:
            yield from self._lines_in_order()
            return
        streams = [open(path, "rb") for path in self.files]
        try:
            for place in self.where:
                if place < 0:
                    continue
                stream = streams[place & _FILE_MASK]
                stream.seek(place >> _FILE_BITS)
                yield stream.readline().rstrip(b"\n")
        finally:
            for stream in streams:
                stream.close()

    def _lines_in_order(self) -> Iterator[bytes]:
        left = self.count
        due = 0
        early: dict[int, bytes] = {}  # lines read before their turn: at most _WINDOW
        for path in self.files:
            with open(path, "rb") as stream:
                for number, line in enumerate(stream, start=1):
                    if not left or not line.endswith(b"\n"):  # a last line cut short: skipped
                        break
                    left -= 1
                    index = _entry_index(line, path, number)
                    if index != due:
                        early[index] = line
                        continue
                    yield line.rstrip(b"\n")
                    due += 1
                    while due in early:
                        yield early.pop(due).rstrip(b"\n")
                        due += 1


def scan_entries(
    files: Sequence[str | os.PathLike[str]], visit: Callable[[bytes], object] | None = None
) -> EntryLines:
    """Find every entry's line in ``entries.jsonl`` files, reading them once, by streaming.

    A last line without its end (a write cut short when the process was killed) is left out.

    Args:
        files: The files, read in order.
        visit: Called with each entry's line as it is read (to tally it without keeping it).

    Raises:
        DuplicateEntryError: Two lines hold the same entry index.
        ResultFileError: A file is missing (a :class:`ResultFileNotFoundError`), or a line
            is not an entry.
    """
    paths = [Path(file) for file in files]
    if len(paths) > 1 << _FILE_BITS:
        raise ValueError(f"at most {1 << _FILE_BITS} files of entries, got {len(paths)}")
    # Nothing kept while the lines are entries 0, 1, 2, ... in order: 8 bytes an entry made
    # a 10**6-entry run peak 8 MiB higher at its end (bench_dataset_memory.py).
    window: _Window | None = _Window()
    where: array[int] = array("q")
    count = 0
    for number, path in enumerate(paths):
        offset = 0
        try:
            stream = open(path, "rb")
        except FileNotFoundError:
            raise ResultFileNotFoundError(f"{path}: no such file") from None
        with stream:
            for line_number, line in enumerate(stream, start=1):
                if not line.endswith(b"\n"):
                    break
                index = _entry_index(line, path, line_number)
                if window is not None and window.add(index):
                    offset += len(line)
                    count += 1
                    if visit is not None:
                        visit(line)
                    continue
                if window is not None:  # a repeat, or too far out of order: where each is
                    window = None
                    where = _first_lines(paths, count)
                if index >= len(where):  # grown as needed: entries finish nearly in order
                    where.extend(array("q", [-1]) * max(index + 1 - len(where), len(where) // 8))
                first = where[index]
                if first >= 0:
                    found = (paths[first & _FILE_MASK], path)
                    raise DuplicateEntryError(
                        f"entry #{index} is in {found[0]} and again in {found[1]}",
                        index=index,
                        files=found,
                    )
                where[index] = offset << _FILE_BITS | number
                offset += len(line)
                count += 1
                if visit is not None:
                    visit(line)
    if window is not None and window.early:  # entries missing: where each one read is
        where = _first_lines(paths, count)
        window = None
    last = len(where)
    while last and where[last - 1] < 0:  # the room grown past the last index
        last -= 1
    del where[last:]
    return EntryLines(files=paths, where=where, count=count, in_order=window is not None)


_WINDOW: Final = 4096
"""How far before its place in index order an entry's line may be for :func:`scan_entries`
to keep nothing per entry. A run writes each entry as it finishes: of a 10**6-entry run's
lines, 31 came a few places early, and an offset for each entry then raised the run's peak
by 8 MiB (bench_dataset_memory.py)."""


class _Window:
    """The entry indexes read so far, while they are ``0, 1, 2, ...`` give or take a few."""

    __slots__ = ("due", "early")

    def __init__(self) -> None:
        self.due = 0
        """The lowest index not read yet."""
        self.early: set[int] = set()
        """The indexes read above it."""

    def add(self, index: int) -> bool:
        """Take ``index``; ``False`` if it was read before or is too far ahead."""
        if index == self.due:
            self.due += 1
            early = self.early
            while self.due in early:
                early.remove(self.due)
                self.due += 1
            return True
        if index < self.due or index in self.early or len(self.early) >= _WINDOW:
            return False
        self.early.add(index)
        return True


def _first_lines(paths: Sequence[Path], count: int) -> array[int]:
    """Where the first ``count`` lines of ``paths`` are, as :attr:`EntryLines.where` says."""
    where: array[int] = array("q")
    read = 0
    for number, path in enumerate(paths):
        offset = 0
        with open(path, "rb") as stream:
            for line_number, line in enumerate(stream, start=1):
                if read == count or not line.endswith(b"\n"):  # a line cut short: skipped
                    break
                index = _entry_index(line, path, line_number)
                if index >= len(where):
                    where.extend(array("q", [-1]) * max(index + 1 - len(where), len(where) // 8))
                where[index] = offset << _FILE_BITS | number
                offset += len(line)
                read += 1
    return where


def _entry_index(line: bytes, path: Path, line_number: int) -> int:
    match = _INDEX_PREFIX.match(line)
    if match is not None:
        return int(match.group(1))
    try:
        index = json.loads(line).get("index")
    except (ValueError, AttributeError):
        index = None
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ResultFileError(
            f"{path}, line {line_number}: not an entry (an EntryResult with its index); "
            f"{ENTRIES_FILE} holds one entry per line, as a run writes it"
        )
    return index


def write_result(path: Path, result: RunResult, entries: EntryLines) -> None:
    """Write ``result`` as ``result.json`` with the entries of ``entries``, atomically.

    The file is written as it is read: ``result`` without its entries, and each entry's line
    copied in index order, so that memory does not grow with the entries.

    Raises:
        ResultsFolderError: The file cannot be written; the temporary file is removed.
    """
    # Spliced, not dumped whole: bench_scale.py's streamed run (1.12x the memory at 10^5
    # entries as at 10^4) holds no entry, and dumping them all would.
    text = result.model_copy(update={"entries": []}).model_dump_json(indent=2)
    before, after = text.split(_ENTRIES_KEY, 1)

    def write(stream: io.BufferedWriter) -> None:
        stream.write(before.encode("utf-8"))
        if not len(entries):
            stream.write(_ENTRIES_KEY.encode("utf-8"))
        else:
            stream.write(b'\n  "entries": [')
            separator = b"\n    "
            for line in entries.lines():
                stream.write(separator)
                stream.write(line)
                separator = b",\n    "
            stream.write(b"\n  ]")
        stream.write(after.encode("utf-8"))
        stream.write(b"\n")

    write_atomically_with(path, write)


def write_result_line(stream: IO[str], result: RunResult, entries: EntryLines) -> None:
    """Write ``result`` as one line of JSON with the entries of ``entries``, in index order.

    What ``evaltrace test --format json`` prints per run: the content of its ``result.json``
    on one line, each entry's line copied from ``entries.jsonl`` as it was written (no entry
    is parsed or held), each through :func:`~evaltrace._safe_text.printable`.
    """
    text = result.model_copy(update={"entries": []}).model_dump_json()
    before, after = text.split(_ENTRIES_KEY_COMPACT, 1)
    stream.write(printable(before))
    stream.write('"entries":[')
    separator = ""
    for line in entries.lines():
        stream.write(separator)
        stream.write(printable(line.decode("utf-8")))
        separator = ","
    stream.write("]")
    stream.write(printable(after))
    stream.write("\n")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then move it onto ``path``.

    Readers see the old file or the new one, never a part of it; the file gets the usual
    permissions (those of the process's umask).

    Raises:
        ResultsFolderError: The file cannot be written; the temporary file is removed.
    """
    write_atomically_with(path, lambda stream: stream.write(text.encode("utf-8")))


def write_atomically_with(path: Path, write: Callable[[io.BufferedWriter], object]) -> None:
    """Write a file by streaming: ``write`` fills a temporary file, then it replaces ``path``.

    Readers see the old file or the new one, never a part of it.

    Raises:
        ResultsFolderError: The file cannot be written; the temporary file is removed.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    written = False
    try:
        with open(temporary, "xb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
        written = True
    except OSError as exc:
        raise ResultsFolderError(
            f"cannot write {path}: {exc.strerror or exception_message(exc)}"
        ) from None
    finally:
        if not written:
            temporary.unlink(missing_ok=True)


def load_result(path: str | os.PathLike[str]) -> RunResult:
    """Read a saved run result: a ``result.json``, or a run's folder holding one.

    Raises:
        ResultFileError: The file is missing (a :class:`ResultFileNotFoundError`, also a
            ``FileNotFoundError``), is not JSON, or is not a saved run result; the message
            names the file and, for an invalid result, the first fields at fault.

    Example:
        >>> result = load_result("evaltrace_results/20261123T104107.123456Z")  # doctest: +SKIP
    """
    given = Path(path)
    file = given / RESULT_FILE if given.is_dir() else given
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = (
            f" (the folder {given} has no {RESULT_FILE}; was the run interrupted before it ended?)"
            if given.is_dir()
            else f"; give a {RESULT_FILE} or a run's folder ({RESULTS_DIR}/<run-id>/)"
        )
        raise ResultFileNotFoundError(f"{file}: no such file{hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ResultFileError(
            f"{file}: cannot be read: {reason or exception_message(exc)}"
        ) from None
    return parse_result(text, file)


def parse_result(text: str | bytes, file: str | os.PathLike[str]) -> RunResult:
    """A saved result from its JSON text, migrated forward when an earlier version wrote it.

    Args:
        text: The JSON of a ``result.json`` or ``run.json``.
        file: How messages name where it came from.

    Raises:
        ResultFileError: It is not valid JSON, not a saved run result, damaged, or of a
            newer version than this evaltrace reads.
    """
    try:
        return RunResult.model_validate_json(text)  # this version: read as it is
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ResultFileError(f"{file}: not valid JSON ({errors[0]['msg']})") from None
    data = json.loads(text)
    if isinstance(data, dict) and data.get("format") == _OLD_PIPELINE_FORMAT:
        raise ResultFileError(
            f"{file} is a pipeline evaluation in the format used before results were saved as "
            f'RunResult ("format": "{_OLD_PIPELINE_FORMAT}"), which kept no schema to migrate '
            "from; run evaluate_runnable again and save its result"
        )
    if not isinstance(data, dict):
        raise ResultFileError(
            f"{file}: not a saved evaltrace run result: a JSON {type(data).__name__}, not an "
            "object as `evaltrace test` and EvaluationResult.save() write it"
        )
    if data.get("schema_version", SCHEMA_VERSION) == SCHEMA_VERSION:
        raise _not_a_result(file, errors)  # of this version (or of none): invalid as it is
    try:
        return RunResult.model_validate(migrate_result(data))
    except ValueError as exc:  # pydantic's ValidationError included
        if isinstance(exc, ValidationError):
            raise _not_a_result(file, exc.errors(include_url=False)) from None
        raise ResultFileError(f"{file}: {exception_message(exc)}") from None


def _not_a_result(file: str | os.PathLike[str], errors: Sequence[Any]) -> ResultFileError:
    shown = "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or '(top)'}: {error['msg']}"
        for error in errors[:5]
    )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return ResultFileError(
        f"{file}: not a saved evaltrace run result: {shown}{more}; it is read as the "
        f"{RESULT_FILE} that `evaltrace test` writes"
    )


def save_result(path: str | os.PathLike[str], result: RunResult) -> Path:
    """Write ``result`` whole (entries included) as a JSON file, atomically.

    Returns:
        The path written.

    Raises:
        ResultsFolderError: The file cannot be written.
    """
    target = Path(path)
    write_atomically(target, result.model_dump_json(indent=2) + "\n")
    return target


def read_run_header(folder: str | os.PathLike[str]) -> RunResult:
    """Read a run folder's ``run.json``: the run as it started, without entries.

    Raises:
        ResultFileError: The folder has no ``run.json`` (it was not written by a run that
            records it), or it is not a saved run result.
    """
    given = Path(folder)
    file = given / RUN_FILE if given.is_dir() or not given.exists() else given
    if not file.is_file():
        raise ResultFileError(
            f"{given}: no {RUN_FILE}; give the folder of a run (such as "
            f"{RESULTS_DIR}/<run-id>), as `evaltrace test` writes it"
        )
    return load_result(file)


def iter_entries(path: str | os.PathLike[str]) -> Iterator[EntryResult]:
    """The entries of an ``entries.jsonl`` (or a run's folder holding one), as they finished.

    Read line by line: a run's entries can be gone through without holding them all. A last
    line without its end (the run was killed while writing it) is left out.

    Raises:
        ResultFileError: The file is missing (a :class:`ResultFileNotFoundError`), or a
            line is not an entry.

    Example:
        >>> failed = [e.name for e in iter_entries(folder) if not e.status.passed]  # doctest: +SKIP
    """
    given = Path(path)
    file = given / ENTRIES_FILE if given.is_dir() else given
    try:
        stream = open(file, "rb")
    except FileNotFoundError:
        raise ResultFileNotFoundError(f"{file}: no such file") from None
    with stream:
        for number, line in enumerate(stream, start=1):
            if not line.endswith(b"\n"):
                return
            try:
                yield EntryResult.model_validate_json(line)
            except ValidationError as exc:
                raise ResultFileError(
                    f"{file}, line {number}: not an entry ({exc.error_count()} problems, "
                    f"first: {exc.errors(include_url=False)[0]['msg']})"
                ) from None


@dataclass(frozen=True, kw_only=True)
class RunFolders:
    """The run folders found under the folders given (see :func:`find_runs`)."""

    finished: list[Path]
    """Folders holding a ``result.json``, each once, in the order found (sorted by path)."""
    unfinished: list[Path]
    """Run folders with a ``run.json`` but no ``result.json`` under a folder given: a run
    still going, or one killed before it ended."""


def find_runs(paths: Sequence[str | os.PathLike[str]]) -> RunFolders:
    """Every run's folder under ``paths``: each a run's folder, or a folder holding runs.

    A folder holding runs is searched at every depth (``evaltrace_results/<run-id>/``, or
    ``evaltrace_results/nightly/<run-id>/`` for ``--output-dir evaltrace_results/nightly``);
    the search does not go into a run's folder.

    Raises:
        ResultFileError: A path does not exist, is a file other than a ``result.json``, is a
            run's folder whose run did not end, or holds no run's folder; the message says
            what to give instead.

    Example:
        >>> runs = find_runs(["evaltrace_results"])  # doctest: +SKIP
        >>> [folder.name for folder in runs.finished]  # doctest: +SKIP
        ['20261123T104107.123456Z', '20261124T081500.000001Z']
    """
    finished: dict[Path, None] = {}
    unfinished: dict[Path, None] = {}
    for path in paths:
        given = Path(path)
        if given.is_file() and given.name == RESULT_FILE:
            finished.setdefault(given.parent)
            continue
        if not given.exists():
            raise ResultFileError(f"{given}: no such folder; {_GIVE_RUNS}")
        if not given.is_dir():
            raise ResultFileError(f"{given} is a file, not a run's folder; {_GIVE_RUNS}")
        if (given / RESULT_FILE).is_file():
            finished.setdefault(given)
            continue
        if (given / RUN_FILE).is_file():
            raise ResultFileError(
                f"{given} is the folder of a run that did not end (it has a {RUN_FILE} but no "
                f"{RESULT_FILE}): let it finish, or take it up again with `evaltrace test "
                f"--resume {given}`"
            )
        found, pending = len(finished), len(unfinished)
        for folder, subfolders, files in os.walk(given):
            subfolders.sort()
            if RESULT_FILE in files:
                finished.setdefault(Path(folder))
                subfolders.clear()  # a run's folder holds no other run
            elif RUN_FILE in files:
                unfinished.setdefault(Path(folder))
                subfolders.clear()
        if len(finished) == found:
            stopped = list(unfinished)[pending:]
            note = (
                f" and {len(stopped)} run(s) that did not end ({', '.join(map(str, stopped))}: "
                f"take one up again with `evaltrace test --resume {stopped[0]}`)"
                if stopped
                else ""
            )
            raise ResultFileError(
                f"{given} holds no run's folder (no {RESULT_FILE} under it){note}; {_GIVE_RUNS}"
            )
    return RunFolders(finished=list(finished), unfinished=list(unfinished))


_GIVE_RUNS: Final = (
    f"give {RESULTS_DIR}/ (where `evaltrace test` saves each run, in a folder named by its run "
    f"id), another --output-dir of `evaltrace test`, or a run's folder ({RESULTS_DIR}/<run-id>)"
)
