"""The results folder of a run, ``evaltrace_results/<run-id>/``: writing it and reading it back.

A run writes two files into a folder of its own, named by its run id (sortable, unique to the
microsecond, such as ``20261123T104107.123456Z``):

* ``traces.jsonl``: every entry's spans in the JSON-lines format of
  :func:`evaltrace.save_traces` (one span per line, as exporters put them on the wire: values
  past the size limit truncated, content left out when content capture is off). Each entry's
  spans are appended, in one write, as the entry finishes, so that the run never holds every
  trace in memory, the file never ends part-way through a line, and an interrupted run keeps
  the traces of the entries that finished.
* ``result.json``: the :class:`~evaltrace.evals.RunResult`, written once at the end to a
  temporary file that then replaces ``result.json``: a reader never sees half of it, and an
  interrupted run still writes it, with the entries that finished.

:class:`ResultsFolder` writes the folder as the run goes; :func:`load_result` reads a
``result.json`` (or the folder holding one) back. Whatever else a run streams as its entries
finish (a file of finished entries, from which an interrupted run could resume) belongs in
:meth:`ResultsFolder.add_entry`, which receives each entry with its spans.

Example:
    >>> folder = ResultsFolder.create(tmp_path)  # doctest: +SKIP
    >>> folder.add_entry(entry, handler.raw_spans)  # doctest: +SKIP
    >>> folder.finish(run_result)  # doctest: +SKIP
    PosixPath('.../evaltrace_results/20261123T104107.123456Z/result.json')
"""

from __future__ import annotations

import io
import os
import secrets
import tempfile
import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self

from pydantic import ValidationError

from evaltrace._safe_text import exception_message
from evaltrace.errors import EvaltraceError
from evaltrace.evals.result import EntryResult, RunResult
from evaltrace.trace import SpanRecord, span_to_json

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "RESULTS_DIR",
    "RESULT_FILE",
    "TRACES_FILE",
    "ResultFileError",
    "ResultsFolder",
    "ResultsFolderError",
    "check_writable",
    "load_result",
    "new_run_id",
    "write_atomically",
]

RESULTS_DIR: Final = "evaltrace_results"
"""The folder, in the current folder, that holds one folder per run unless told otherwise."""
RESULT_FILE: Final = "result.json"
"""The run's :class:`~evaltrace.evals.RunResult`, in a run's folder."""
TRACES_FILE: Final = "traces.jsonl"
"""Every entry's spans, in a run's folder."""

_RUN_ID_FORMAT: Final = "%Y%m%dT%H%M%S.%fZ"
_last_run_id: datetime | None = None
_run_id_lock = threading.Lock()


class ResultsFolderError(EvaltraceError, OSError):
    """A results folder cannot be created or written; the message names the path and why."""


class ResultFileError(EvaltraceError, ValueError):
    """A ``result.json`` cannot be read: missing, not JSON, or not a saved run result."""


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
    """Writes one run's folder: spans as each entry finishes, ``result.json`` at the end.

    Use :meth:`create`. The folder is also a context manager that closes its files; an
    entry's spans, once given to :meth:`add_entry`, are on disk and may be dropped.
    """

    def __init__(self, path: Path, run_id: str, traces: io.FileIO) -> None:
        self.path = path
        """The run's folder."""
        self.run_id = run_id
        """The run id: the folder's name."""
        self._traces: io.FileIO | None = traces

    @classmethod
    def create(
        cls, parent: str | os.PathLike[str] = RESULTS_DIR, run_id: str | None = None
    ) -> ResultsFolder:
        """Create ``parent/<run-id>/`` with an empty ``traces.jsonl``.

        Args:
            parent: The folder holding the runs' folders (created if needed).
            run_id: The id, and the folder's name; :func:`new_run_id` by default. When a
                folder of that name exists, the next free id is taken.

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
        try:
            traces = io.FileIO(folder / TRACES_FILE, "x")
        except OSError as exc:
            raise _unwritable(folder, exc) from None
        return cls(folder, chosen, traces)

    @property
    def result_path(self) -> Path:
        """Where ``result.json`` is (or will be) written."""
        return self.path / RESULT_FILE

    @property
    def traces_path(self) -> Path:
        """Where the spans are written."""
        return self.path / TRACES_FILE

    def add_entry(self, entry: EntryResult, spans: Iterable[ReadableSpan | SpanRecord]) -> None:
        """Append a finished entry's spans to ``traces.jsonl``, in one write.

        This is where each entry reaches disk as it finishes (the entry itself is written with
        the run's ``result.json``, by :meth:`finish`). The entry's lines go out in one system
        call, so that the file never ends part-way through a line.

        Raises:
            ResultsFolderError: The file cannot be written (the disk is full, ...).
        """
        if self._traces is None:
            return
        data = "".join(span_to_json(span) + "\n" for span in spans).encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                written = self._traces.write(view)
                view = view[written or 0 :]
        except OSError as exc:
            raise ResultsFolderError(
                f"cannot write {self.traces_path} (entry {entry.name!r}): "
                f"{exc.strerror or exception_message(exc)}"
            ) from None

    def finish(self, result: RunResult) -> Path:
        """Close ``traces.jsonl`` and write ``result.json`` atomically.

        ``result.json`` is written even when ``traces.jsonl`` cannot be closed.

        Returns:
            The path of ``result.json``.

        Raises:
            ResultsFolderError: A file cannot be written; no half-written ``result.json`` is
                left behind.
        """
        try:
            self.close()
        finally:
            write_atomically(self.result_path, result.model_dump_json(indent=2) + "\n")
        return self.result_path

    def close(self) -> None:
        """Close ``traces.jsonl`` (idempotent)."""
        traces, self._traces = self._traces, None
        if traces is not None:
            traces.close()

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


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then move it onto ``path``.

    Readers see the old file or the new one, never a part of it; the file gets the usual
    permissions (those of the process's umask).

    Raises:
        ResultsFolderError: The file cannot be written; the temporary file is removed.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    written = False
    try:
        with open(temporary, "x", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
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
        ResultFileError: The file is missing, is not JSON, or is not a saved run result; the
            message names the file and, for an invalid result, the first fields at fault.

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
        raise ResultFileError(f"{file}: no such file{hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ResultFileError(
            f"{file}: cannot be read: {reason or exception_message(exc)}"
        ) from None
    try:
        return RunResult.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ResultFileError(f"{file}: not valid JSON ({errors[0]['msg']})") from None
        shown = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(top)'}: {error['msg']}"
            for error in errors[:5]
        )
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ResultFileError(
            f"{file}: not a saved evaltrace run result: {shown}{more}; it is read as the "
            f"{RESULT_FILE} that `evaltrace test` writes"
        ) from None
