r"""The HTML scorecard: one self-contained page to review a run.

:meth:`DatasetScorecard.from_run` (or :meth:`~DatasetScorecard.from_folder`) gathers what a
reviewer looks at from a saved :class:`~evaltrace.results.model.RunResult`, its stored traces
and, optionally, a baseline run; :func:`generate_dataset_scorecard_html` renders it and
:func:`save_dataset_scorecard` writes it. The page holds a summary (pass rate, statuses, wall
time, the run's settings), a sortable and filterable grid of entries by evaluators coloured by
score, charts (score distribution per evaluator, the spread of repeated judges' runs), the
dataset-level results (precision, recall, F-beta, confusion matrix), and per entry a detail
view with its input, output, expectation, metadata, every evaluation and its trace.

The page is one file that makes no request: its stylesheet and script are inline (allowed by
hash in its Content-Security-Policy, which also forbids every fetch), it is rendered by jinja2
with autoescaping, and the run's data travels as JSON in a
``<script type="application/json">`` element with ``<``, ``>``, ``&``, U+2028 and U+2029
written as ``\uXXXX`` escapes, so no value can close the element or be read as markup. The
script puts data on the page only as text.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from evaltrace._safe_text import exception_message
from evaltrace.checks import check_count
from evaltrace.constants import (
    DEFAULT_THRESHOLD,
    SCORECARD_CHUNK_ENTRIES,
    SCORECARD_INLINE_ENTRIES,
    SCORECARD_TRACE_SPANS,
)
from evaltrace.errors import TraceFormatError
from evaltrace.evals.evaluable import NamedData, Unset, checked_model
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.judges.strategies import RepeatedDetails
from evaltrace.llm.calls import ModelUsage, total_usage
from evaltrace.llm.prices import PriceTable
from evaltrace.metrics.classification import ClassificationDetails
from evaltrace.results import charts
from evaltrace.results._pages import asset, environment, source_hash
from evaltrace.results.comparison import RunComparison, compare_runs
from evaltrace.results.folder import RESULT_FILE, TRACES_FILE, load_result, write_atomically_with
from evaltrace.results.model import CompletionStatus, EntryResult, RunResult
from evaltrace.results.report import SMALL_SAMPLE, confidence_label
from evaltrace.results.trace_tree import TraceMessage, TraceSpan, compact_trace, roots_by_trace_id
from evaltrace.results.uncertainty import RunStatistics
from evaltrace.results.usage import LatencySummary, RunCost
from evaltrace.statistics import Interval
from evaltrace.trace import ObservationNode, load_traces

if TYPE_CHECKING:
    pass

__all__ = [
    "SCORECARD_FILE",
    "BaselineSummary",
    "DatasetEntryResult",
    "DatasetScorecard",
    "EvaluatorSummary",
    "ScorecardWriter",
    "generate_dataset_scorecard_html",
    "save_dataset_scorecard",
    "scorecard_row",
    "write_scorecard",
]

SCORECARD_FILE: Final = "scorecard.html"
"""The scorecard written into a results folder."""

_DATA_MARK: Final = "<evaltrace-scorecard-data>"
_NOT_IN_DATA: Final[set[str]] = {
    "entries",
    "dataset_results",
    "settings",
    "baseline_evaluator_means",
    "statistics",
    "comparison",
    "usage",
    "latency",
    "cost",
}
"""What the page's data leaves out of the card: the template shows it, or it comes apart."""
_HEAT_LEVELS: Final = 10
_SCRIPT_JSON_ESCAPES: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


class DatasetEntryResult(BaseModel):
    """One entry as the scorecard shows it: the saved entry, its trace, its baseline scores."""

    model_config = ConfigDict(frozen=True)

    index: int
    """The entry's position in the run."""
    name: str
    """The entry's name."""
    description: str | None = None
    """Its human-readable label."""
    status: CompletionStatus
    """How it ended."""
    input: JsonValue = None
    """What the runnable was given."""
    eval_input: list[NamedData] = Field(default_factory=list)
    """The named inputs it was served."""
    output: JsonValue = None
    """What the runnable returned."""
    eval_output: list[NamedData] | None = None
    """What the evaluators scored."""
    has_expectation: bool = False
    """Whether the entry gave an expectation (which may be ``None``)."""
    expectation: JsonValue = None
    """The expectation, when given."""
    metadata: dict[str, JsonValue] | None = None
    """The entry's ``eval_metadata``."""
    evaluations: list[Evaluation] = Field(default_factory=list)
    """One evaluation per evaluator applied to it."""
    error: EvaluationError | None = None
    """What failed before the evaluators ran."""
    duration_s: float = 0.0
    """Wall time of the runnable."""
    trace_ids: list[str] = Field(default_factory=list)
    """Its traces' ids."""
    trace: list[TraceSpan] = Field(default_factory=list)
    """Its trace as a compact tree (empty when no trace was given or found)."""
    trace_problem: str | None = None
    """Why its trace is not shown, when traces were given but it is missing from them."""
    in_baseline: bool = False
    """Whether the baseline run has an entry of the same name."""
    baseline_status: CompletionStatus | None = None
    """The entry's status in the baseline run."""
    baseline_scores: dict[str, float | None] = Field(default_factory=dict)
    """The baseline's score per evaluator (``None``: it errored or skipped there)."""
    model_calls: int = 0
    """The app's model calls."""
    tokens: int = 0
    """Their input and output tokens."""
    cost: float | None = None
    """What they cost by the run's price table; ``None``: unknown (no table, or a call it
    cannot price)."""

    @classmethod
    def from_entry(
        cls,
        entry: EntryResult,
        *,
        trace: Sequence[ObservationNode] = (),
        trace_problem: str | None = None,
        baseline: EntryResult | None = None,
        prices: PriceTable | None = None,
    ) -> DatasetEntryResult:
        """The scorecard's view of a saved entry, its trace roots and its baseline entry."""
        return scorecard_row(
            entry, trace=trace, trace_problem=trace_problem, baseline=baseline, prices=prices
        )


