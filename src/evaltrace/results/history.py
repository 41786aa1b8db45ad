"""A history of runs: each dataset's figures over its successive runs, as a table and a page.

:func:`run_history` reads every run's folder under the folders given (``evaltrace_results/``
by default, through :func:`~evaltrace.results.folder.find_runs` and
:func:`~evaltrace.results.folder.load_result`), groups the runs by dataset (the run's name),
orders each dataset's runs by when they started, and compares each run with the one before it
(:func:`~evaltrace.results.comparison.compare_runs`: paired tests per evaluator, Holm's
correction); a run with a *better* or *worse* verdict is marked. :func:`print_history` prints
it as one table per dataset; :func:`save_history_page` writes one self-contained HTML page: per
dataset, each evaluator's mean with its interval band over time, the pass rate with its Wilson
band, and every measure of :data:`HISTORY_MEASURES` that the runs have (the app's p95 latency,
...), each dot a link to its run's ``scorecard.html``.

The page makes no request and runs no script: its stylesheet is inline, allowed by hash in
its Content-Security-Policy (which forbids everything else), it is rendered by jinja2 with
autoescaping, the charts are SVG whose shapes are computed here, and the links are relative
paths whose every part is percent-encoded.

Example:
    >>> history = run_history(["evaltrace_results"])  # doctest: +SKIP
    >>> print_history(history)  # doctest: +SKIP
    >>> save_history_page(history, "evaltrace_results/history.html")  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO
from urllib.parse import quote

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evaltrace._safe_text import printable
from evaltrace.constants import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SIGNIFICANCE,
    DEFAULT_STATISTICS_SEED,
    RESULTS_DIR,
)
from evaltrace.errors import ResultFileError
from evaltrace.results import charts
from evaltrace.results._pages import asset, environment, source_hash
from evaltrace.results.comparison import RunComparison, Verdict, compare_runs
from evaltrace.results.folder import find_runs, load_result, write_atomically
from evaltrace.results.model import EntrySelection, RunResult
from evaltrace.results.report import confidence_label, print_rich, render_rich
from evaltrace.results.run_statistics import run_statistics
from evaltrace.results.scorecard import SCORECARD_FILE
from evaltrace.results.uncertainty import RunStatistics
from evaltrace.statistics import Interval, check_confidence, wilson_interval

if TYPE_CHECKING:
    pass

__all__ = [
    "HISTORY_FILE",
    "HISTORY_MEASURES",
    "DatasetHistory",
    "HistoryChange",
    "HistoryMeasure",
    "HistoryRun",
    "RunHistory",
    "dataset_part",
    "generate_history_html",
    "print_history",
    "register_history_measure",
    "render_history",
    "run_history",
    "save_history_page",
]

HISTORY_FILE: Final = "history.html"
"""The page ``evaltrace history`` writes into the (first) folder of runs it reads."""


# --- measures: figures of a run drawn over time beside the scores --------------------------


@dataclass(kw_only=True, frozen=True)
class HistoryMeasure:
    """A figure of a run shown over time beside its scores (latency, cost, ...).

    A run without it reads ``None``; a measure no run of a dataset has gets no chart and no
    column for that dataset.
    """

    name: str
    """Its column and chart title, such as ``"p95 latency"``."""
    unit: str
    """What its values are in, written after them (``"s"``, ``"USD"``)."""
    read: Callable[[RunResult], float | None]
    """Its value for a run (``None``: the run does not have it)."""
    digits: int = 3
    """Significant digits shown."""

    def text(self, value: float) -> str:
        """``value`` with its unit, as the table and the page write it."""
        return f"{value:.{self.digits}g} {self.unit}".rstrip()


HISTORY_MEASURES: dict[str, HistoryMeasure] = {}
"""Every measure a history shows, by name, in the order registered."""


def register_history_measure(measure: HistoryMeasure) -> HistoryMeasure:
    """Add ``measure`` to the history (replacing one of the same name).

    Example:
        >>> register_history_measure(HistoryMeasure(
        ...     name="entries", unit="", read=lambda result: float(len(result.entries))
        ... )).name
        'entries'
        >>> del HISTORY_MEASURES["entries"]
    """
    HISTORY_MEASURES[measure.name] = measure
    return measure


def _p95_latency(result: RunResult) -> float | None:
    """The 95th percentile of the app's wall time per entry (entries that ran it)."""
    durations = [entry.duration_s for entry in result.entries if entry.duration_s > 0]
    return float(np.percentile(durations, 95)) if durations else None


