"""The text report of one or more runs, drawn with rich: what ``evaltrace test`` prints.

For each run: a table of its entries against its evaluators (score and pass/fail, the label
an evaluator gave, or why there is none), every entry that did not pass with its reasoning or
error, how often each evaluator gave each label, the dataset-level metrics (precision, recall
and F-beta per class, the confusion matrix), each evaluator's mean score and pass rate with
their intervals and ``n`` (and each dataset-level metric's interval), the count of each
status; then the totals and the wall time of all runs.

On a terminal the report has colour and box-drawing tables. Written anywhere else, or with
``NO_COLOR`` set, it is plain ASCII without colour (tables drawn with ``+``, ``-`` and ``|``;
values from the app keep their own characters). Values, reasoning and errors come from the app
and its evaluators: their terminal control characters are shown escaped, never obeyed.

A row of a table is one line, whatever the width: a CI log cannot be resized, and a status or
an evaluator name cut in two (``FAILED_PARTIA`` / ``L_SCORE``) cannot be searched for. Outside
a terminal the tables take the width their content needs (``COLUMNS`` when it is set); the
app's free text in them (entry names, class names, errors) is cut with an ellipsis, and only
it is narrowed to fit. An entry named by a trace id (``evaltrace test --traces``) is shown by
its first digits, as git shortens a commit hash.

Example:
    >>> print(render_report([RunResult(name="demo", entries=[])], plain=True))  # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Final, TextIO

from pydantic import ValidationError
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from evaltrace._safe_text import printable
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluable import collapse_named_data
from evaltrace.evals.evaluation import Evaluation
from evaltrace.llm.usage import describe_judge_usage
from evaltrace.metrics.classification import ClassificationDetails
from evaltrace.results.model import TIMEOUT_ERROR_TYPES, CompletionStatus, EntryResult, RunResult
from evaltrace.results.usage import describe_usage
from evaltrace.statistics import Interval

__all__ = [
    "ALL_ROWS_UP_TO",
    "MAX_LISTED_ENTRIES",
    "SMALL_SAMPLE",
    "confidence_label",
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
_CELL_WIDTH: Final = 60
"""The most a table cell of the app's free text takes; the failures below a table show it whole."""
_NARROWEST_CELL: Final = 12
"""How far a column of the app's free text is narrowed to fit the width; past that, the table
is drawn wider than the width rather than cutting a status or an evaluator name."""
_CONTENT_WIDTH: Final = 1_000_000
"""The width of a report drawn outside a terminal without ``COLUMNS``: wider than any table,
so each takes the width its content needs (lines are never padded to the width)."""
_LABEL_WIDTH: Final = 24
"""The most a label takes in a cell of the entries table (the labels table shows it whole)."""
_TRACE_ID: Final = re.compile(r"[0-9a-f]{32}")
_SHORT_TRACE_ID: Final = 7
"""The fewest digits of a trace id shown as an entry's name (git's default for a hash)."""
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
    width: int | None = None,
) -> str:
    """The report of ``results`` as text.

    Args:
        results: The runs, one per dataset.
        verbose: List every entry, and describe every one that did not pass.
        plain: ASCII without colour; else box-drawing characters and ANSI colours.
        width: The width to fit the tables in; ``None`` for the width their content needs.
            A table too wide for it is drawn wider rather than cut in a status or a name.
    """
    return render_rich(_report(results, verbose=verbose, plain=plain), plain=plain, width=width)


def print_rich(build: Callable[[bool], RenderableType], file: TextIO | None = None) -> None:
    """Write what ``build(plain)`` draws to ``file`` (standard output by default).

    ``plain`` is :func:`wants_plain_report` of the stream: ASCII at the width of ``COLUMNS``
    (the width the content needs when it is not set), else colour at the terminal's width.
    """
    stream = file if file is not None else sys.stdout
    if wants_plain_report(stream):
        stream.write(render_rich(build(True), plain=True, width=_columns()))
        return
    Console(file=stream, highlight=False, emoji=False).print(build(False), soft_wrap=True)


def render_rich(renderable: RenderableType, *, plain: bool, width: int | None) -> str:
    """Draw ``renderable`` as text: plain ASCII, or with ANSI colours; long lines not wrapped.

    ``width`` is the width tables are fitted in; ``None`` lets each take what it needs.
    """
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width if width is not None else _CONTENT_WIDTH,
        color_system=None if plain else "standard",
        force_terminal=not plain,
        no_color=plain,
        highlight=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(renderable, soft_wrap=True)
    return buffer.getvalue()


