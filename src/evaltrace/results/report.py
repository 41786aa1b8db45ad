"""The text report of one or more runs, drawn with rich: what ``evaltrace test`` prints.

For each run: a table of its entries against its evaluators (score and pass/fail, or why
there is none), every entry that did not pass with its reasoning or error, the dataset-level
metrics (precision, recall and F-beta per class, the confusion matrix), the count of each
status; then the totals and the wall time of all runs.

On a terminal the report has colour and box-drawing tables. Written anywhere else, or with
``NO_COLOR`` set, it is plain ASCII without colour (tables drawn with ``+``, ``-`` and ``|``;
values from the app keep their own characters). Values, reasoning and errors come from the app
and its evaluators: their terminal control characters are shown escaped, never obeyed.

Example:
    >>> print(render_report([RunResult(name="demo", entries=[])], plain=True))  # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final, TextIO

from pydantic import ValidationError
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from evaltrace._safe_text import printable
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluable import collapse_named_data
from evaltrace.evals.evaluation import Evaluation
from evaltrace.metrics.classification import ClassificationDetails
from evaltrace.results.model import TIMEOUT_ERROR_TYPES, CompletionStatus, EntryResult, RunResult

__all__ = [
    "ALL_ROWS_UP_TO",
    "MAX_LISTED_ENTRIES",
    "print_report",
    "print_rich",
    "render_report",
    "render_rich",
    "wants_plain_report",
]

ALL_ROWS_UP_TO: Final = 20
"""A run with at most this many entries has them all in its table; a larger one only those
that did not pass (all with ``verbose``)."""
MAX_LISTED_ENTRIES: Final = 50
"""At most this many rows in a run's table, and failures described, unless ``verbose``."""

_VALUE_WIDTH: Final = 200
_WHY_WIDTH: Final = 300
_STATUS_STYLES: Final[dict[CompletionStatus, str]] = {
    CompletionStatus.SUCCESS: "green",
    CompletionStatus.FAILED_PARTIAL_SCORE: "yellow",
    CompletionStatus.FAILED_SCORE_ZERO: "red",
    CompletionStatus.TIMED_OUT: "magenta",
    CompletionStatus.NO_SCORE_LOGGED: "yellow",
    CompletionStatus.LOG_FILE_ERROR: "red",
    CompletionStatus.ERROR: "red",
}


def wants_plain_report(stream: TextIO) -> bool:
    """Whether a report written to ``stream`` should be plain ASCII without colour.

    True when ``NO_COLOR`` is set (to anything non-empty) or ``stream`` is not a terminal.
    """
    if os.environ.get("NO_COLOR"):
        return True
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # an object without isatty, or a closed stream
        return True


def print_report(
    results: Sequence[RunResult], *, file: TextIO | None = None, verbose: bool = False
) -> None:
    """Write the report of ``results`` to ``file`` (standard output by default).

    Plain ASCII without colour unless ``file`` is a terminal and ``NO_COLOR`` is not set.
    """
    print_rich(lambda plain: _report(results, verbose=verbose, plain=plain), file)


def render_report(
    results: Sequence[RunResult],
    *,
    verbose: bool = False,
    plain: bool = True,
    width: int = 100,
) -> str:
    """The report of ``results`` as text.

    Args:
        results: The runs, one per dataset.
        verbose: List every entry, and describe every one that did not pass.
        plain: ASCII without colour; else box-drawing characters and ANSI colours.
        width: The width to lay the tables out in.
    """
    return render_rich(_report(results, verbose=verbose, plain=plain), plain=plain, width=width)


def print_rich(build: Callable[[bool], RenderableType], file: TextIO | None = None) -> None:
    """Write what ``build(plain)`` draws to ``file`` (standard output by default).

    ``plain`` is :func:`wants_plain_report` of the stream: ASCII at the width of ``COLUMNS``
    (100 by default), else colour at the terminal's width.
    """
    stream = file if file is not None else sys.stdout
    if wants_plain_report(stream):
        stream.write(render_rich(build(True), plain=True, width=_width()))
        return
    Console(file=stream, highlight=False, emoji=False).print(build(False), soft_wrap=True)