register_history_measure(HistoryMeasure(name="p95 latency", unit="s", read=_p95_latency))


# --- the history ----------------------------------------------------------------------------


class HistoryChange(BaseModel):
    """An evaluator's (or a dataset-level result's) verdict against the run before."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The evaluator, or the dataset-level result's key."""
    verdict: Verdict
    """Better, worse or no significant change (after Holm's correction)."""
    difference: float | None = None
    """The mean difference, this run minus the one before."""
    adjusted_p_value: float | None = None
    """The p-value after Holm's correction (``None``: nothing to test)."""


class HistoryRun(BaseModel):
    """One run as the history shows it: its figures, and its change against the run before."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    """The run's id."""
    name: str
    """What was run: the dataset's name."""
    folder: str
    """The run's folder, as found."""
    source: str | None = None
    """The dataset file it ran."""
    started_at: datetime | None = None
    """When it started."""
    interrupted: bool = False
    """Whether it was stopped before every entry ran."""
    entries: int = 0
    """Its entries."""
    passed: int = 0
    """Its entries that succeeded."""
    pass_rate_interval: Interval | None = None
    """The Wilson interval of ``passed / entries``."""
    statistics: RunStatistics | None = None
    """Each evaluator's mean and pass rate with their intervals (saved with the run, or
    computed from its entries for a run saved without them)."""
    measures: dict[str, float] = Field(default_factory=dict)
    """The run's value of each :data:`HISTORY_MEASURES` it has."""
    scorecard: str | None = None
    """Its ``scorecard.html``, when its folder has one."""
    previous: str | None = None
    """The run id of the run before it, which it was compared with."""
    changes: list[HistoryChange] = Field(default_factory=list)
    """The verdicts against the run before (empty for a dataset's first run, or without
    comparisons)."""

    @property
    def pass_rate(self) -> float | None:
        """The share of entries that succeeded (``None`` without entries)."""
        return self.passed / self.entries if self.entries else None

    @property
    def significant(self) -> list[HistoryChange]:
        """The changes found significant."""
        return [change for change in self.changes if change.verdict != "no significant change"]

    @property
    def mark(self) -> str:
        """How the run is marked: ``"worse"``, ``"better"`` or ``""``.

        Worse when something got significantly worse (whatever else got better).
        """
        verdicts = {change.verdict for change in self.changes}
        return "worse" if "worse" in verdicts else "better" if "better" in verdicts else ""


class DatasetHistory(BaseModel):
    """The runs of one dataset, oldest first."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The dataset's name (what its runs are named)."""
    part: str | None = None
    """The part of the dataset these runs were given, when not all of it:
    ``"shard 2/3"``, ``"entries matching -k 'smoke'"`` or both (:func:`dataset_part`)."""
    runs: list[HistoryRun]
    """Its runs, by when they started."""
    evaluators: list[str] = Field(default_factory=list)
    """Every evaluator of its runs, the latest run's order first."""
    measures: list[str] = Field(default_factory=list)
    """The :data:`HISTORY_MEASURES` at least one of its runs has."""

    @property
    def title(self) -> str:
        """The name, with the part in parentheses: ``"qa (shard 2/3)"``."""
        return self.name if self.part is None else f"{self.name} ({self.part})"