def _columns() -> int | None:
    """The width ``COLUMNS`` sets, or ``None`` when it sets none (unset, or not a width)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return columns if columns > 0 else None


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

    def cell(self, value: str, style: str = "") -> Text:
        """User text for a table cell: on one line (whitespace runs become one space)."""
        return self.text(" ".join(value.split()), style)

    def cut(self, text: Text, width: int) -> Text:
        """``text`` cut to ``width`` cells, the cut marked with an ellipsis."""
        if text.cell_len <= width:
            return text
        mark = "..." if self.plain else "…"
        kept = text.copy()
        kept.truncate(width - cell_len(mark))
        kept.rstrip()
        kept.append(mark)
        return kept

    def table(self, *headers: str, shortened: Collection[int] = ()) -> _OneLineTable:
        """A table with these column headers (user text: escaped).

        Args:
            headers: The column headers.
            shortened: The columns of the app's free text, which may be cut to fit.
        """
        return _OneLineTable(self, headers, shortened)


class _OneLineTable:
    """A table each of whose rows is one line, at any width.

    Rich fits a table in the width by wrapping its cells, cutting words in two. Here no cell
    wraps: the ``shortened`` columns (the app's free text) are cut with an ellipsis at
    :data:`_CELL_WIDTH` and, to fit the width they are drawn in, narrowed widest first down to
    :data:`_NARROWEST_CELL` (never below their header); the others (statuses, evaluator names,
    scores) are never cut, and a table that still does not fit is drawn wider than the width.
    """

    def __init__(self, look: _Look, headers: Sequence[str], shortened: Collection[int]) -> None:
        self._look = look
        self._headers = [look.text(header) for header in headers]
        self._shortened = frozenset(shortened)
        self._rows: list[list[Text]] = []

    def add_row(self, *cells: Text | str) -> None:
        """Add a row (missing cells are blank); plain strings are our own text (numbers)."""
        row = [cell if isinstance(cell, Text) else Text(cell) for cell in cells]
        self._rows.append(row + [Text("")] * (len(self._headers) - len(row)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns = list(zip(self._headers, *self._rows, strict=True))
        widths = [max(cell.cell_len for cell in column) for column in columns]
        narrowest = list(widths)
        for index in self._shortened:
            widths[index] = min(widths[index], max(_CELL_WIDTH, self._headers[index].cell_len))
            narrowest[index] = min(
                widths[index], max(_NARROWEST_CELL, self._headers[index].cell_len)
            )
        borders = self._bordered([1] * len(widths), [])
        measured = Measurement.get(console, options.update_width(_CONTENT_WIDTH), borders)
        overhead = measured.maximum - len(widths)
        widths = _narrowed(widths, narrowest, options.max_width - overhead)
        table = self._bordered(widths, self._rows)
        needed = sum(widths) + overhead
        yield from console.render(table, options.update_width(max(options.max_width, needed)))

    def _bordered(self, widths: Sequence[int], rows: Iterable[Sequence[Text]]) -> Table:
        """The rich table with columns of these fixed widths, cells cut to fit them."""
        look = self._look
        table = Table(box=look.box, show_edge=look.plain, header_style="" if look.plain else "bold")
        for header, width in zip(self._headers, widths, strict=True):
            table.add_column(look.cut(header, width), width=width, no_wrap=True)
        for row in rows:
            table.add_row(*(look.cut(cell, width) for cell, width in zip(row, widths, strict=True)))
        return table


def _narrowed(widths: Sequence[int], narrowest: Sequence[int], room: int) -> list[int]:
    """``widths`` narrowed, widest first and not below ``narrowest``, to fit in ``room``."""
    fitted = list(widths)
    excess = sum(fitted) - room
    while excess > 0:
        narrowable = [index for index, width in enumerate(fitted) if width > narrowest[index]]
        if not narrowable:
            break
        widest = max(narrowable, key=lambda index: fitted[index])
        fitted[widest] -= 1
        excess -= 1
    return fitted


def _short_trace_ids(names: Iterable[str]) -> dict[str, str]:
    """Each entry name that is a trace id, shortened as git shortens a hash.

    All of a run's trace ids are shown with one number of digits, :data:`_SHORT_TRACE_ID` or
    as many more as it takes for none to read as another entry's name or id.
    """
    every = set(names)
    ids = sorted(name for name in every if _TRACE_ID.fullmatch(name))
    length = _SHORT_TRACE_ID
    while length < 32:
        prefixes = {trace_id[:length] for trace_id in ids}
        if len(prefixes) == len(ids) and not prefixes & every:
            break
        length += 1
    return {trace_id: trace_id[:length] for trace_id in ids}


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
    parts += _labels(result, look)
    parts += _dataset_results(result, look)
    parts += _statistics(result, look)
    parts.append(_status_counts(result, look))
    judges = describe_judge_usage(result.judge_usage)
    if judges is not None:
        parts.append(look.text(judges, "dim"))
    for line in describe_usage(result.usage, result.latency, result.cost):
        parts.append(look.text(line, "dim"))
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
    table = look.table("entry", "status", *result.evaluators, shortened=[0])
    shown = listed if verbose else listed[:MAX_LISTED_ENTRIES]
    short_ids = _short_trace_ids(entry.name for entry in result.entries)
    for entry in shown:
        name = short_ids.get(entry.name, entry.name)
        cells: list[Text] = [look.cell(name), _status(entry.status, look)]
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
    label = evaluation.label
    if evaluation.skipped or evaluation.score is None:
        if label is not None:
            return look.cell(short_text(label, _LABEL_WIDTH), "cyan")
        return look.text("skipped", "dim")
    passed = evaluation.score >= threshold
    text = f"{evaluation.score:.2f} {'pass' if passed else 'FAIL'}"
    if label is not None:
        text += f" ({short_text(label, _LABEL_WIDTH)})"
    return look.cell(text, "green" if passed else "red")


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
        elif evaluation.label is not None and evaluation.score is None:
            verdict = f"label {evaluation.label!r}" + (
                f": {evaluation.reasoning}" if evaluation.reasoning else ""
            )
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


def _labels(result: RunResult, look: _Look) -> list[RenderableType]:
    """How often each evaluator gave each label, over every entry of the run."""
    if not result.label_counts:
        return []
    table = look.table("evaluator", "label", "entries", "share", shortened=[1])
    for name, labels in result.label_counts.items():
        total = sum(labels.values())
        for position, (label, count) in enumerate(labels.items()):
            table.add_row(
                look.text(name if position == 0 else ""),
                look.cell(label),
                f"{count} of {total}",
                f"{count / total:.0%}",
            )
    return [Text(""), look.text("Labels", "bold"), table]


def _dataset_results(result: RunResult, look: _Look) -> list[RenderableType]:
    if not result.dataset_results:
        return []
    parts: list[RenderableType] = [Text(""), look.text("Dataset-level results", "bold")]
    summary = look.table("metric", "score", "items", shortened=[1])
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
        summary.add_row(look.text(key), look.cell(score), look.text(items))
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
    table = look.table("class", "precision", "recall", beta, "support", shortened=[0])
    for name, metrics in details.per_class.items():
        table.add_row(
            look.cell(name),
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
    table = look.table("predicted \\ expected", *details.classes, shortened=[0])
    for name, row in zip(details.classes, details.confusion_matrix, strict=False):
        table.add_row(look.cell(name), *(str(count) for count in row))
    return Group(look.text(f"{key} (accuracy {details.accuracy:.4f})", "bold"), table)


SMALL_SAMPLE: Final = 30
"""Below this many entries an interval is flagged as wide and approximate."""


def _statistics(result: RunResult, look: _Look) -> list[RenderableType]:
    """Each evaluator's mean and pass rate with their intervals and n.

    And each dataset-level result's interval.
    """
    statistics = result.statistics
    if statistics is None or not (statistics.evaluators or statistics.dataset_results):
        return []
    level = confidence_label(statistics.confidence)
    parts: list[RenderableType] = [
        Text(""),
        look.text(f"Scores with {level} intervals", "bold"),
    ]
    table = look.table(
        "evaluator",
        "n",
        f"mean [{level} CI]",
        "std err",
        "passed",
        f"pass rate [{level} CI]",
        "errored",
        "skipped",
        shortened=[0],
    )
    small: list[str] = []
    for item in statistics.evaluators:
        if 0 < item.entries < SMALL_SAMPLE:
            small.append(item.evaluator)
        table.add_row(
            look.cell(item.evaluator),
            str(item.n) if item.entries == item.n else f"{item.n} ({item.entries} entries)",
            _estimate(item.mean, item.mean_interval),
            "" if item.standard_error is None else f"{item.standard_error:.3f}",
            f"{item.passed}/{item.pass_n}",
            _estimate(item.pass_rate, item.pass_rate_interval),
            str(item.errored),
            str(item.skipped),
        )
    for metric in statistics.dataset_results:
        table.add_row(
            look.cell(f"(dataset) {metric.key}"),
            str(metric.n),
            _estimate(metric.score, metric.interval),
        )
    parts.append(table)
    repeated = any(item.pass_rate_method != "wilson" for item in statistics.evaluators)
    pass_method = "Wilson, bootstrap where entries repeat" if repeated else "Wilson"
    note = (
        f"mean: bootstrap percentile over entries ({statistics.resamples} resamples, seed "
        f"{statistics.seed}); pass rate: {pass_method}, an error counts as a fail"
    )
    parts.append(look.text(note, "dim"))
    if small:
        names = ", ".join(small)
        parts.append(
            look.text(
                f"fewer than {SMALL_SAMPLE} entries ({names}): the intervals are wide and "
                f"cover the true value less reliably than {level}",
                "yellow",
            )
        )
    return parts


def confidence_label(confidence: float) -> str:
    """``0.95`` as ``"95%"``, ``0.975`` as ``"97.5%"``."""
    return f"{confidence * 100:.10g}%"


def _estimate(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "-"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval.low:.3f}, {interval.high:.3f}]"


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