def render_rich(renderable: RenderableType, *, plain: bool, width: int) -> str:
    """Draw ``renderable`` as text: plain ASCII, or with ANSI colours; long lines not wrapped."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system=None if plain else "standard",
        force_terminal=not plain,
        no_color=plain,
        highlight=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(renderable, soft_wrap=True)
    return buffer.getvalue()


def _width() -> int:
    try:
        return max(60, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 100


def _report(results: Sequence[RunResult], *, verbose: bool, plain: bool) -> RenderableType:
    look = _Look(plain)
    parts: list[RenderableType] = []
    for result in results:
        parts += _run_section(result, verbose=verbose, look=look)
    parts.append(_totals(results, look))
    return Group(*parts)


class _Look:
    """How the report draws: boxes, the ellipsis, colours."""

    def __init__(self, plain: bool) -> None:
        self.plain = plain
        self.box = box.ASCII if plain else box.SIMPLE_HEAD

    def text(self, value: str, style: str = "") -> Text:
        """User text, its control characters escaped and, plain, its cut marked in ASCII."""
        shown = printable(value)
        if self.plain:
            shown = shown.replace("…", "...")
        return Text(shown, style="" if self.plain else style)

    def short(self, value: Any, width: int = _VALUE_WIDTH) -> Text:
        """A value on one line, shortened."""
        return self.text(short_text(value, width))

    def table(self, *headers: str) -> Table:
        """A table with these column headers (user text: escaped)."""
        table = Table(box=self.box, show_edge=self.plain, header_style="" if self.plain else "bold")
        for header in headers:
            table.add_column(self.text(header), overflow="fold")
        return table


def _run_section(result: RunResult, *, verbose: bool, look: _Look) -> list[RenderableType]:
    heading = Text("")
    heading.append(look.text(result.name, "bold"))
    where = f" ({result.source})" if result.source else ""
    heading.append(look.text(f"{where}  run {result.run_id}" if result.run_id else where))
    count = result.entry_count
    heading.append(f"  {count} {'entry' if count == 1 else 'entries'}  {result.duration_s:.2f} s")
    parts: list[RenderableType] = [Text(""), heading]
    if result.interrupted:
        parts.append(look.text("interrupted: only the entries that finished are shown", "red"))
    for error in result.errors:
        parts.append(
            look.text(f"the runnable's {error.where} raised {error.type}: {error.message}", "red")
        )
    if result.entry_count:
        parts.append(_entries_table(result, verbose=verbose, look=look))
        parts += _failures(result, verbose=verbose, look=look)
    parts += _dataset_results(result, look)
    parts.append(_status_counts(result, look))
    return parts


def _listed(result: RunResult, verbose: bool) -> tuple[list[EntryResult], int]:
    """The entries the table lists, and how many passed entries it leaves out."""
    entries = result.entries
    if verbose or result.entry_count <= ALL_ROWS_UP_TO:
        return list(entries), result.entry_count - len(entries)
    failing = [entry for entry in entries if not entry.status.passed]
    return failing, result.entry_count - _failing_count(result)


def _failing_count(result: RunResult) -> int:
    """How many entries did not pass (of a summarized result, listed or not)."""
    return sum(count for status, count in result.status_counts.items() if not status.passed)


def _entries_table(result: RunResult, *, verbose: bool, look: _Look) -> RenderableType:
    listed, passed_left_out = _listed(result, verbose)
    table = look.table("entry", "status", *result.evaluators)
    shown = listed if verbose else listed[:MAX_LISTED_ENTRIES]
    for entry in shown:
        cells: list[Text] = [look.text(entry.name), _status(entry.status, look)]
        for name in result.evaluators:
            evaluation = entry.evaluation(name)
            cells.append(_cell(evaluation, result.threshold, look))
        table.add_row(*cells)
    notes: list[str] = []
    if passed_left_out:
        notes.append(f"{passed_left_out} entries that passed are not listed")
    failing_left_out = _failing_count(result) - sum(not entry.status.passed for entry in shown)
    if failing_left_out:
        notes.append(f"{failing_left_out} more entries that did not pass are not listed")
    if not notes:
        return table
    return Group(table, look.text("; ".join(notes) + " (-v lists every entry)", "dim"))


def _status(status: CompletionStatus, look: _Look) -> Text:
    return look.text(status.value, _STATUS_STYLES[status])


def _cell(evaluation: Evaluation | None, threshold: float, look: _Look) -> Text:
    if evaluation is None:
        return look.text("-", "dim")  # this evaluator does not score this entry
    if evaluation.error is not None:
        timed_out = evaluation.error.type in TIMEOUT_ERROR_TYPES
        return look.text("timeout" if timed_out else "error", "magenta" if timed_out else "red")
    if evaluation.skipped or evaluation.score is None:
        return look.text("skipped", "dim")
    passed = evaluation.score >= threshold
    return look.text(
        f"{evaluation.score:.2f} {'pass' if passed else 'FAIL'}", "green" if passed else "red"
    )


def _failures(result: RunResult, *, verbose: bool, look: _Look) -> list[RenderableType]:
    failing = [entry for entry in result.entries if not entry.status.passed]
    if not failing:
        return []
    shown = failing if verbose else failing[:MAX_LISTED_ENTRIES]
    parts: list[RenderableType] = [Text(""), look.text("Entries that did not pass", "bold")]
    for entry in shown:
        parts.append(_failure(entry, result.threshold, look))
    more = _failing_count(result) - len(shown)
    if more:
        parts.append(look.text(f"... and {more} more (-v for all)", "dim"))
    return parts


def _failure(entry: EntryResult, threshold: float, look: _Look) -> RenderableType:
    lines: list[Text] = []
    title = Text("")
    title.append(look.text(entry.name, "bold"))
    title.append("  ")
    title.append(_status(entry.status, look))
    lines.append(title)
    if entry.description and entry.description != entry.name:
        lines.append(_labelled("about", look.short(entry.description, _WHY_WIDTH), look))
    lines.append(_labelled("input", look.short(entry.input), look))
    if entry.eval_output is not None:
        lines.append(_labelled("output", look.short(collapse_named_data(entry.eval_output)), look))
    if entry.has_expectation:
        lines.append(_labelled("expected", look.short(entry.expectation), look))
    if entry.error is not None:
        where = entry.error.where or "run"
        lines.append(
            _labelled(
                f"{where} error",
                look.short(f"{entry.error.type}: {entry.error.message}", _WHY_WIDTH),
                look,
            )
        )
    for evaluation in entry.evaluations:
        if evaluation.passed(threshold):
            continue
        if entry.error is not None and evaluation.error == entry.error:
            continue  # the run's error, shown once above
        name = evaluation.evaluator or "?"
        if evaluation.error is not None:
            verdict = f"error {evaluation.error.type}: {evaluation.error.message}"
        elif evaluation.skipped or evaluation.score is None:
            verdict = f"skipped: {evaluation.reasoning}"
        else:
            verdict = f"{evaluation.score:.2f}: {evaluation.reasoning or '(no reasoning given)'}"
        lines.append(_labelled(name, look.short(verdict, _WHY_WIDTH), look))
    return Group(*lines)


def _labelled(label: str, value: Text, look: _Look) -> Text:
    line = Text("  ")
    line.append(look.text(f"{label}: ", "dim"))
    line.append(value)
    return line


def _dataset_results(result: RunResult, look: _Look) -> list[RenderableType]:
    if not result.dataset_results:
        return []
    parts: list[RenderableType] = [Text(""), look.text("Dataset-level results", "bold")]
    summary = look.table("metric", "score", "items")
    details_of: dict[str, ClassificationDetails] = {}
    for key, evaluation in result.dataset_results.items():
        details = _classification(evaluation)
        if details is not None:
            details_of[key] = details
        if evaluation.error is not None:
            score = f"error {evaluation.error.type}: {evaluation.error.message}"
        elif evaluation.score is None:
            score = f"skipped: {evaluation.reasoning}"
        else:
            score = f"{evaluation.score:.4f}"
        items = (
            f"{details.n_scored} scored, {details.n_skipped} skipped" if details is not None else ""
        )
        summary.add_row(look.text(key), look.text(score), look.text(items))
    parts.append(summary)
    shown: set[tuple[str, str, float, tuple[str, ...]]] = set()
    for key, details in details_of.items():
        # Precision, recall and F of one source share their per-class table (only the F of a
        # given beta differs); each table is shown once.
        matrix = details.metric == "confusion_matrix"
        kind = "matrix" if matrix else "per_class"
        seen = (
            key.split("::")[0],
            kind,
            0.0 if matrix else details.f_value,
            tuple(details.classes),
        )
        if seen in shown:
            continue
        shown.add(seen)
        source = key.split("::")[0]
        parts.append(
            _confusion_matrix(key, details, look)
            if matrix
            else _per_class(f"{source}: per class", details, look)
        )
    return parts


def _classification(evaluation: Evaluation) -> ClassificationDetails | None:
    details = evaluation.details
    if isinstance(details, ClassificationDetails):
        return details
    if not isinstance(details, dict) or "per_class" not in details:
        return None
    try:
        return ClassificationDetails.model_validate(details)
    except ValidationError:  # details of another shape: the score alone is shown
        return None


def _per_class(key: str, details: ClassificationDetails, look: _Look) -> RenderableType:
    beta = f"F{details.f_value:g}" if details.f_value != 1 else "F1"
    table = look.table("class", "precision", "recall", beta, "support")
    for name, metrics in details.per_class.items():
        table.add_row(
            look.text(name),
            f"{metrics.precision:.4f}",
            f"{metrics.recall:.4f}",
            f"{metrics.f_score:.4f}",
            str(metrics.support),
        )
    for label, averaged in (("micro", details.micro), ("macro", details.macro)):
        table.add_row(
            label,
            f"{averaged.precision:.4f}",
            f"{averaged.recall:.4f}",
            f"{averaged.f_score:.4f}",
            str(details.n_scored),
        )
    return Group(look.text(key, "bold"), table)


def _confusion_matrix(key: str, details: ClassificationDetails, look: _Look) -> RenderableType:
    table = look.table("predicted \\ expected", *details.classes)
    for name, row in zip(details.classes, details.confusion_matrix, strict=False):
        table.add_row(look.text(name), *(str(count) for count in row))
    return Group(look.text(f"{key} (accuracy {details.accuracy:.4f})", "bold"), table)


def _status_counts(result: RunResult, look: _Look) -> Text:
    counts = result.status_counts
    line = Text("")
    for status in CompletionStatus:
        if counts.get(status):
            if line:
                line.append("  ")
            line.append(_status(status, look))
            line.append(f" {counts[status]}")
    return line if line else look.text("no entries", "dim")


def _totals(results: Sequence[RunResult], look: _Look) -> RenderableType:
    counts: Counter[CompletionStatus] = Counter()
    for result in results:
        counts.update(result.status_counts)
    total = sum(counts.values())
    passed = counts[CompletionStatus.SUCCESS]
    duration = sum(result.duration_s for result in results)
    datasets = len(results)
    ok = all(result.passed for result in results) and bool(results)
    text = (
        f"{total} {'entry' if total == 1 else 'entries'} in {datasets} "
        f"{'dataset' if datasets == 1 else 'datasets'}: {passed} passed, "
        f"{total - passed} did not pass, in {duration:.2f} s"
    )
    if any(result.interrupted for result in results):
        text += " (interrupted)"
    return Group(Text(""), look.text(text, "bold green" if ok else "bold red"))
