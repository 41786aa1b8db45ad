"""Comparing two runs: :func:`diff_results`, what ``evaltrace diff`` and ``--baseline`` show.

Entries are matched by name, and within an entry evaluations by evaluator name (an evaluator
listed twice is matched by its occurrence). Each pair is one of:

* ``new``: only the new run has it; ``gone``: only the old run has it;
* ``better`` / ``worse`` / ``same``: compared by one rule. Two scores compare by value
  (``delta = new - old``, so a positive delta is an improvement). Otherwise the kinds of
  result are ranked: an errored evaluation below a skipped one below a scored one.

An entry is ``better`` or ``worse`` when it went from not passing to passing or back;
otherwise it is ``worse`` when one of its evaluations is worse, ``better`` when one is better
and none worse, and ``same`` when none changed (its status may still change, say from
``ERROR`` to ``TIMED_OUT``; that change is shown as well). Dataset-level results (precision,
recall, ...) compare like evaluations. A **regression** is an entry or a dataset-level result
that is ``worse``.

Whether a change is more than noise is the business of :attr:`RunDiff.comparison`
(:func:`~evaltrace.results.comparison.compare_runs`): per evaluator, paired tests over the
entries both runs share and a verdict, ``better``, ``worse`` or ``no significant change``,
corrected for the number of comparisons. A **significant regression** is a ``worse`` verdict.
The entries whose pass or fail changed carry their output in both runs, to be read side by
side.

Example:
    >>> from evaltrace.evals import Evaluation
    >>> from evaltrace.results import EntryResult, RunResult
    >>> def run(score):
    ...     evaluation = Evaluation(score=score, evaluator="exact")
    ...     entry = EntryResult(index=0, name="a", evaluations=[evaluation])
    ...     return RunResult(name="faq", entries=[entry])
    >>> diff = diff_results(run(0.9), run(0.4))
    >>> change = diff.entries[0].evaluations[0]
    >>> change.evaluator, change.change, round(change.delta, 2)
    ('exact', 'worse', -0.5)
    >>> diff.has_regressions
    True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal, TextIO

from pydantic import BaseModel, ConfigDict, JsonValue, computed_field
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
)
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluable import collapse_named_data
from evaltrace.evals.evaluation import Evaluation
from evaltrace.llm.prices import PriceTable
from evaltrace.results.comparison import EvaluatorComparison, RunComparison, compare_runs
from evaltrace.results.model import CompletionStatus, EntryResult, RunResult
from evaltrace.results.report import print_rich, render_rich
from evaltrace.statistics import Interval

__all__ = [
    "Change",
    "EntryChange",
    "EvaluationChange",
    "RunDiff",
    "diff_results",
    "print_diff",
    "render_diff",
]

Change = Literal["better", "worse", "same", "new", "gone"]
"""How something compares between the old run and the new one."""

_TOLERANCE: Final = 1e-9
_CHANGE_STYLES: Final[dict[str, str]] = {
    "better": "green",
    "worse": "red",
    "same": "dim",
    "new": "cyan",
    "gone": "yellow",
}


class EvaluationChange(BaseModel):
    """One evaluator's result on one entry (or one dataset-level result), old and new."""

    model_config = ConfigDict(frozen=True)

    entry: str | None
    """The entry's name; ``None`` for a dataset-level result."""
    evaluator: str
    """The evaluator's display name, or the dataset-level result's key."""
    change: Change
    """How the new result compares with the old one."""
    old: Evaluation | None
    """The old result (``None`` when ``new``)."""
    new: Evaluation | None
    """The new result (``None`` when ``gone``)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        """``new score - old score`` when both are scored; positive means better."""
        if self.old is None or self.new is None:
            return None
        if self.old.score is None or self.new.score is None:
            return None
        return self.new.score - self.old.score


class EntryChange(BaseModel):
    """One entry, old and new: its status and each of its evaluations."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The entry's name."""
    change: Change
    """How the entry compares (see the module documentation)."""
    old_status: CompletionStatus | None
    """Its status in the old run (``None`` when ``new``)."""
    new_status: CompletionStatus | None
    """Its status in the new run (``None`` when ``gone``)."""
    evaluations: list[EvaluationChange]
    """Each evaluation, old and new."""
    old_output: JsonValue = None
    """What was scored in the old run, for an entry whose pass or fail changed (else
    ``None``): its named outputs collapsed (one value, or ``{name: value}``), else what the
    runnable returned."""
    new_output: JsonValue = None
    """The same in the new run."""

    @property
    def pass_changed(self) -> bool:
        """Whether the entry is in both runs and passed in one only."""
        return (
            self.old_status is not None
            and self.new_status is not None
            and self.old_status.passed != self.new_status.passed
        )

    @property
    def status_changed(self) -> bool:
        """Whether the entry is in both runs with different statuses."""
        return (
            self.old_status is not None
            and self.new_status is not None
            and self.old_status is not self.new_status
        )