class RunHistory(BaseModel):
    """Every run found, by dataset, each compared with the run before it.

    Example:
        >>> RunHistory(datasets=[]).runs
        0
    """

    model_config = ConfigDict(frozen=True)

    datasets: list[DatasetHistory]
    """One per dataset, by name."""
    unfinished: list[str] = Field(default_factory=list)
    """Folders of runs that did not end (no ``result.json``), left out."""
    unreadable: list[str] = Field(default_factory=list)
    """Why each run whose ``result.json`` cannot be read was left out (naming the file)."""
    level: float = DEFAULT_SIGNIFICANCE
    """The significance level of the verdicts."""
    confidence: float = DEFAULT_CONFIDENCE
    """The confidence level of the comparisons' intervals (and of the statistics computed
    for runs saved without them)."""
    resamples: int = DEFAULT_RESAMPLES
    """The bootstrap's resamples (0: no comparison)."""
    seed: int = DEFAULT_STATISTICS_SEED
    """The seed of the resamples."""

    @property
    def runs(self) -> int:
        """How many runs it holds."""
        return sum(len(dataset.runs) for dataset in self.datasets)


def run_history(
    paths: Sequence[str | os.PathLike[str]] = (RESULTS_DIR,),
    *,
    level: float = DEFAULT_SIGNIFICANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_STATISTICS_SEED,
) -> RunHistory:
    """The history of every run under ``paths``.

    Args:
        paths: Folders of runs (searched at every depth) or runs' folders.
        level: The significance level of the verdicts against the run before.
        confidence: The confidence level of the comparisons' intervals.
        resamples: The bootstrap's resamples; 0 compares nothing and computes no statistics.
        seed: The seed of the resamples.

    Returns:
        The runs by dataset (the run's name), oldest first, each compared with the one before.

    Raises:
        ResultFileError: A path is not a folder of runs nor a run's folder (the message says
            what to give). A run whose ``result.json`` cannot be read is left out and listed
            in :attr:`RunHistory.unreadable` with why.
        ValueError: ``level`` or ``confidence`` is not between 0 and 1, or ``resamples`` < 0.
    """
    check_confidence(level, "level")
    check_confidence(confidence)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise ValueError(f"resamples must be a whole number >= 0, got {resamples!r}")
    found = find_runs(paths)
    by_dataset: dict[tuple[str, str], list[HistoryRun]] = {}
    unreadable: list[str] = []
    for folder in found.finished:
        try:
            result = load_result(folder)
        except ResultFileError as exc:  # one damaged run must not hide every other one
            unreadable.append(str(exc))
            continue
        run = _summary(result, folder, confidence, resamples, seed)
        # A shard's runs, or runs given an entry filter, hold other entries than whole runs:
        # each part of a dataset is its own series, compared only with itself.
        by_dataset.setdefault((run.name, dataset_part(result.selection) or ""), []).append(run)
    datasets = []
    for name, part in sorted(by_dataset):
        runs = sorted(by_dataset[name, part], key=_started)
        if resamples:
            runs = _compared(
                runs, level=level, confidence=confidence, resamples=resamples, seed=seed
            )
        datasets.append(
            DatasetHistory(
                name=name,
                part=part or None,
                runs=runs,
                evaluators=_evaluators(runs),
                measures=[
                    measure
                    for measure in HISTORY_MEASURES
                    if any(measure in run.measures for run in runs)
                ],
            )
        )
    return RunHistory(
        datasets=datasets,
        unfinished=[str(folder) for folder in found.unfinished],
        unreadable=unreadable,
        level=level,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


def dataset_part(selection: EntrySelection | None) -> str | None:
    """The part of its dataset a run was given, in words; ``None`` for the whole of it.

    Its text entry filter (``-k``) and its shard. An entry filter given as a function is not
    recorded by name, so its runs read as whole runs.

    Example:
        >>> dataset_part(EntrySelection(entries=9, digest="ab" * 32, shard=2, shards=3))
        'shard 2/3'
    """
    if selection is None:
        return None
    parts = []
    if selection.entry_filter is not None:
        parts.append(f"entries matching -k {selection.entry_filter!r}")
    if selection.shards > 1:
        parts.append(f"shard {selection.shard}/{selection.shards}")
    return ", ".join(parts) or None


def _summary(
    result: RunResult, folder: Path, confidence: float, resamples: int, seed: int
) -> HistoryRun:
    statistics = result.statistics
    if statistics is None and resamples:
        statistics = run_statistics(result, confidence=confidence, resamples=resamples, seed=seed)
    passed = sum(entry.status.passed for entry in result.entries)
    total = len(result.entries)
    measures = {}
    for measure in HISTORY_MEASURES.values():
        value = measure.read(result)
        if value is not None and math.isfinite(value):
            measures[measure.name] = value
    scorecard = folder / SCORECARD_FILE
    return HistoryRun(
        run_id=result.run_id or folder.name,
        name=result.name,
        folder=str(folder),
        source=result.source,
        started_at=result.started_at,
        interrupted=result.interrupted,
        entries=total,
        passed=passed,
        pass_rate_interval=wilson_interval(passed, total, confidence=confidence) if total else None,
        statistics=statistics,
        measures=measures,
        scorecard=str(scorecard) if scorecard.is_file() else None,
    )


def _started(run: HistoryRun) -> tuple[float, str]:
    # A run saved without its start time sorts by its id (which is its start time in UTC).
    return (run.started_at.timestamp() if run.started_at else -math.inf, run.run_id)


def _compared(
    runs: list[HistoryRun], *, level: float, confidence: float, resamples: int, seed: int
) -> list[HistoryRun]:
    """Each run with its verdicts against the run before.

    The runs are read again in turn: two runs' entries in memory at a time, not every run's.
    """
    if not runs:
        return runs
    compared = runs[:1]
    before = load_result(runs[0].folder)
    for run in runs[1:]:
        after = load_result(run.folder)
        comparison = compare_runs(
            before, after, level=level, confidence=confidence, resamples=resamples, seed=seed
        )
        compared.append(
            run.model_copy(
                update={"previous": before.run_id or None, "changes": _changes(comparison)}
            )
        )
        before = after
    return compared


def _changes(comparison: RunComparison) -> list[HistoryChange]:
    changes = [
        HistoryChange(
            name=item.evaluator,
            verdict=item.verdict,
            difference=item.mean_difference,
            adjusted_p_value=item.adjusted_p_value,
        )
        for item in comparison.evaluators
    ]
    changes += [
        HistoryChange(
            name=item.key,
            verdict=item.verdict,
            difference=item.difference,
            adjusted_p_value=item.adjusted_p_value,
        )
        for item in comparison.dataset_results
    ]
    return changes


def _evaluators(runs: Sequence[HistoryRun]) -> list[str]:
    names: dict[str, None] = {}
    for run in reversed(runs):
        if run.statistics is not None:
            names.update(dict.fromkeys(item.evaluator for item in run.statistics.evaluators))
    return list(names)


# --- the printed table ----------------------------------------------------------------------


def print_history(history: RunHistory, *, file: TextIO | None = None) -> None:
    """Print one table per dataset (plain ASCII when not to a terminal, or under ``CI``)."""
    print_rich(lambda plain: _tables(history, plain=plain), file)


def render_history(history: RunHistory, *, plain: bool = True, width: int | None = None) -> str:
    r"""The tables :func:`print_history` prints, as text.

    Example:
        >>> render_history(RunHistory(datasets=[]))
        'No runs.\n'
    """
    return render_rich(_tables(history, plain=plain), plain=plain, width=width)


def _tables(history: RunHistory, *, plain: bool) -> RenderableType:
    if not history.datasets:
        return Text("No runs.")
    level = confidence_label(history.confidence)
    parts: list[RenderableType] = []
    for dataset in history.datasets:
        # Every text is a Text, not markup: a name such as "[red]" is shown as written.
        table = Table(
            title=Text(printable(f"{dataset.title}: {len(dataset.runs)} runs")),
            title_justify="left",
            box=box.ASCII2 if plain else box.ROUNDED,
            safe_box=plain,
        )
        for column in ("run", "started", "entries", "passed"):
            table.add_column(column, no_wrap=True)
        for name in dataset.evaluators:
            table.add_column(Text(printable(f"{name} mean [{level}] (n)")), no_wrap=True)
        for name in dataset.measures:
            table.add_column(Text(printable(name)), no_wrap=True)
        table.add_column("against the run before")
        for run in dataset.runs:
            style = "red" if run.mark == "worse" else "green" if run.mark == "better" else ""
            table.add_row(
                *(Text(printable(cell)) for cell in _row(run, dataset)),
                style=None if plain else style,
            )
        parts.append(table)
    notes = [
        f"Means with {level} intervals; each run is compared with the run before it by "
        f"paired tests (Holm's correction, level {history.level:g})."
        if history.resamples
        else "No intervals nor comparisons (--resamples 0)."
    ]
    if history.unfinished:
        notes.append(
            f"Left out, runs that did not end (no result.json): {', '.join(history.unfinished)}"
        )
    notes += [f"Left out: {problem}" for problem in history.unreadable]
    return Group(*parts, *(Text(printable(note)) for note in notes))


def _row(run: HistoryRun, dataset: DatasetHistory) -> list[str]:
    cells = [
        run.run_id + (" (interrupted)" if run.interrupted else ""),
        _when(run.started_at) if run.started_at else "-",
        f"{run.entries:,}",
        "-" if run.pass_rate is None else f"{run.passed:,} ({100 * run.pass_rate:.1f}%)",
    ]
    for name in dataset.evaluators:
        item = run.statistics.evaluator(name) if run.statistics is not None else None
        cells.append(
            "-" if item is None else f"{_estimate(item.mean, item.mean_interval)} ({item.n})"
        )
    for name in dataset.measures:
        value = run.measures.get(name)
        cells.append("-" if value is None else HISTORY_MEASURES[name].text(value))
    cells.append(_change_text(run))
    return cells


def _change_text(run: HistoryRun) -> str:
    if run.previous is None:
        return "-"
    if not run.significant:
        return "no significant change"
    return "; ".join(
        f"{change.verdict}: {change.name}"
        + ("" if change.difference is None else f" {change.difference:+.3f}")
        + ("" if change.adjusted_p_value is None else f", p = {_p(change.adjusted_p_value)}")
        for change in sorted(run.significant, key=lambda change: change.verdict != "worse")
    )


def _estimate(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "-"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval.low:.3f}, {interval.high:.3f}]"


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


