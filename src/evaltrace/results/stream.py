"""A results stream: scored traces appended to one JSON-lines file as they are scored.

``evaltrace serve --results FILE`` scores traces for as long as it runs, so its results are
not one run with an end but a stream. The file holds two kinds of lines:

* a **header** each time a process starts writing it: a
  :class:`~evaltrace.results.RunResult` without entries (as a run folder's ``run.json``
  holds one: its name, evaluators, threshold and settings), one line;
* an **entry** for each scored trace: an :class:`~evaltrace.results.EntryResult` (as a run
  folder's ``entries.jsonl`` holds them), its ``name`` and ``trace_ids`` the trace id,
  ``started_at`` when the trace's root span started.

Each line is appended in one write. :func:`read_windows` reads the file back as one run per
time window (by when each trace started), which ``evaltrace report FILE --window 1h`` prints.

Example:
    >>> stream = ResultsStream(tmp_path / "scores.jsonl", RunResult(name="serve"))  # doctest: +SKIP
    >>> stream.add(entry)  # doctest: +SKIP
    >>> [run.name for run in read_windows(tmp_path / "scores.jsonl")]  # doctest: +SKIP
    ['serve 2026-11-28T10:00Z']
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from evaltrace._safe_text import exception_message
from evaltrace.errors import ResultFileError, ResultFileNotFoundError, ResultsFolderError
from evaltrace.results.model import EntryResult, RunResult

__all__ = ["ResultsStream", "is_results_stream", "read_stream", "read_windows"]

_HEADER_START: Final = b'{"schema_version":'
"""How a header line starts: a RunResult writes its schema version first."""
_ENTRY_START: Final = b'{"index":'
"""How an entry line starts: an EntryResult writes its index first."""
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class ResultsStream:
    """Appends scored entries to a results stream, after a header line.

    Args:
        path: The file; created when missing, appended to when present.
        header: The run as it starts (no entries): written as the header line.

    Raises:
        ResultsFolderError: The file cannot be opened for appending.
    """

    def __init__(self, path: str | os.PathLike[str], header: RunResult) -> None:
        self.path = Path(path)
        """The file."""
        self._lock = threading.Lock()
        try:
            self._file = open(self.path, "ab", buffering=0)
        except OSError as exc:
            raise ResultsFolderError(
                f"cannot append to the results file {self.path}: "
                f"{exc.strerror or exception_message(exc)}"
            ) from None
        self._write(header.model_copy(update={"entries": []}).model_dump_json().encode())

    def add(self, entry: EntryResult) -> None:
        """Append one scored entry as a line.

        Raises:
            ResultsFolderError: The line cannot be written.
        """
        self._write(entry.model_dump_json().encode())

    def _write(self, line: bytes) -> None:
        data = memoryview(line + b"\n")
        with self._lock:
            try:
                while data:
                    written = self._file.write(data)
                    data = data[written or 0 :]
            except OSError as exc:
                raise ResultsFolderError(
                    f"cannot append to the results file {self.path}: "
                    f"{exc.strerror or exception_message(exc)}"
                ) from None

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._file.close()


def is_results_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file that starts as a results stream does (a header line).

    Example:
        >>> is_results_stream("evaltrace_results/20261123T104107.123456Z")  # doctest: +SKIP
        False
    """
    try:
        with open(path, "rb") as stream:
            return stream.read(len(_HEADER_START)) == _HEADER_START
    except OSError:
        return False


def read_stream(path: str | os.PathLike[str]) -> Iterator[tuple[RunResult, EntryResult]]:
    """Each entry of a results stream with the header it was written under, in file order.

    A last line without its end (the writer was killed in that write) is left out.

    Raises:
        ResultFileError: The file is missing (a :class:`ResultFileNotFoundError`), an entry
            comes before any header, or a line is neither; the message names the line.
    """
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        raise ResultFileNotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise ResultFileError(
            f"{path}: cannot be read: {exc.strerror or exception_message(exc)}"
        ) from None
    header: RunResult | None = None
    with stream:
        for number, line in enumerate(stream, start=1):
            if not line.endswith(b"\n"):
                return
            try:
                if line.startswith(_HEADER_START):
                    header = RunResult.model_validate_json(line)
                    continue
                if not line.startswith(_ENTRY_START):
                    raise ResultFileError(
                        f"{path}, line {number}: neither a header (a run, as run.json holds "
                        "it) nor an entry of a results stream"
                    )
                entry = EntryResult.model_validate_json(line)
            except ValidationError as exc:
                raise ResultFileError(
                    f"{path}, line {number}: not a line of a results stream "
                    f"({exc.error_count()} problems, first: "
                    f"{exc.errors(include_url=False)[0]['msg']})"
                ) from None
            if header is None:
                raise ResultFileError(
                    f"{path}, line {number}: an entry before any header line; a results stream "
                    "starts with the header `evaltrace serve --results` writes"
                )
            yield header, entry


def read_windows(
    path: str | os.PathLike[str], *, window: timedelta = timedelta(hours=1)
) -> list[RunResult]:
    """A results stream as one run per time window, the earliest first.

    Each entry falls in the window in which its trace started (windows are aligned on the
    Unix epoch: hours start on the hour). A window's run takes its name, evaluators,
    threshold and settings from the header of its first entry; its name gets the window's
    start (``serve 2026-11-28T10:00Z``), its entries are numbered from 0 in file order.

    Args:
        path: The results stream.
        window: The length of each window.

    Raises:
        ResultFileError: The file cannot be read as a results stream.
        ValueError: ``window`` is not positive.
    """
    if window <= timedelta(0):
        raise ValueError(f"window must be positive, got {window}")
    grouped: dict[datetime, tuple[RunResult, list[EntryResult]]] = {}
    for header, entry in read_stream(path):
        when = entry.started_at or header.started_at or _EPOCH
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        start = _EPOCH + ((when - _EPOCH) // window) * window
        grouped.setdefault(start, (header, []))[1].append(entry)
    runs = []
    for start in sorted(grouped):
        header, entries = grouped[start]
        end = start + window
        runs.append(
            RunResult(
                run_id=start.strftime("%Y%m%dT%H%M%S.000000Z"),
                name=f"{header.name} {start:%Y-%m-%dT%H:%MZ}",
                source=str(path),
                evaluators=header.evaluators,
                threshold=header.threshold,
                settings={
                    **header.settings,
                    "window": {"start": start.isoformat(), "end": end.isoformat()},
                },
                entries=[
                    entry.model_copy(update={"index": index}) for index, entry in enumerate(entries)
                ],
                started_at=start,
                finished_at=end,
            )
        )
    return runs