class RunDiff(BaseModel):
    """The comparison of two runs of one dataset."""

    model_config = ConfigDict(frozen=True)

    old_name: str
    """The old run's name."""
    new_name: str
    """The new run's name."""
    old_run_id: str
    """The old run's id."""
    new_run_id: str
    """The new run's id."""
    entries: list[EntryChange]
    """Every entry of either run: the new run's order, then the entries that are gone."""
    dataset_results: list[EvaluationChange]
    """Every dataset-level result of either run."""
    comparison: RunComparison | None = None
    """The paired tests and verdicts per evaluator and dataset-level result (``None`` when
    the diff was made without them)."""

    @property
    def regressions(self) -> list[EntryChange | EvaluationChange]:
        """The entries and the dataset-level results that got worse."""
        worse: list[EntryChange | EvaluationChange] = [
            entry for entry in self.entries if entry.change == "worse"
        ]
        worse += [result for result in self.dataset_results if result.change == "worse"]
        return worse

    @computed_field  # type: ignore[prop-decorator]
    @property
    def has_regressions(self) -> bool:
        """Whether anything got worse."""
        return bool(self.regressions)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def significant_regressions(self) -> list[str]:
        """The evaluators and dataset-level results whose verdict is ``worse``."""
        return self.comparison.regressions() if self.comparison is not None else []

    def counts(self) -> dict[Change, int]:
        """How many evaluations (and dataset-level results) had each change."""
        counted: Counter[Change] = Counter()
        for entry in self.entries:
            counted.update(change.change for change in entry.evaluations)
        counted.update(change.change for change in self.dataset_results)
        return dict(counted)


def diff_results(
    old: RunResult,
    new: RunResult,
    *,
    level: float = DEFAULT_SIGNIFICANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_STATISTICS_SEED,
    prices: PriceTable | None = None,
) -> RunDiff:
    """Compare a new run with an old one (the baseline), entry by entry and evaluator by evaluator.

    Args:
        old: The baseline run.
        new: The run to compare with it.
        level: The significance level of the verdicts of :attr:`RunDiff.comparison`.
        confidence: The confidence level of its intervals.
        resamples: The bootstrap's resamples of the entries both runs share; 0 makes no
            comparison (``comparison`` is ``None``).
        seed: The seed of those resamples.
        prices: The price table both runs' costs are compared by; ``None``: the new run's,
            else the old run's.

    Returns:
        The comparison; see the module documentation for how results compare.
    """
    old_entries = {entry.name: entry for entry in old.entries}
    new_names = {entry.name for entry in new.entries}
    changes = [
        _entry_change(entry.name, old_entries.get(entry.name), entry) for entry in new.entries
    ]
    changes += [
        _entry_change(entry.name, entry, None)
        for entry in old.entries
        if entry.name not in new_names
    ]
    keys = list(dict.fromkeys([*new.dataset_results, *old.dataset_results]))
    comparison = (
        compare_runs(
            old,
            new,
            level=level,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            prices=prices,
        )
        if resamples
        else None
    )
    return RunDiff(
        old_name=old.name,
        new_name=new.name,
        old_run_id=old.run_id,
        new_run_id=new.run_id,
        entries=changes,
        dataset_results=[
            _evaluation_change(
                None, key, old.dataset_results.get(key), new.dataset_results.get(key)
            )
            for key in keys
        ],
        comparison=comparison,
    )


