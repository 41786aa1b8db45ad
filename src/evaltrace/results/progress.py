"""Showing a run's progress: a rich progress bar on a terminal, plain lines in CI and logs.

Progress goes to standard error, so that a report or JSON printed on standard output stays
clean. The bar is used when standard error is a terminal and the ``CI`` environment variable
is not set; otherwise plain lines are written: each entry that did not pass (the first
:data:`MAX_LISTED_FAILURES`), and a count at every tenth of the run.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from types import TracebackType
from typing import Final, Self, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from evaltrace._safe_text import printable
from evaltrace.results.model import CompletionStatus, EntryResult

__all__ = ["MAX_LISTED_FAILURES", "RunProgress", "wants_plain_output"]

MAX_LISTED_FAILURES: Final = 20
"""How many entries that did not pass the plain lines name, one by one."""


def wants_plain_output(stream: TextIO) -> bool:
    """Whether output to ``stream`` should be plain: ``CI`` is set, or it is not a terminal."""
    if os.environ.get("CI"):
        return True
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return True


class RunProgress:
    """The progress of one run, as a context manager fed each finished entry.

    Args:
        label: What is running (the dataset's name).
        total: How many entries the run has.
        stream: Where to write; standard error by default.
        plain: Plain lines instead of a bar; decided by :func:`wants_plain_output` by default.
        scored: Whether the entries are scored; entries that are only run (a pipeline's)
            count as failing when they errored, not when nothing scored them.

    Example:
        >>> with RunProgress("faq", total=2, plain=True, stream=sys.stdout) as progress:
        ...     progress.advance(EntryResult(index=0, name="a"))
        faq: entry 'a' NO_SCORE_LOGGED
        faq: 1/2 entries, 1 not passed
    """

    def __init__(
        self,
        label: str,
        total: int,
        *,
        stream: TextIO | None = None,
        plain: bool | None = None,
        scored: bool = True,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._label = printable(label)
        self._total = total
        self._plain = wants_plain_output(self._stream) if plain is None else plain
        self._done = 0
        self._scored = scored
        self._failing = "not passed" if scored else "errored"
        self._failed = 0
        self._statuses: Counter[CompletionStatus] = Counter()
        self._next_line = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Self:
        if not self._plain:
            console = Console(file=self._stream, highlight=False)
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=self._total, failed="")
        return self

    def advance(self, entry: EntryResult) -> None:
        """Count one finished entry."""
        self._done += 1
        self._statuses[entry.status] += 1
        failing = not entry.status.passed if self._scored else entry.error is not None
        self._failed += failing
        failed = self._failed
        if self._bar is not None and self._task is not None:
            shown = f"[red]{failed} {self._failing}[/red]" if failed else ""
            self._bar.update(self._task, advance=1, failed=shown)
            return
        if failing and failed <= MAX_LISTED_FAILURES:
            self._line(f"entry {printable(repr(entry.name))} {entry.status.value}")
        if self._done >= self._next_line or self._done == self._total:
            self._line(f"{self._done}/{self._total} entries, {failed} {self._failing}")
            self._next_line = self._done + max(1, self._total // 10)

    def _line(self, text: str) -> None:
        print(f"{self._label}: {text}", file=self._stream, flush=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