def scorecard_row(
    entry: EntryResult,
    *,
    trace: Sequence[ObservationNode] = (),
    trace_problem: str | None = None,
    baseline: EntryResult | None = None,
    prices: PriceTable | None = None,
) -> DatasetEntryResult:
    """One entry's row of the scorecard: the one place a row is built.

    A run that writes its scorecard as it goes (:class:`ScorecardWriter`) and a page built
    from a saved run (:meth:`DatasetScorecard.from_run`) both build their rows here.

    Args:
        entry: The saved entry.
        trace: Its trace's roots (drawn as a compact tree).
        trace_problem: Why its trace is not shown, when it is missing.
        baseline: The baseline run's entry of the same name, if any.
        prices: The run's price table, for the entry's cost (unknown without one).

    Example:
        >>> scorecard_row(EntryResult(index=0, name="a")).name
        'a'
    """
    fields: dict[str, Any] = {
        "index": entry.index,
        "name": entry.name,
        "description": entry.description,
        "status": entry.status,
        "input": entry.input,
        "eval_input": entry.eval_input,
        "output": entry.output,
        "eval_output": entry.eval_output,
        "has_expectation": entry.has_expectation,
        "expectation": None if isinstance(entry.expectation, Unset) else entry.expectation,
        "metadata": entry.eval_metadata,
        "evaluations": [
            evaluation.with_evaluator(_position_name(position))
            for position, evaluation in enumerate(entry.evaluations)
        ],
        "error": entry.error,
        "duration_s": entry.duration_s,
        "trace_ids": entry.trace_ids,
        "trace": compact_trace(trace),
        "trace_problem": trace_problem,
        "in_baseline": baseline is not None,
        "baseline_status": None if baseline is None else baseline.status,
        "baseline_scores": (
            {}
            if baseline is None
            else {
                evaluation.evaluator or _position_name(position): evaluation.score
                for position, evaluation in enumerate(baseline.evaluations)
            }
        ),
        **_entry_spend(entry, prices),
    }
    # Every value comes from a saved entry, validated already, or is built here: validating
    # the row again was a tenth of adding it (bench_cli.py's --traces row, bench/README.md).
    return checked_model(DatasetEntryResult, fields)


class EvaluatorSummary(BaseModel):
    """How one evaluator did over the run."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The evaluator's display name."""
    applied: int
    """Entries it was applied to."""
    scored: int
    """Entries it scored."""
    passed: int
    """Entries whose score reached the run's threshold."""
    errored: int
    """Entries where it failed."""
    skipped: int
    """Entries it declined to score."""
    mean: float | None
    """Its mean score over the scored entries."""
    labels: dict[str, int] = Field(default_factory=dict)
    """How many entries it gave each label, most frequent first (empty: it gave none)."""
    baseline_mean: float | None = None
    """Its mean score in the baseline run."""


class BaselineSummary(BaseModel):
    """The baseline run a scorecard compares with."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The baseline run's name."""
    run_id: str
    """Its run id."""
    total: int
    """Its entries."""
    passed: int
    """Its entries that succeeded."""
    matched: int
    """Entries of this run found in the baseline (by name)."""
    only_in_baseline: int
    """Baseline entries with no entry of that name in this run."""