def _entry_change(name: str, old: EntryResult | None, new: EntryResult | None) -> EntryChange:
    pairs = _paired(
        old.evaluations if old is not None else [], new.evaluations if new is not None else []
    )
    evaluations = [_evaluation_change(name, key, before, after) for key, before, after in pairs]
    if old is None or new is None:
        change: Change = "new" if old is None else "gone"
    elif old.status.passed != new.status.passed:
        change = "better" if new.status.passed else "worse"
    elif any(item.change == "worse" for item in evaluations):
        change = "worse"
    elif any(item.change == "better" for item in evaluations):
        change = "better"
    else:
        change = "same"
    flipped = old is not None and new is not None and old.status.passed != new.status.passed
    return EntryChange(
        name=name,
        change=change,
        old_status=old.status if old is not None else None,
        new_status=new.status if new is not None else None,
        evaluations=evaluations,
        old_output=_scored_output(old) if flipped else None,
        new_output=_scored_output(new) if flipped else None,
    )


def _scored_output(entry: EntryResult | None) -> JsonValue:
    """What the evaluators scored (its named outputs collapsed), else the runnable's output."""
    if entry is None:
        return None
    if entry.eval_output:
        collapsed: JsonValue = collapse_named_data(entry.eval_output)
        return collapsed
    return entry.output


def _paired(
    old: Sequence[Evaluation], new: Sequence[Evaluation]
) -> list[tuple[str, Evaluation | None, Evaluation | None]]:
    """Old and new evaluations matched by evaluator name and occurrence."""

    def keyed(evaluations: Iterable[Evaluation]) -> dict[tuple[str, int], Evaluation]:
        seen: Counter[str] = Counter()
        result: dict[tuple[str, int], Evaluation] = {}
        for position, evaluation in enumerate(evaluations):
            name = evaluation.evaluator or f"#{position}"
            result[(name, seen[name])] = evaluation
            seen[name] += 1
        return result

    before, after = keyed(old), keyed(new)
    pairs = []
    for name, occurrence in dict.fromkeys([*after, *before]):
        label = name if occurrence == 0 else f"{name} ({occurrence + 1})"
        pairs.append((label, before.get((name, occurrence)), after.get((name, occurrence))))
    return pairs


def _rank(evaluation: Evaluation) -> int:
    if evaluation.error is not None:
        return 0
    return 1 if evaluation.skipped or evaluation.score is None else 2


def _evaluation_change(
    entry: str | None, evaluator: str, old: Evaluation | None, new: Evaluation | None
) -> EvaluationChange:
    if old is None or new is None:
        change: Change = "new" if old is None else "gone"
    elif old.score is not None and new.score is not None:
        delta = new.score - old.score
        change = "same" if abs(delta) <= _TOLERANCE else ("better" if delta > 0 else "worse")
    else:
        difference = _rank(new) - _rank(old)
        change = "same" if difference == 0 else ("better" if difference > 0 else "worse")
    return EvaluationChange(entry=entry, evaluator=evaluator, change=change, old=old, new=new)


# -- rendering --------------------------------------------------------------------------------


def print_diff(diff: RunDiff, *, file: TextIO | None = None, verbose: bool = False) -> None:
    """Write the comparison to ``file`` (standard output by default).

    Plain ASCII without colour unless ``file`` is a terminal and ``NO_COLOR`` is not set.
    """
    print_rich(lambda plain: _diff(diff, verbose, plain=plain), file)


def render_diff(
    diff: RunDiff, *, verbose: bool = False, plain: bool = True, width: int = 100
) -> str:
    """The comparison as text: what changed (everything with ``verbose``), then the counts."""
    return render_rich(_diff(diff, verbose, plain=plain), plain=plain, width=width)


def _score(evaluation: Evaluation | None) -> str:
    if evaluation is None:
        return "-"
    if evaluation.error is not None:
        return f"error ({evaluation.error.type})"
    if evaluation.skipped or evaluation.score is None:
        return "skipped"
    return f"{evaluation.score:.4f}"


def _delta(change: EvaluationChange) -> str:
    delta = change.delta
    if delta is None or math.isclose(delta, 0.0, abs_tol=_TOLERANCE):
        return ""
    return f"{delta:+.4f}"