# --- the page -------------------------------------------------------------------------------


_Value = tuple[float, tuple[float, float] | None, str, str | None, str]
"""A run's value on a chart: value, interval, tooltip, link, mark (see charts.series_chart)."""


@dataclass(kw_only=True, frozen=True)
class _Chart:
    key: str
    chart: charts.SeriesChart


@dataclass(kw_only=True, frozen=True)
class _Row:
    run_id: str
    href: str | None
    mark: str
    cells: list[str]
    change: str


@dataclass(kw_only=True, frozen=True)
class _Dataset:
    name: str
    sources: list[str]
    runs: int
    span: str
    charts: list[_Chart]
    columns: list[str]
    rows: list[_Row]


def generate_history_html(history: RunHistory, *, page: str | os.PathLike[str]) -> str:
    """Render the history as one self-contained HTML page.

    Args:
        history: The history.
        page: Where the page will be written: its links to the runs' scorecards are relative
            to its folder.

    Returns:
        The page. It loads nothing and runs no script.

    Example:
        >>> generate_history_html(RunHistory(datasets=[]), page="history.html")[:15]
        '<!DOCTYPE html>'
    """
    import markupsafe

    where = Path(os.path.abspath(Path(page).parent))
    style = asset("history.css")
    policy = (
        f"default-src 'none'; style-src '{source_hash(style)}'; img-src data:; base-uri 'none'; "
        "form-action 'none'"
    )
    return (
        environment()
        .get_template("history.html.j2")
        .render(
            history=history,
            level=confidence_label(history.confidence),
            datasets=[_dataset_view(dataset, history, where) for dataset in history.datasets],
            csp=policy,
            style=markupsafe.Markup(style),
        )
    )