class DatasetScorecard(BaseModel):
    """Everything a scorecard page shows, built from a saved run.

    Example:
        >>> card = DatasetScorecard.from_run(RunResult(name="demo"))
        >>> card.pass_rate
        0.0
    """

    model_config = ConfigDict(frozen=True)

    name: str
    """What was run."""
    run_id: str = ""
    """The run's id."""
    source: str | None = None
    """The dataset file, when the run came from one."""
    started_at: datetime | None = None
    """When the run started."""
    finished_at: datetime | None = None
    """When it finished."""
    duration_s: float = 0.0
    """Its wall time."""
    threshold: float = DEFAULT_THRESHOLD
    """The score an evaluation had to reach to pass."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """How the run was made (model, judge, concurrency, ...)."""
    evaluators: list[str] = Field(default_factory=list)
    """Every evaluator of the run, the run's order first (entries may use different ones)."""
    entries: list[DatasetEntryResult] = Field(default_factory=list)
    """The entries, in run order."""
    dataset_results: dict[str, Evaluation] = Field(default_factory=dict)
    """Dataset-level results (precision, recall, F-beta, confusion matrix, ...)."""
    baseline: BaselineSummary | None = None
    """The run compared with, if any."""
    baseline_evaluator_means: dict[str, float | None] = Field(default_factory=dict)
    """Each evaluator's mean score in the baseline run."""
    problems: list[str] = Field(default_factory=list)
    """What could not be shown and why (an unreadable trace file, ...)."""
    statistics: RunStatistics | None = None
    """The run's means and pass rates with their intervals (as saved with the run)."""
    comparison: RunComparison | None = None
    """The paired tests and verdicts against the baseline, when one is given."""
    usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """The app's model calls of the run, by model."""
    latency: LatencySummary | None = None
    """The app's latency over the run's entries."""
    cost: RunCost | None = None
    """What the run cost, when it had a price table."""
    currency: str = "USD"
    """The currency of the entries' costs."""

    @classmethod
    def from_run(
        cls,
        result: RunResult,
        *,
        traces: str | os.PathLike[str] | Sequence[ObservationNode] | None = None,
        baseline: RunResult | str | os.PathLike[str] | None = None,
    ) -> DatasetScorecard:
        """Build the scorecard of a run.

        Args:
            result: The run.
            traces: Its stored traces: the ``traces.jsonl`` path, or loaded roots. Each entry's
                trace is found by its ``trace_ids``. An unreadable file is reported on the page.
            baseline: A run to compare with (a :class:`RunResult`, a results folder or a
                ``result.json``): entries are matched by name and each cell shows its delta,
                and each evaluator gets a verdict from paired tests
                (:func:`~evaltrace.results.comparison.compare_runs`, at the run's confidence,
                resamples and seed).

        Returns:
            The scorecard.

        Raises:
            ResultFileError: ``baseline`` is a path that holds no readable saved run.
        """
        problems: list[str] = []
        by_id: dict[str, list[ObservationNode]] | None = None
        traces_name = "the traces given"
        if isinstance(traces, str | os.PathLike):
            traces_name = os.fspath(traces)
            try:
                by_id = roots_by_trace_id(load_traces(traces))
            except (TraceFormatError, OSError) as exc:
                problems.append(f"Traces are not shown: {exception_message(exc)}")
        elif traces is not None:
            by_id = roots_by_trace_id(traces)
        base = _read_result(baseline) if baseline is not None else None
        matches = _match_baseline(result.entries, base.entries if base is not None else [])
        entries = []
        for entry in result.entries:
            roots: list[ObservationNode] = []
            problem = None
            if by_id is not None:
                missing = [tid for tid in entry.trace_ids if tid.lower() not in by_id]
                roots = [root for tid in entry.trace_ids for root in by_id.get(tid.lower(), ())]
                if missing:
                    problem = f"trace {', '.join(missing)} is not in {traces_name}"
            entries.append(
                DatasetEntryResult.from_entry(
                    entry,
                    trace=roots,
                    trace_problem=problem,
                    baseline=matches.get(entry.index),
                    prices=result.prices,
                )
            )
        return _card(
            result,
            evaluators=_evaluator_names(result),
            entries=entries,
            baseline=base,
            matched=len(matches),
            problems=problems,
        )

    @classmethod
    def from_folder(
        cls,
        path: str | os.PathLike[str],
        *,
        baseline: RunResult | str | os.PathLike[str] | None = None,
    ) -> DatasetScorecard:
        """Build the scorecard of a results folder (``result.json`` and ``traces.jsonl``).

        Args:
            path: The results folder, or its ``result.json`` (the traces are read from the
                ``traces.jsonl`` beside it, when there is one).
            baseline: A run to compare with, as for :meth:`from_run`.

        Raises:
            ResultFileError: No readable ``result.json`` is there.
        """
        where = Path(path)
        result_file = where / RESULT_FILE if where.is_dir() else where
        result = _read_result(result_file)
        traces = result_file.parent / TRACES_FILE
        card = cls.from_run(result, traces=traces if traces.is_file() else None, baseline=baseline)
        if traces.is_file() or not any(entry.trace_ids for entry in result.entries):
            return card
        note = f"Traces are not shown: there is no {TRACES_FILE} beside {result_file}."
        return card.model_copy(update={"problems": [*card.problems, note]})

    @property
    def passed(self) -> int:
        """Entries that succeeded."""
        return self._tally().passed

    @property
    def pass_rate(self) -> float:
        """The share of entries that succeeded (0.0 for an empty run)."""
        return self._tally().pass_rate

    @property
    def status_counts(self) -> dict[CompletionStatus, int]:
        """Entries per status, in the order of :class:`CompletionStatus`, zeros left out."""
        return self._tally().status_counts()

    def evaluator_summaries(self) -> list[EvaluatorSummary]:
        """How each evaluator did, in :attr:`evaluators` order."""
        return self._tally().summaries(self.evaluators, self.baseline_evaluator_means)

    def _tally(self) -> _Tally:
        tally = _Tally(self.threshold)
        for entry in self.entries:
            tally.add(entry)
        return tally


class _EvaluatorTally:
    """One evaluator's counts over the rows seen so far."""

    __slots__ = ("applied", "errored", "labels", "passed", "scores", "skipped")

    def __init__(self) -> None:
        self.applied = 0
        self.passed = 0
        self.errored = 0
        self.skipped = 0
        self.labels: Counter[str] = Counter()
        self.scores = array("d")  # 8 bytes a score: what the histogram and the mean need


_LISTED_FAILURES: Final = 10
"""How many entries that did not pass the top of the page lists (the grid has them all)."""


@dataclass(frozen=True, kw_only=True)
class _Failing:
    """An entry that did not pass, as the top of the page lists it."""

    index: int
    name: str
    status: str
    why: str


def _failing(row: DatasetEntryResult, threshold: float) -> _Failing:
    """Why ``row`` did not pass: its error, else its first evaluation below the threshold."""
    why = ""
    if row.error is not None:
        why = f"{row.error.type}: {row.error.message}"
    else:
        for evaluation in row.evaluations:
            if evaluation.error is not None or not evaluation.passed(threshold):
                score = "" if evaluation.score is None else f" {evaluation.score:.2f}"
                why = f"{evaluation.evaluator}{score}: {evaluation.reasoning}".rstrip(": ")
                break
    if len(why) > 160:
        why = why[:157] + "..."
    return _Failing(index=row.index, name=row.name, status=row.status.value, why=why)