def _diff(diff: RunDiff, verbose: bool, *, plain: bool) -> RenderableType:
    arrow = "->" if plain else "→"

    def text(value: str, style: str = "") -> Text:
        return Text(printable(value), style="" if plain else style)

    title = f"{diff.new_name} {diff.new_run_id} compared with {diff.old_name} {diff.old_run_id}"
    parts: list[RenderableType] = [Text(""), text(title, "bold")]
    table = Table(box=box.ASCII if plain else box.SIMPLE_HEAD, show_edge=plain)
    for header in ("entry", "evaluator", "old", "new", "delta", "change"):
        table.add_column(header, overflow="fold")
    rows = 0
    changes = [(entry.name, change) for entry in diff.entries for change in entry.evaluations] + [
        ("(dataset)", change) for change in diff.dataset_results
    ]
    for entry_name, change in changes:
        if change.change == "same" and not verbose:
            continue
        rows += 1
        table.add_row(
            text(entry_name),
            text(change.evaluator),
            _score(change.old),
            _score(change.new),
            _delta(change),
            text(change.change, _CHANGE_STYLES[change.change]),
        )
    if rows:
        parts.append(table)
    else:
        parts.append(text("no evaluation changed", "dim"))
    moved = [entry for entry in diff.entries if entry.status_changed]
    for entry in moved:
        assert entry.old_status is not None and entry.new_status is not None
        parts.append(
            text(
                f"{entry.name}: {entry.old_status.value} {arrow} {entry.new_status.value}",
                _CHANGE_STYLES[entry.change],
            )
        )
    for entry in diff.entries:
        if entry.change in ("new", "gone"):
            parts.append(text(f"{entry.name}: {entry.change} entry", _CHANGE_STYLES[entry.change]))
    parts += _changed_outputs(diff, text, plain=plain)
    if diff.comparison is not None:
        parts += _comparison(diff.comparison, text, plain=plain)
    counts = diff.counts()
    summary = ", ".join(
        f"{counts.get(kind, 0)} {kind}" for kind in ("better", "worse", "same", "new", "gone")
    )
    regressions = len(diff.regressions)
    verdict = f"{regressions} regression{'s' if regressions != 1 else ''}"
    parts.append(text(f"{summary}; {verdict}", "bold red" if regressions else "bold green"))
    return Group(*parts)


_OUTPUT_WIDTH: Final = 60
"""The most of an output shown in the side-by-side table (``--format json`` has it whole)."""
_VERDICT_STYLES: Final[dict[str, str]] = {
    "better": "bold green",
    "worse": "bold red",
    "no significant change": "dim",
}


def _changed_outputs(
    diff: RunDiff, text: Callable[..., Text], *, plain: bool
) -> list[RenderableType]:
    """The outputs of the entries whose pass or fail changed, old beside new."""
    flipped = [entry for entry in diff.entries if entry.pass_changed]
    if not flipped:
        return []
    arrow = "->" if plain else "→"
    table = Table(box=box.ASCII if plain else box.SIMPLE_HEAD, show_edge=plain)
    for header in ("entry", "status", "old output", "new output"):
        table.add_column(header, overflow="fold")
    for entry in flipped:
        assert entry.old_status is not None and entry.new_status is not None
        table.add_row(
            text(entry.name),
            text(
                f"{entry.old_status.value} {arrow} {entry.new_status.value}",
                _CHANGE_STYLES[entry.change],
            ),
            text(_shown(short_text(entry.old_output, _OUTPUT_WIDTH), plain)),
            text(_shown(short_text(entry.new_output, _OUTPUT_WIDTH), plain)),
        )
    return [
        Text(""),
        text("Entries that now pass or now fail, old output beside new", "bold"),
        table,
    ]


def _shown(value: str, plain: bool) -> str:
    return value.replace("…", "...") if plain else value