def save_history_page(history: RunHistory, path: str | os.PathLike[str]) -> Path:
    """Write the history's page to ``path`` (replaced whole, never left half-written).

    Returns:
        The path written.

    Raises:
        ResultsFolderError: It cannot be written.
    """
    target = Path(path)
    html = generate_history_html(history, page=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, html)
    return target


def _dataset_view(dataset: DatasetHistory, history: RunHistory, where: Path) -> _Dataset:
    runs = dataset.runs
    level = confidence_label(history.confidence)
    links = [_link(run.scorecard, where) for run in runs]
    dates = [
        run.started_at.strftime("%m-%d %H:%M") if run.started_at else run.run_id for run in runs
    ]
    found: list[_Chart] = []
    for name in dataset.evaluators:
        values: list[_Value] = []
        labels = []
        for run, link, date in zip(runs, links, dates, strict=True):
            item = run.statistics.evaluator(name) if run.statistics is not None else None
            if item is None or item.mean is None:
                continue
            change = next((c for c in run.changes if c.name == name), None)
            interval = item.mean_interval
            figure = f"mean {_estimate(item.mean, interval)}, n = {item.n}"
            mark = (
                ""
                if change is None or change.verdict == "no significant change"
                else change.verdict
            )
            values.append((item.mean, _bounds(interval), _tooltip(run, figure, change), link, mark))
            labels.append(date)
        if values:
            title = f"{name}: mean score with its {level} interval"
            chart = charts.series_chart(title, values, x_labels=labels)
            found.append(_Chart(key=f"evaluator:{name}", chart=chart))
    rates: list[_Value] = []
    labels = []
    for run, link, date in zip(runs, links, dates, strict=True):
        if run.pass_rate is None:
            continue
        figure = f"{run.passed:,} of {run.entries:,} entries succeeded"
        rates.append(
            (run.pass_rate, _bounds(run.pass_rate_interval), _tooltip(run, figure), link, run.mark)
        )
        labels.append(date)
    if rates:
        title = f"pass rate (entries that succeeded) with its {level} Wilson interval"
        found.append(
            _Chart(key="pass-rate", chart=charts.series_chart(title, rates, x_labels=labels))
        )
    for name in dataset.measures:
        measure = HISTORY_MEASURES[name]
        points: list[_Value] = []
        labels = []
        for run, link, date in zip(runs, links, dates, strict=True):
            value = run.measures.get(name)
            if value is not None:
                points.append((value, None, _tooltip(run, measure.text(value)), link, ""))
                labels.append(date)
        chart = charts.series_chart(
            f"{name} ({measure.unit})" if measure.unit else name,
            points,
            x_labels=labels,
            ceiling=None,
            digits=measure.digits,
        )
        found.append(_Chart(key=f"measure:{name}", chart=chart))
    columns = [
        "run",
        "started",
        "entries",
        "passed",
        *(f"{name} mean [{level}] (n)" for name in dataset.evaluators),
        *dataset.measures,
    ]
    rows = []
    for run, link in zip(runs, links, strict=True):
        cells = _row(run, dataset)
        rows.append(
            _Row(run_id=cells[0], href=link, mark=run.mark, cells=cells[1:-1], change=cells[-1])
        )
    first, last = runs[0].started_at, runs[-1].started_at
    return _Dataset(
        name=dataset.title,
        sources=sorted({run.source for run in runs if run.source}),
        runs=len(runs),
        span=(
            ""
            if first is None or last is None
            else f"on {_when(first)}"
            if len(runs) == 1
            else f"from {_when(first)} to {_when(last)}"
        ),
        charts=found,
        columns=columns,
        rows=rows,
    )


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _bounds(interval: Interval | None) -> tuple[float, float] | None:
    return None if interval is None else (interval.low, interval.high)


def _tooltip(run: HistoryRun, figure: str, change: HistoryChange | None = None) -> str:
    when = _when(run.started_at) if run.started_at else "start unknown"
    lines = [f"{run.run_id} ({when})", figure]
    if change is not None and change.verdict != "no significant change":
        p = "" if change.adjusted_p_value is None else f", p = {_p(change.adjusted_p_value)}"
        lines.append(f"{change.verdict} than the run before{p}")
    elif change is None and run.significant:
        lines.append(_change_text(run))
    if run.scorecard is None:
        lines.append(f"no {SCORECARD_FILE} in {run.folder}")
    return "\n".join(lines)


def _link(scorecard: str | None, where: Path) -> str | None:
    """The scorecard's path relative to the page's folder, every part percent-encoded.

    So that no folder name can be read as a URL's scheme, query or fragment.
    """
    if scorecard is None:
        return None
    relative = os.path.relpath(os.path.abspath(scorecard), where)
    return "/".join(quote(part, safe="") for part in Path(relative).parts)