class _Tally:
    """What the page's summary and charts need of the rows, kept as the rows are added."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.total = 0
        self.passed = 0
        self.counts: Counter[CompletionStatus] = Counter()
        self.evaluators: dict[str, _EvaluatorTally] = {}
        # Per repeated evaluator, per entry: its runs' scores and its score (a few floats).
        self.repeated: dict[str, dict[str, tuple[list[float], float | None]]] = {}
        # The first entries that did not pass, listed at the top of the page (a few strings).
        self.failing: list[_Failing] = []

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def add(self, row: DatasetEntryResult) -> None:
        self.total += 1
        self.passed += row.status.passed
        self.counts[row.status] += 1
        if not row.status.passed and len(self.failing) < _LISTED_FAILURES:
            self.failing.append(_failing(row, self.threshold))
        for evaluation in row.evaluations:
            name = evaluation.evaluator or ""
            tally = self.evaluators.get(name)
            if tally is None:
                tally = self.evaluators[name] = _EvaluatorTally()
            tally.applied += 1
            tally.passed += evaluation.passed(self.threshold)
            tally.errored += evaluation.error is not None
            tally.skipped += evaluation.skipped
            if evaluation.score is not None:
                tally.scores.append(evaluation.score)
            if evaluation.label is not None:
                tally.labels[evaluation.label] += 1
            details = _repeated_details(evaluation)
            if details is not None and evaluation.evaluator is not None:
                scores = [run.score for run in details.runs if run.score is not None]
                label = f"{row.name} (#{row.index})"
                self.repeated.setdefault(evaluation.evaluator, {})[label] = (
                    scores,
                    evaluation.score,
                )

    def status_counts(self) -> dict[CompletionStatus, int]:
        return {status: self.counts[status] for status in CompletionStatus if self.counts[status]}

    def summaries(
        self, names: Sequence[str], baseline_means: dict[str, float | None]
    ) -> list[EvaluatorSummary]:
        summaries = []
        for name in names:
            tally = self.evaluators.get(name) or _EvaluatorTally()
            scores = tally.scores
            summaries.append(
                EvaluatorSummary(
                    name=name,
                    applied=tally.applied,
                    scored=len(scores),
                    passed=tally.passed,
                    errored=tally.errored,
                    skipped=tally.skipped,
                    mean=sum(scores) / len(scores) if scores else None,
                    labels=dict(tally.labels.most_common()),
                    baseline_mean=baseline_means.get(name),
                )
            )
        return summaries


class ScorecardWriter:
    """A run's scorecard page, built as its entries finish, in memory that does not grow.

    Each row (:func:`scorecard_row`) is written at once to a temporary file as JSON lines
    (whole, and as the grid shows it); what the summary and charts need is tallied
    (:class:`_Tally`: counts, and 8 bytes a score). :meth:`write` then writes the page,
    streaming the rows into it. Up to
    :data:`~evaltrace.constants.SCORECARD_INLINE_ENTRIES` entries, the page's data holds every
    entry whole; a larger run's holds the grid's columns of each entry, and each entry whole
    in chunks of :data:`~evaltrace.constants.SCORECARD_CHUNK_ENTRIES` that the page parses
    when it needs them (its detail view, the text filter). Either way the page is one
    self-contained file.

    Example:
        >>> with ScorecardWriter(threshold=0.5) as writer:  # doctest: +SKIP
        ...     for entry in entries:
        ...         writer.add_entry(entry, trace=roots_of(entry))
        ...     writer.write("scorecard.html", run)
    """

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        baseline: RunResult | None = None,
        prices: PriceTable | None = None,
        inline_entries: int = SCORECARD_INLINE_ENTRIES,
        chunk_entries: int = SCORECARD_CHUNK_ENTRIES,
    ) -> None:
        """Start an empty page.

        Args:
            threshold: The score an evaluation must reach to pass.
            baseline: A run to compare with: each entry added is matched with the first
                baseline entry of its name not matched yet.
            prices: The run's price table, for each entry's cost (unknown without one).
            inline_entries: Up to this many entries, the page holds every entry whole in its
                one data element.
            chunk_entries: Entries per chunk of a larger run's page.

        Raises:
            ValueError: ``chunk_entries`` is not a whole number >= 1.
        """
        if isinstance(inline_entries, bool) or not isinstance(inline_entries, int):
            raise TypeError(f"inline_entries must be a whole number, got {inline_entries!r}")
        self._inline = max(inline_entries, 0)
        self._chunk = check_count(chunk_entries, "chunk_entries")
        self._tally = _Tally(threshold)
        self._baseline = baseline
        self._prices = prices
        self._unmatched: dict[str, list[EntryResult]] = {}
        for entry in baseline.entries if baseline is not None else ():
            self._unmatched.setdefault(entry.name, []).append(entry)
        self._matched = 0
        self._whole: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._grid: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")

    @property
    def entries(self) -> int:
        """The rows added so far."""
        return self._tally.total

    def add_entry(
        self,
        entry: EntryResult,
        *,
        trace: Sequence[ObservationNode] = (),
        trace_problem: str | None = None,
    ) -> None:
        """Add a finished entry's row (with its trace and its baseline entry, if any)."""
        candidates = self._unmatched.get(entry.name)
        baseline = candidates.pop(0) if candidates else None
        self._matched += baseline is not None
        self.add(
            scorecard_row(
                entry,
                trace=trace,
                trace_problem=trace_problem,
                baseline=baseline,
                prices=self._prices,
            )
        )

    def add(self, row: DatasetEntryResult) -> None:
        """Add a row: tallied, and written to the page's data at once."""
        self._tally.add(row)
        self._whole.write(row.model_dump_json(exclude_defaults=True))
        self._whole.write("\n")
        self._grid.write(row.model_dump_json(include=_GRID_FIELDS, exclude_defaults=True))
        self._grid.write("\n")

    def write(
        self,
        path: str | os.PathLike[str],
        run: RunResult,
        *,
        problems: Sequence[str] = (),
    ) -> Path:
        """Write the page of ``run`` with the rows added, replacing ``path`` whole.

        Args:
            path: Where the page goes.
            run: The run (its name, settings, counts, statistics, dataset-level results);
                its entries, when it holds them, are used only for the comparison with the
                baseline (paired by name).
            problems: What could not be shown and why.

        Returns:
            The path written.

        Raises:
            ResultsFolderError: The page cannot be written (none is left half-written).
        """
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        header = self._header(run, problems)

        def write(stream: io.BufferedWriter) -> None:
            text = io.TextIOWrapper(stream, encoding="utf-8", write_through=False)
            self.render(text, header)
            text.flush()
            text.detach()

        write_atomically_with(target, write)  # with the permissions of the run's other files
        return target

    def render(self, out: IO[str], header: DatasetScorecard) -> None:
        """Write the page to ``out``: ``header``'s run (its entries are not read) and the rows."""
        _render(out, header, self._tally, self._data)

    def close(self) -> None:
        """Remove the temporary files of the rows."""
        self._whole.close()
        self._grid.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _header(self, run: RunResult, problems: Sequence[str]) -> DatasetScorecard:
        base = self._baseline
        names = dict.fromkeys(run.evaluators)
        for name in self._tally.evaluators:
            names.setdefault(name)
        return _card(
            run,
            evaluators=list(names),
            entries=[],
            baseline=base,
            matched=self._matched,
            problems=list(problems),
        )

    def _data(self, out: IO[str], header: DatasetScorecard) -> None:
        """The page's data elements, each row streamed from its temporary file."""
        chunked = self._tally.total > self._inline
        rows = self._grid if chunked else self._whole
        body = header.model_dump_json(exclude=_NOT_IN_DATA, exclude_defaults=True)
        out.write('<script type="application/json" id="scorecard-data">')
        out.write(
            f'{{"defaults":{_defaults_json()},"chunk":{self._chunk if chunked else 0},'
            f'"trace_spans":{SCORECARD_TRACE_SPANS},"card":'.translate(_SCRIPT_JSON_ESCAPES)
        )
        out.write(body[:-1].translate(_SCRIPT_JSON_ESCAPES))
        out.write(',"entries":[' if body != "{}" else '"entries":[')
        rows.flush()
        rows.seek(0)
        for number, line in enumerate(rows):
            if number:
                out.write(",")
            out.write(line.rstrip("\n").translate(_SCRIPT_JSON_ESCAPES))
        out.write("]}}</script>\n")
        if not chunked:
            return
        whole = self._whole
        whole.flush()
        whole.seek(0)
        for number, line in enumerate(whole):
            if number % self._chunk == 0:
                if number:
                    out.write("]</script>\n")
                chunk = number // self._chunk
                out.write(f'<script type="application/json" id="scorecard-chunk-{chunk}">[')
            else:
                out.write(",")
            out.write(line.rstrip("\n").translate(_SCRIPT_JSON_ESCAPES))
        out.write("]</script>\n")