def _comparison(
    comparison: RunComparison, text: Callable[..., Text], *, plain: bool
) -> list[RenderableType]:
    """Per evaluator and dataset-level result: the paired figures, the test and the verdict."""
    arrow = "->" if plain else "→"
    percent = f"{comparison.confidence:.0%}"
    parts: list[RenderableType] = [
        Text(""),
        text(
            f"Paired comparison over the {comparison.paired} "
            f"entr{'y' if comparison.paired == 1 else 'ies'} in both runs",
            "bold",
        ),
    ]
    table = Table(box=box.ASCII if plain else box.SIMPLE_HEAD, show_edge=plain)
    headers = ("compared", "n", "mean", f"difference [{percent} CI]", "pass", "test")
    for header in (*headers, "Holm p", "verdict", "could detect"):
        table.add_column(header, overflow="fold")
    for item in comparison.evaluators:
        passes = ""
        if item.pass_n:
            passes = (
                f"{item.old_passed}/{item.pass_n} {arrow} {item.new_passed}/{item.pass_n} "
                f"(+{item.fixed} -{item.broken})"
            )
        test = ""
        if item.test == "mcnemar":
            test = f"McNemar p={_p(item.p_value)}"
        elif item.test == "wilcoxon":
            test = f"Wilcoxon p={_p(item.p_value)}"
        table.add_row(
            text(item.evaluator),
            str(item.n),
            _means(item.old_mean, item.new_mean, arrow),
            _difference(item.mean_difference, item.interval),
            passes,
            test,
            _p(item.adjusted_p_value),
            text(item.verdict, _VERDICT_STYLES[item.verdict]),
            _detectable(item),
        )
    for metric in comparison.dataset_results:
        table.add_row(
            text(f"(dataset) {metric.key}"),
            str(metric.n),
            _means(metric.old, metric.new, arrow),
            _difference(metric.difference, metric.interval),
            "",
            "" if metric.p_value is None else f"bootstrap p={_p(metric.p_value)}",
            _p(metric.adjusted_p_value),
            text(metric.verdict, _VERDICT_STYLES[metric.verdict]),
            "",
        )
    parts.append(table)
    parts.append(
        text(
            f"{comparison.comparisons} comparison{'s' if comparison.comparisons != 1 else ''} "
            f"adjusted together by Holm's method at level {comparison.level:g}; "
            f"{percent} paired bootstrap intervals ({comparison.resamples} resamples, seed "
            f"{comparison.seed}); could detect: the smallest difference (in pass rate for "
            f"McNemar, in mean score otherwise) found with {comparison.power:.0%} power",
            "dim",
        )
    )
    parts += _spend(comparison, text, plain=plain)
    apart = []
    if comparison.new_entries:
        apart.append(f"{_names(comparison.new_entries)} only in the new run")
    if comparison.gone_entries:
        apart.append(f"{_names(comparison.gone_entries)} only in the old run")
    if apart:
        parts.append(text(f"not compared: {'; '.join(apart)}", "dim"))
    return parts


def _spend(
    comparison: RunComparison, text: Callable[..., Text], *, plain: bool
) -> list[RenderableType]:
    """The app's cost and latency per entry, old and new, with the paired difference."""
    if not comparison.spend:
        return []
    arrow = "->" if plain else "→"
    percent = f"{comparison.confidence:.0%}"
    table = Table(box=box.ASCII if plain else box.SIMPLE_HEAD, show_edge=plain)
    for header in ("per entry", "n", "mean", f"difference [{percent} CI]", "bootstrap p"):
        table.add_column(header, overflow="fold")
    notes = []
    for item in comparison.spend:
        unit = item.unit
        shown = f"{item.measure} ({unit})"
        if item.n == 0 or item.old_mean is None or item.new_mean is None:
            table.add_row(text(shown), "0", "unknown", "", "")
        else:
            difference = f"{item.mean_difference:+.4g}"
            if item.interval is not None:
                difference += f" [{item.interval.low:+.4g}, {item.interval.high:+.4g}]"
            table.add_row(
                text(shown),
                str(item.n),
                f"{item.old_mean:.4g} {arrow} {item.new_mean:.4g}",
                difference,
                _p(item.p_value),
            )
        if item.note:
            notes.append(f"{item.measure}: {item.note}")
    parts: list[RenderableType] = [Text(""), text("The app's cost and latency", "bold"), table]
    parts.append(
        text(
            "paired over the entries in both runs; positive is dearer or slower; figures, not "
            "verdicts (not adjusted with the comparisons above)"
            + ("; " + "; ".join(notes) if notes else ""),
            "dim",
        )
    )
    return parts


_NAMES_SHOWN: Final = 5


def _names(names: Sequence[str]) -> str:
    count = len(names)
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = f", and {count - _NAMES_SHOWN} more" if count > _NAMES_SHOWN else ""
    return f"{count} entr{'y' if count == 1 else 'ies'} ({shown}{more})"


def _detectable(item: EvaluatorComparison) -> str:
    if item.detectable is not None:
        return f"{item.detectable:.3f}"
    return "too few entries" if item.p_value is not None else ""


def _p(p: float | None) -> str:
    if p is None:
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _means(old: float | None, new: float | None, arrow: str) -> str:
    if old is None or new is None:
        return ""
    return f"{old:.3f} {arrow} {new:.3f}"


def _difference(difference: float | None, interval: Interval | None) -> str:
    if difference is None:
        return ""
    if interval is None:
        return f"{difference:+.3f}"
    return f"{difference:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"