def generate_dataset_scorecard_html(scorecard: DatasetScorecard | RunResult) -> str:
    """Render a scorecard as one self-contained HTML page.

    Args:
        scorecard: The scorecard, or a run (rendered without traces or baseline).

    Returns:
        The page. It loads nothing: style, script and data are inline.

    Example:
        >>> html = generate_dataset_scorecard_html(RunResult(name="demo"))
        >>> html.startswith("<!DOCTYPE html>")
        True
    """
    card = (
        scorecard
        if isinstance(scorecard, DatasetScorecard)
        else DatasetScorecard.from_run(scorecard)
    )
    page = io.StringIO()
    with _writer_of(card) as writer:
        writer.render(page, card)
    return page.getvalue()


def save_dataset_scorecard(
    scorecard: DatasetScorecard | RunResult, path: str | os.PathLike[str]
) -> Path:
    """Write the scorecard page to ``path`` (replaced whole, never left half-written).

    Returns:
        The path written.

    Example:
        >>> save_dataset_scorecard(card, "scorecard.html")  # doctest: +SKIP
        PosixPath('scorecard.html')
    """
    card = (
        scorecard
        if isinstance(scorecard, DatasetScorecard)
        else DatasetScorecard.from_run(scorecard)
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _writer_of(card) as writer:

        def write(stream: io.BufferedWriter) -> None:
            text = io.TextIOWrapper(stream, encoding="utf-8", write_through=False)
            writer.render(text, card)
            text.flush()
            text.detach()

        write_atomically_with(target, write)  # with the permissions of the run's other files
    return target


def write_scorecard(
    folder: str | os.PathLike[str],
    *,
    baseline: RunResult | str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``scorecard.html`` into a results folder, from its ``result.json`` and traces.

    ``evaltrace test`` writes the page as the run goes (:class:`ScorecardWriter`); this
    builds it again from a saved folder (``evaltrace scorecard DIR``), with the same rows.

    Returns:
        The path of the page.

    Example:
        >>> print(write_scorecard("evaltrace_results/20260101-120000"))  # doctest: +SKIP
        evaltrace_results/20260101-120000/scorecard.html
    """
    card = DatasetScorecard.from_folder(folder, baseline=baseline)
    return save_dataset_scorecard(card, Path(folder) / SCORECARD_FILE)


def _writer_of(card: DatasetScorecard) -> ScorecardWriter:
    """A writer holding ``card``'s rows."""
    writer = ScorecardWriter(threshold=card.threshold)
    for row in card.entries:
        writer.add(row)
    return writer


def _render(
    out: IO[str],
    card: DatasetScorecard,
    tally: _Tally,
    data: Callable[[IO[str], DatasetScorecard], None],
) -> None:
    """Write the page: the template around the data elements, which ``data`` writes."""
    import markupsafe

    style = asset("scorecard.css")
    script = asset("scorecard.js")
    evaluators = tally.summaries(card.evaluators, card.baseline_evaluator_means)
    policy = (
        "default-src 'none'; "
        f"style-src '{source_hash(style)}'; script-src '{source_hash(script)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    page = (
        environment()
        .get_template("scorecard.html.j2")
        .render(
            card=card,
            summary=_summary(card, tally),
            evaluators=evaluators,
            labelled=any(summary.labels for summary in evaluators),
            histograms=_histograms(evaluators, tally),
            repeated=_repeated_charts(tally),
            dataset_results=_dataset_panels(card.dataset_results),
            statistics=_statistics_view(card),
            spend=_spend_tiles(card),
            csp=policy,
            style=markupsafe.Markup(style),
            script=markupsafe.Markup(script),
            data=markupsafe.Markup(_DATA_MARK),
        )
    )
    # The mark holds "<", which autoescaping turns into "&lt;" in any value of the run: the
    # one place it is found is where the template put it.
    before, after = page.split(_DATA_MARK, 1)
    out.write(before)
    data(out, card)
    out.write(after)


# --- rendering context ----------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True)
class _Cell:
    text: str
    heat: int
    label: str


@dataclass(kw_only=True, frozen=True)
class _ClassRow:
    name: str
    precision: str
    recall: str
    f_score: str
    support: int
    counts: str


@dataclass(kw_only=True, frozen=True)
class _DatasetResult:
    key: str
    score: str
    reasoning: str
    error: str | None
    classification: ClassificationDetails | None = None
    rows: list[_ClassRow] | None = None
    matrix: list[tuple[str, list[_Cell]]] | None = None
    headlines: list[tuple[str, str, str]] = field(default_factory=list)
    """Each result the panel shows: what it is (``precision``), its score, its reasoning."""


def _summary(card: DatasetScorecard, tally: _Tally) -> dict[str, Any]:
    counts = {status.value: count for status, count in tally.status_counts().items()}
    base = card.baseline
    return {
        "total": tally.total,
        "passed": tally.passed,
        "pass_rate": _percent(tally.pass_rate),
        "counts": counts,
        "status_bar": charts.stacked_bar(counts),
        "duration": _duration(card.duration_s),
        "started_at": card.started_at.isoformat(timespec="seconds") if card.started_at else None,
        "finished_at": card.finished_at.isoformat(timespec="seconds") if card.finished_at else None,
        "settings": [(key, _setting(value)) for key, value in card.settings.items()],
        "baseline_pass_rate": _percent(base.passed / base.total) if base and base.total else None,
        "failing": tally.failing,
        "failing_total": tally.total - tally.passed,
    }


def _histograms(evaluators: Sequence[EvaluatorSummary], tally: _Tally) -> list[charts.Histogram]:
    found = []
    for summary in evaluators:
        if not summary.scored and summary.labels:
            continue  # it gives labels, not scores: its frequencies are in the summary table
        scores = tally.evaluators[summary.name].scores if summary.name in tally.evaluators else []
        left_out = [
            f"{count:,} {what}"
            for count, what in ((summary.errored, "errored"), (summary.skipped, "skipped"))
            if count
        ]
        note = f"not counted: {', '.join(left_out)}" if left_out else ""
        found.append(charts.score_histogram(summary.name, scores, note=note))
    return found


def _repeated_charts(tally: _Tally) -> list[charts.RangeChart]:
    return [
        charts.range_chart(f"{name}: spread of the repeated runs", by_entry)
        for name, by_entry in tally.repeated.items()
    ]


def _repeated_details(evaluation: Evaluation) -> RepeatedDetails | None:
    details = evaluation.details
    if not isinstance(details, dict) or "runs" not in details or "num_judges" not in details:
        return None
    try:
        return RepeatedDetails.model_validate(details)
    except ValidationError:
        return None


def _card(
    run: RunResult,
    *,
    evaluators: list[str],
    entries: list[DatasetEntryResult],
    baseline: RunResult | None,
    matched: int,
    problems: list[str],
) -> DatasetScorecard:
    """The scorecard of ``run``, its rows aside.

    What a page built from a saved run and one written as the run goes both show of it.
    """
    baseline_summary = None
    baseline_means: dict[str, float | None] = {}
    if baseline is not None:
        baseline_summary = BaselineSummary(
            name=baseline.name,
            run_id=baseline.run_id,
            total=len(baseline.entries),
            passed=sum(entry.status.passed for entry in baseline.entries),
            matched=matched,
            only_in_baseline=len(baseline.entries) - matched,
        )
        baseline_means = {
            name: _mean(scores) for name, scores in _scores_by_evaluator(baseline.entries).items()
        }
    return DatasetScorecard(
        name=run.name,
        run_id=run.run_id,
        source=run.source,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_s=run.duration_s,
        threshold=run.threshold,
        settings=run.settings,
        evaluators=evaluators,
        entries=entries,
        dataset_results=run.dataset_results,
        baseline=baseline_summary,
        baseline_evaluator_means=baseline_means,
        problems=problems,
        statistics=run.statistics,
        comparison=None if baseline is None else _compare(baseline, run),
        usage=run.usage,
        latency=run.latency,
        cost=run.cost,
        currency=run.prices.currency if run.prices is not None else "USD",
    )


def _dataset_panels(results: Mapping[str, Evaluation]) -> list[_DatasetResult]:
    """One panel per dataset-level evaluator, each of its results a headline.

    The results of one source evaluator over the same counts (precision, recall, F and the
    matrix of one classifier) share their tables; anything else is a panel of its own.
    """
    panels: list[_DatasetResult] = []
    shared: dict[tuple[str, str], int] = {}  # (source, the tables' content) -> panel
    for key, value in results.items():
        one = _dataset_result(key, value)
        source, _, kind = key.partition("::")
        headline = (kind or key, one.score, one.reasoning)
        tables = one.classification
        if tables is None or one.error is not None or not kind:
            panels.append(replace(one, headlines=[headline]))
            continue
        same = (source, tables.model_dump_json(include={"classes", "per_class", "f_value"}))
        if same in shared:
            panels[shared[same]].headlines.append(headline)
            continue
        shared[same] = len(panels)
        panels.append(replace(one, key=source, reasoning="", headlines=[headline]))
    return panels


def _dataset_result(key: str, evaluation: Evaluation) -> _DatasetResult:
    error = (
        None if evaluation.error is None else f"{evaluation.error.type}: {evaluation.error.message}"
    )
    plain = _DatasetResult(
        key=key,
        score="—" if evaluation.score is None else f"{evaluation.score:.3f}",
        reasoning=evaluation.reasoning,
        error=error,
    )
    details = evaluation.details
    if not isinstance(details, dict) or "confusion_matrix" not in details:
        return plain
    try:
        parsed = ClassificationDetails.model_validate(details)
    except ValidationError:
        return plain
    rows = [
        _ClassRow(
            name=name,
            precision=f"{metrics.precision:.3f}",
            recall=f"{metrics.recall:.3f}",
            f_score=f"{metrics.f_score:.3f}",
            support=metrics.support,
            counts=f"TP {metrics.tp} · FP {metrics.fp} · FN {metrics.fn} · TN {metrics.tn}",
        )
        for name, metrics in parsed.per_class.items()
    ]
    for label, averaged in (("micro", parsed.micro), ("macro", parsed.macro)):
        rows.append(
            _ClassRow(
                name=f"{label} average",
                precision=f"{averaged.precision:.3f}",
                recall=f"{averaged.recall:.3f}",
                f_score=f"{averaged.f_score:.3f}",
                support=parsed.n_scored,
                counts="",
            )
        )
    top = max((count for row in parsed.confusion_matrix for count in row), default=0) or 1
    matrix = [
        (
            parsed.classes[predicted],
            [
                _Cell(
                    text=f"{count:,}",
                    heat=math.ceil((_HEAT_LEVELS - 1) * count / top),
                    label=(
                        f"predicted {parsed.classes[predicted]}, expected "
                        f"{parsed.classes[expected]}: {count:,}"
                    ),
                )
                for expected, count in enumerate(row)
            ],
        )
        for predicted, row in enumerate(parsed.confusion_matrix)
    ]
    return _DatasetResult(
        key=key,
        score=plain.score,
        reasoning=plain.reasoning,
        error=plain.error,
        classification=parsed,
        rows=rows,
        matrix=matrix,
    )


# --- statistics and the baseline's verdicts (scorecard_statistics.html.j2) -------------------


def _compare(base: RunResult, result: RunResult) -> RunComparison:
    """The paired comparison with the baseline, at the run's own statistics settings."""
    settings = result.statistics
    if settings is None:
        return compare_runs(base, result)
    return compare_runs(
        base,
        result,
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.seed,
    )


@dataclass(kw_only=True, frozen=True)
class _StatisticsRow:
    name: str
    n: str
    mean: str
    standard_error: str
    pass_rate: str
    small: bool


@dataclass(kw_only=True, frozen=True)
class _VerdictRow:
    name: str
    n: int
    means: str
    difference: str
    passes: str
    test: str
    adjusted: str
    verdict: str
    detectable: str


@dataclass(kw_only=True, frozen=True)
class _StatisticsView:
    level: str
    note: str
    rows: list[_StatisticsRow]
    small: list[str]
    verdicts: list[_VerdictRow]
    verdict_note: str


def _statistics_view(card: DatasetScorecard) -> _StatisticsView | None:
    """What the page shows of the run's statistics and of its comparison with the baseline."""
    statistics, comparison = card.statistics, card.comparison
    if statistics is not None:
        level = confidence_label(statistics.confidence)
    elif comparison is not None:
        level = confidence_label(comparison.confidence)
    else:
        return None
    rows: list[_StatisticsRow] = []
    note = ""
    if statistics is not None:
        for item in statistics.evaluators:
            entries = "" if item.entries == item.n else f" ({item.entries} entries)"
            rows.append(
                _StatisticsRow(
                    name=item.evaluator,
                    n=f"{item.n}{entries}",
                    mean=_estimate(item.mean, item.mean_interval),
                    standard_error=(
                        "—" if item.standard_error is None else f"{item.standard_error:.3f}"
                    ),
                    pass_rate=(
                        f"{item.passed}/{item.pass_n}: "
                        f"{_estimate(item.pass_rate, item.pass_rate_interval)}"
                    ),
                    small=0 < item.entries < SMALL_SAMPLE,
                )
            )
        for metric in statistics.dataset_results:
            rows.append(
                _StatisticsRow(
                    name=metric.key,
                    n=str(metric.n),
                    mean=_estimate(metric.score, metric.interval),
                    standard_error="",
                    pass_rate="",
                    small=0 < metric.n < SMALL_SAMPLE,
                )
            )
        note = (
            f"Means: bootstrap percentile intervals over entries ({statistics.resamples} "
            f"resamples, seed {statistics.seed}). Pass rates: Wilson intervals (bootstrap where "
            "entries repeat); an error counts as a fail."
        )
    verdicts: list[_VerdictRow] = []
    verdict_note = ""
    if comparison is not None:
        verdicts = _verdict_rows(comparison)
        verdict_note = (
            f"{comparison.paired} entries in both runs, paired by name"
            + (
                f"; {len(comparison.new_entries)} only in this run"
                if comparison.new_entries
                else ""
            )
            + (
                f"; {len(comparison.gone_entries)} only in the baseline"
                if comparison.gone_entries
                else ""
            )
            + f". {comparison.comparisons} comparisons adjusted together by Holm's method at "
            f"level {comparison.level:g}. Could detect: the smallest difference found with "
            f"{comparison.power:.0%} power (in pass rate for McNemar, in mean score otherwise)."
        )
    return _StatisticsView(
        level=level,
        note=note,
        rows=rows,
        small=[row.name for row in rows if row.small],
        verdicts=verdicts,
        verdict_note=verdict_note,
    )


def _verdict_rows(comparison: RunComparison) -> list[_VerdictRow]:
    rows = []
    for item in comparison.evaluators:
        test = {"mcnemar": "McNemar", "wilcoxon": "Wilcoxon", None: ""}[item.test]
        rows.append(
            _VerdictRow(
                name=item.evaluator,
                n=item.n if item.test != "mcnemar" else item.pass_n,
                means=_pair(item.old_mean, item.new_mean),
                difference=_signed(item.mean_difference, item.interval),
                passes=(
                    f"{item.old_passed}/{item.pass_n} → {item.new_passed}/{item.pass_n} "
                    f"(+{item.fixed} -{item.broken})"
                    if item.pass_n
                    else "—"
                ),
                test=f"{test} p = {_p(item.p_value)}" if test else "—",
                adjusted=_p(item.adjusted_p_value),
                verdict=item.verdict,
                detectable=(
                    f"{item.detectable:.3f}"
                    if item.detectable is not None
                    else "too few entries"
                    if item.p_value is not None
                    else "—"
                ),
            )
        )
    for metric in comparison.dataset_results:
        rows.append(
            _VerdictRow(
                name=metric.key,
                n=metric.n,
                means=_pair(metric.old, metric.new),
                difference=_signed(metric.difference, metric.interval),
                passes="—",
                test="—" if metric.p_value is None else f"bootstrap p = {_p(metric.p_value)}",
                adjusted=_p(metric.adjusted_p_value),
                verdict=metric.verdict,
                detectable="—",
            )
        )
    return rows


def _estimate(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "—"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval.low:.3f}, {interval.high:.3f}]"


def _pair(old: float | None, new: float | None) -> str:
    return "—" if old is None or new is None else f"{old:.3f} → {new:.3f}"


def _signed(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "—"
    if interval is None:
        return f"{value:+.3f}"
    return f"{value:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


# --- tokens, cost and latency (scorecard_spend.html.j2, the grid's Cost column) -------------


def _entry_spend(entry: EntryResult, prices: PriceTable | None) -> dict[str, Any]:
    """An entry's model calls, tokens and cost, as the grid's row data holds them."""
    if not entry.usage:
        return {}
    total = total_usage(entry.usage)
    return {
        "model_calls": total.calls,
        "tokens": total.total_tokens,
        "cost": None if prices is None else prices.total(entry.usage),
    }


@dataclass(frozen=True)
class _Tile:
    """One figure of the summary's tiles."""

    id: str
    """The element's id."""
    value: str
    """The figure."""
    label: str
    """What it is."""


def _spend_tiles(card: DatasetScorecard) -> list[_Tile]:
    """The summary's tiles of the app's cost, tokens and latency (none when nothing ran)."""
    tiles = []
    total = total_usage(card.usage)
    if total.calls or card.cost is not None:
        cost = card.cost
        table = PriceTable(currency=card.currency)
        if cost is None:
            tiles.append(_Tile("cost", "unknown", "cost (no price table)"))
        else:
            parts = [
                f"app {table.format(cost.app.total)}",
                f"judges {table.format(cost.judges.total)}",
            ]
            why = cost.app.why_unknown() or cost.judges.why_unknown()
            label = f"cost ({', '.join(parts)}{'; ' + why if why else ''})"
            tiles.append(_Tile("cost", table.format(cost.total), label))
    if total.calls:
        calls = f"{total.calls:,} model call{'s' if total.calls != 1 else ''}"
        tiles.append(_Tile("tokens", f"{total.total_tokens:,}", f"app tokens ({calls})"))
    latency = card.latency
    if latency is not None:
        label = f"p95 latency (p50 {_duration(latency.p50_s)}, p99 {_duration(latency.p99_s)})"
        tiles.append(_Tile("latency", _duration(latency.p95_s), label))
    return tiles


# --- helpers --------------------------------------------------------------------------------


_GRID_FIELDS: Final[dict[str, Any]] = {
    "index": True,
    "name": True,
    "description": True,
    "status": True,
    "duration_s": True,
    "in_baseline": True,
    "baseline_status": True,
    "baseline_scores": True,
    "model_calls": True,
    "tokens": True,
    "cost": True,
    "evaluations": {"__all__": {"score", "reasoning", "error", "skipped", "evaluator", "label"}},
}
"""What the grid of a large run's page shows of each entry (the rest is in its chunk)."""


@functools.cache
def _defaults_json() -> str:
    """The fields the page's data leaves out at their default value, and those values.

    Leaving out defaults (``null``, ``[]``, ``false``) makes a large page about a third
    smaller; the script puts them back from ``defaults`` before it reads anything.
    """
    defaults = {
        "card": _defaults(DatasetScorecard),
        "entry": _defaults(DatasetEntryResult),
        "evaluation": _defaults(Evaluation),
        "span": _defaults(TraceSpan),
        "message": _defaults(TraceMessage),
    }
    return json.dumps(defaults, separators=(",", ":"))


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in model.model_fields.items()
        if not field.is_required()
    }


def _read_result(source: RunResult | str | os.PathLike[str]) -> RunResult:
    return source if isinstance(source, RunResult) else load_result(source)


def _match_baseline(
    entries: Sequence[EntryResult], baseline: Sequence[EntryResult]
) -> dict[int, EntryResult]:
    """Each entry's baseline entry, by name (the n-th of a repeated name takes the n-th)."""
    by_name: dict[str, list[EntryResult]] = {}
    for entry in baseline:
        by_name.setdefault(entry.name, []).append(entry)
    matches = {}
    for entry in entries:
        candidates = by_name.get(entry.name)
        if candidates:
            matches[entry.index] = candidates.pop(0)
    return matches


def _scores_by_evaluator(entries: Sequence[EntryResult]) -> dict[str, list[float]]:
    scores: dict[str, list[float]] = {}
    for entry in entries:
        for position, evaluation in enumerate(entry.evaluations):
            name = evaluation.evaluator or _position_name(position)
            bucket = scores.setdefault(name, [])
            if evaluation.score is not None:
                bucket.append(evaluation.score)
    return scores


def _evaluator_names(result: RunResult) -> list[str]:
    names = dict.fromkeys(result.evaluators)
    for entry in result.entries:
        for position, evaluation in enumerate(entry.evaluations):
            names.setdefault(evaluation.evaluator or _position_name(position))
    return list(names)


def _position_name(position: int) -> str:
    return f"evaluator {position + 1}"


def _mean(scores: Sequence[float]) -> float | None:
    return sum(scores) / len(scores) if scores else None


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _setting(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
