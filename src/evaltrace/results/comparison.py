"""Is the new run better or worse than the baseline, and can that be trusted?

:func:`compare_runs` pairs the entries the two runs share (by name) and, per evaluator:

* **pass/fail**: how many entries went from fail to pass (``fixed``) and from pass to fail
  (``broken``), and the exact McNemar test of those changes;
* **scores**: the mean difference (new minus old) with its paired bootstrap percentile
  interval, and the Wilcoxon signed-rank test of the differences;
* **the verdict**: an evaluator whose scores are all 0 or 1 in both runs (a pass/fail check)
  is decided by McNemar's test, any other by Wilcoxon's. The p-values of every comparison
  (evaluators and dataset-level results) are adjusted by Holm's method together, and a
  comparison whose adjusted p-value is below the level is ``better`` or ``worse``; else
  ``no significant change``, with the smallest difference the test could have detected.

The app's cost and latency per entry are compared too (:class:`SpendComparison`): the mean
paired difference (new minus old; positive is dearer or slower) with its paired bootstrap
interval and p-value, over the shared entries whose cost (by one price table for both runs)
or wall time is known in both. They are figures to read, not verdicts: they are not among
the comparisons Holm's method adjusts, and never fail a run.

Each dataset-level result (precision, recall, ...) that both runs computed the same way is
compared by a paired bootstrap over the shared entries (its p-value: twice the share of
resampled differences beyond zero on the smaller side). Entries in one run only are listed
apart and not compared.

Example:
    >>> from evaltrace.evals import Evaluation
    >>> from evaltrace.results.model import EntryResult, RunResult
    >>> def run(scores):
    ...     return RunResult(name="qa", entries=[
    ...         EntryResult(index=i, name=f"e{i}", evaluations=[Evaluation(score=s, evaluator="a")])
    ...         for i, s in enumerate(scores)])
    >>> comparison = compare_runs(run([1.0] * 60), run([1.0] * 54 + [0.0] * 6))
    >>> evaluator = comparison.evaluators[0]
    >>> evaluator.test, evaluator.broken, evaluator.verdict, round(evaluator.p_value, 4)
    ('mcnemar', 6, 'worse', 0.0312)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from evaltrace.constants import (
    DEFAULT_CONFIDENCE,
    DEFAULT_POWER,
    DEFAULT_RESAMPLES,
    DEFAULT_SIGNIFICANCE,
    DEFAULT_STATISTICS_SEED,
)
from evaltrace.evals.evaluation import Evaluation
from evaltrace.llm.prices import PriceTable
from evaltrace.metrics.classification import ClassificationItem, plan_dataset_evaluators
from evaltrace.results.model import EntryResult, RunResult
from evaltrace.results.run_statistics import evaluation_labels, stream_seed
from evaltrace.statistics import (
    Interval,
    WilcoxonMethod,
    bootstrap_means,
    bootstrap_p_value,
    check_confidence,
    detectable_difference,
    holm,
    mcnemar_exact,
    percentile_interval,
    sign_test_minimum,
    wilcoxon_signed_rank,
)

__all__ = [
    "EvaluatorComparison",
    "MetricComparison",
    "RunComparison",
    "SpendComparison",
    "Verdict",
    "compare_runs",
]

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]

Verdict = Literal["better", "worse", "no significant change"]
"""What a comparison concludes at its level, after Holm's correction."""


class EvaluatorComparison(BaseModel):
    """One evaluator, paired over the entries both runs share."""

    model_config = ConfigDict(frozen=True)

    evaluator: str
    """The evaluator's label."""
    n: int = Field(ge=0)
    """Entries it scored in both runs: the paired scores."""
    old_mean: float | None = None
    """Its mean score over those entries in the old run."""
    new_mean: float | None = None
    """Its mean score over them in the new run."""
    mean_difference: float | None = None
    """``new_mean - old_mean``: positive is better."""
    interval: Interval | None = None
    """The paired bootstrap percentile interval of the mean difference."""
    wilcoxon_p: float | None = None
    """The Wilcoxon signed-rank test's two-sided p-value on the paired score differences."""
    wilcoxon_method: WilcoxonMethod | None = None
    """How it was computed (exact, every assignment of signs, or normal)."""
    pass_n: int = Field(default=0, ge=0)
    """Entries with a pass or a fail from it in both runs (an error is a fail)."""
    old_passed: int = Field(default=0, ge=0)
    """Of those, how many passed in the old run."""
    new_passed: int = Field(default=0, ge=0)
    """And in the new run."""
    fixed: int = Field(default=0, ge=0)
    """Entries that failed in the old run and pass in the new one."""
    broken: int = Field(default=0, ge=0)
    """Entries that passed in the old run and fail in the new one."""
    mcnemar_p: float | None = None
    """The exact McNemar test's two-sided p-value on those changes."""
    test: Literal["mcnemar", "wilcoxon"] | None = None
    """The test that decides the verdict: McNemar's for scores that are all 0 or 1,
    Wilcoxon's for others; ``None`` when no entry could be compared."""
    p_value: float | None = None
    """That test's p-value."""
    adjusted_p_value: float | None = None
    """The p-value after Holm's correction across every comparison of the two runs."""
    verdict: Verdict = "no significant change"
    """Better or worse when the adjusted p-value is below the level."""
    detectable: float | None = None
    """The smallest difference this comparison could have detected (with the comparison's
    power, at the level divided by the number of comparisons): in pass rate for McNemar's
    test, in mean score for Wilcoxon's; ``None`` when there are too few entries for any
    difference to be detected."""


class MetricComparison(BaseModel):
    """One dataset-level result (precision, recall, ...), paired over shared entries."""

    model_config = ConfigDict(frozen=True)

    key: str
    """The result's key, such as ``"intent::recall"``."""
    n: int = Field(ge=0)
    """The entries both runs share, resampled together."""
    old: float | None = None
    """Its score in the old run."""
    new: float | None = None
    """Its score in the new run."""
    difference: float | None = None
    """Over the shared entries: ``new - old`` (positive is better)."""
    interval: Interval | None = None
    """The paired bootstrap percentile interval of that difference."""
    p_value: float | None = None
    """The paired bootstrap's two-sided p-value."""
    adjusted_p_value: float | None = None
    """After Holm's correction across every comparison."""
    verdict: Verdict = "no significant change"
    """Better or worse when the adjusted p-value is below the level."""


class SpendComparison(BaseModel):
    """The app's cost or latency per entry, paired over the entries both runs share."""

    model_config = ConfigDict(frozen=True)

    measure: Literal["cost", "latency"]
    """What is compared: the cost of the app's model calls, or the app's wall time."""
    unit: str
    """The unit of the figures: the price table's currency, or ``"s"``."""
    n: int = Field(ge=0)
    """Entries compared: in both runs, with the figure known in both."""
    old_mean: float | None = None
    """The mean per entry in the old run."""
    new_mean: float | None = None
    """The mean per entry in the new run."""
    mean_difference: float | None = None
    """``new_mean - old_mean``: positive is dearer (or slower)."""
    interval: Interval | None = None
    """The paired bootstrap percentile interval of the mean difference."""
    p_value: float | None = None
    """The paired bootstrap's two-sided p-value (not adjusted: not a verdict)."""
    note: str | None = None
    """Why some (or all) shared entries were left out, if any were."""


class RunComparison(BaseModel):
    """Two runs compared over the entries they share: one verdict per evaluator and metric."""

    model_config = ConfigDict(frozen=True)

    level: float
    """The significance level of the verdicts."""
    confidence: float
    """The confidence level of the intervals."""
    resamples: int
    """The bootstrap's resamples of the shared entries."""
    seed: int
    """The seed of those resamples."""
    power: float
    """The power at which :attr:`EvaluatorComparison.detectable` is stated."""
    correction: Literal["holm"] = "holm"
    """How the p-values of the comparisons are adjusted for their number."""
    comparisons: int = 0
    """How many comparisons were adjusted together (evaluators and metrics with a p-value)."""
    paired: int = 0
    """Entries in both runs (matched by name)."""
    new_entries: list[str] = Field(default_factory=list)
    """Entries only the new run has (not compared)."""
    gone_entries: list[str] = Field(default_factory=list)
    """Entries only the old run has (not compared)."""
    evaluators: list[EvaluatorComparison] = Field(default_factory=list)
    """One per evaluator of either run, the new run's order first."""
    dataset_results: list[MetricComparison] = Field(default_factory=list)
    """One per dataset-level result both runs computed the same way."""
    spend: list[SpendComparison] = Field(default_factory=list)
    """The app's cost and latency per entry, paired (not verdicts; see the module)."""

    def regressions(self) -> list[str]:
        """The evaluators and dataset-level results that got significantly worse."""
        return [item.evaluator for item in self.evaluators if item.verdict == "worse"] + [
            item.key for item in self.dataset_results if item.verdict == "worse"
        ]


def compare_runs(
    old: RunResult,
    new: RunResult,
    *,
    level: float = DEFAULT_SIGNIFICANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_STATISTICS_SEED,
    power: float = DEFAULT_POWER,
    prices: PriceTable | None = None,
) -> RunComparison:
    """Compare the new run with the old one (the baseline), evaluator by evaluator.

    Args:
        old: The baseline run (its entries are read).
        new: The run compared with it.
        level: The significance level of the verdicts (after Holm's correction).
        confidence: The confidence level of the intervals.
        resamples: The bootstrap's resamples of the shared entries.
        seed: The seed of those resamples.
        power: The power at which the detectable differences are stated.
        prices: The one price table both runs' costs are computed by; ``None``: the new
            run's, else the old run's (without either, costs are not compared).

    Returns:
        The comparison; see the module documentation for what it holds.

    Raises:
        ValueError: ``level``, ``confidence`` or ``power`` is not between 0 and 1, or
            ``resamples`` is not a whole number >= 1.
    """
    check_confidence(level, "level")
    check_confidence(confidence)
    check_confidence(power, "power")
    pairs = _pair_entries(old.entries, new.entries)
    new_columns = _by_evaluator(pairs.new)
    old_columns = _by_evaluator(pairs.old)
    labels = list(dict.fromkeys([*new.evaluators, *old.evaluators, *new_columns, *old_columns]))
    missing = np.full(len(pairs.new), math.nan)
    measured = [
        _measure(
            label,
            old_columns.get(label, missing),
            new_columns.get(label, missing),
            pairs.clusters,
            thresholds=(old.threshold, new.threshold),
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        for label in labels
    ]
    metrics = _compare_metrics(
        old, new, pairs, confidence=confidence, resamples=resamples, seed=seed
    )
    tested = [item.p_value for item, _ in measured if item.p_value is not None]
    tested += [item.p_value for item in metrics if item.p_value is not None]
    adjusted = iter(holm(tested))
    # What a change must beat when it is the only one (Holm's first step): the detectable
    # differences are stated at this level.
    strictest = level / max(len(tested), 1)
    evaluators = [
        item
        if item.p_value is None
        else _decided(item, next(adjusted), spread, level=level, strictest=strictest, power=power)
        for item, spread in measured
    ]
    decided_metrics = []
    for metric in metrics:
        if metric.p_value is None:
            decided_metrics.append(metric)
            continue
        p = next(adjusted)
        verdict = _verdict(p, level, up=(metric.difference or 0.0) > 0)
        decided_metrics.append(
            metric.model_copy(update={"adjusted_p_value": p, "verdict": verdict})
        )
    return RunComparison(
        level=level,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        power=power,
        comparisons=len(tested),
        paired=len(pairs.new),
        new_entries=pairs.new_only,
        gone_entries=pairs.old_only,
        evaluators=evaluators,
        dataset_results=decided_metrics,
        spend=_compare_spend(
            pairs,
            prices or new.prices or old.prices,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        ),
    )


def _compare_spend(
    pairs: _Pairs,
    prices: PriceTable | None,
    *,
    confidence: float,
    resamples: int,
    seed: int,
) -> list[SpendComparison]:
    """The app's cost (when priced) and latency per entry, paired."""
    compared = []
    if prices is not None:
        old_costs = [prices.total(entry.usage) for entry in pairs.old]
        new_costs = [prices.total(entry.usage) for entry in pairs.new]
        compared.append(
            _paired_spend(
                "cost",
                prices.currency,
                old_costs,
                new_costs,
                pairs.clusters,
                left_out="their cost is unknown (a model without a price, or calls without "
                "token counts)",
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        )
    old_times = [entry.duration_s if entry.duration_s > 0 else None for entry in pairs.old]
    new_times = [entry.duration_s if entry.duration_s > 0 else None for entry in pairs.new]
    if any(time is not None for time in old_times + new_times):
        compared.append(
            _paired_spend(
                "latency",
                "s",
                old_times,
                new_times,
                pairs.clusters,
                left_out="the app did not run for them",
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        )
    return compared


def _paired_spend(
    measure: Literal["cost", "latency"],
    unit: str,
    olds: Sequence[float | None],
    news: Sequence[float | None],
    clusters: Ints,
    *,
    left_out: str,
    confidence: float,
    resamples: int,
    seed: int,
) -> SpendComparison:
    known = np.array(
        [old is not None and new is not None for old, new in zip(olds, news, strict=True)],
        dtype=bool,
    )
    count = int(known.sum())
    missing = len(olds) - count
    note = f"{missing} of {len(olds)} shared entries left out: {left_out}" if missing else None
    if not count:
        return SpendComparison(measure=measure, unit=unit, n=0, note=note)
    pairs = [
        (old, new)
        for old, new in zip(olds, news, strict=True)
        if old is not None and new is not None
    ]
    before = np.array([old for old, _ in pairs], dtype=np.float64)
    after = np.array([new for _, new in pairs], dtype=np.float64)
    differences = after - before
    figures: dict[str, object] = {}
    if resamples:
        draws = bootstrap_means(
            differences,
            clusters=clusters[known],
            resamples=resamples,
            seed=stream_seed(seed, f"spend::{measure}"),
        )
        figures.update(
            interval=percentile_interval(draws, confidence=confidence),
            p_value=bootstrap_p_value(draws),
        )
    return SpendComparison.model_validate(
        {
            "measure": measure,
            "unit": unit,
            "n": count,
            "old_mean": float(before.mean()),
            "new_mean": float(after.mean()),
            "mean_difference": float(differences.mean()),
            "note": note,
            **figures,
        }
    )


@dataclass(frozen=True, kw_only=True)
class _Pairs:
    """The entries both runs have, side by side, and those only one has."""

    old: list[EntryResult]
    """The old run's entry of each pair."""
    new: list[EntryResult]
    """The new run's entry of each pair."""
    clusters: Ints
    """Each pair's entry, numbered: pairs of one name (an entry that repeats) share it."""
    new_only: list[str]
    """The names of the entries only the new run has."""
    old_only: list[str]
    """The names of the entries only the old run has."""


def _pair_entries(old: Sequence[EntryResult], new: Sequence[EntryResult]) -> _Pairs:
    """The entries of both runs, by name.

    The n-th entry of a name that repeats (in input order: a run lists its entries as they
    finished) is paired with the other run's n-th of that name.
    """
    by_name = {entry.name: entry for entry in old}
    new_names = {entry.name for entry in new}
    if len(by_name) == len(old) and len(new_names) == len(new):
        # Names unique on both sides (entries that do not repeat): one look-up each.
        news = [entry for entry in new if entry.name in by_name]
        return _Pairs(
            old=[by_name[entry.name] for entry in news],
            new=news,
            clusters=np.arange(len(news), dtype=np.int64),
            new_only=[]
            if len(news) == len(new)
            else [e.name for e in new if e.name not in by_name],
            old_only=[]
            if len(news) == len(old)
            else [e.name for e in old if e.name not in new_names],
        )
    old = sorted(old, key=_input_order)
    new = sorted(new, key=_input_order)
    waiting: dict[str, list[EntryResult]] = {}
    for entry in old:
        waiting.setdefault(entry.name, []).append(entry)
    taken: dict[str, int] = {}
    olds: list[EntryResult] = []
    news = []
    new_only: list[str] = []
    for entry in new:
        position = taken.get(entry.name, 0)
        candidates = waiting.get(entry.name, [])
        if position < len(candidates):
            olds.append(candidates[position])
            news.append(entry)
            taken[entry.name] = position + 1
        else:
            new_only.append(entry.name)
    ids: dict[str, int] = {}
    return _Pairs(
        old=olds,
        new=news,
        clusters=np.array([ids.setdefault(e.name, len(ids)) for e in news], dtype=np.int64),
        new_only=new_only,
        old_only=[name for name, entries in waiting.items() for _ in entries[taken.get(name, 0) :]],
    )


def _input_order(entry: EntryResult) -> int:
    return entry.index


_ERRORED: Final = -1.0
"""Stands for an errored evaluation among the values of a column (scores are in [0, 1])."""


def _value(evaluation: Evaluation) -> float:
    """An evaluation as a number: its score, :data:`_ERRORED`, or NaN when it skipped."""
    if evaluation.error is not None:
        return _ERRORED
    return math.nan if evaluation.score is None else evaluation.score


def _by_evaluator(entries: Sequence[EntryResult]) -> dict[str, Floats]:
    """Each evaluator's evaluation of each entry as a number, by label.

    The numbers are :func:`_value`'s, NaN where the entry has no evaluation by it. Read in one
    pass into a few columns, however many the entries; an entry is labelled the
    long way (:func:`evaluation_labels`) only when it has an unnamed evaluation or one
    evaluator twice. bench/README.md (``bench_statistics.py``): a comparison of 100,000
    entries must add at most a few percent to a run.
    """
    columns: dict[str, list[float | None]] = {}
    count = len(entries)
    for position, entry in enumerate(entries):
        for evaluation in entry.evaluations:
            label = evaluation.evaluator
            column = columns.get(label) if label is not None else None
            if column is None:
                if label is None:
                    break
                column = columns[label] = [None] * count
            elif column[position] is not None:
                break  # the evaluator twice: labelled by occurrence below
            column[position] = _value(evaluation)
        else:
            continue
        for column in columns.values():
            column[position] = None
        for label, evaluation in evaluation_labels(entry.evaluations):
            column = columns.get(label)
            if column is None:
                column = columns[label] = [None] * count
            column[position] = _value(evaluation)
    return {label: np.array(column, dtype=np.float64) for label, column in columns.items()}


def _outcomes(values: Floats, threshold: float) -> NDArray[np.int8]:
    """Each value's outcome: 1 a pass, 0 a fail or an error, -1 neither (skipped, absent)."""
    outcome = np.full(values.size, -1, dtype=np.int8)
    scored = values >= 0  # NaN compares false
    outcome[scored] = values[scored] >= threshold
    outcome[values == _ERRORED] = 0
    return outcome


def _measure(
    label: str,
    olds: Floats,
    news: Floats,
    clusters: Ints,
    *,
    thresholds: tuple[float, float],
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[EvaluatorComparison, float]:
    """One evaluator's paired figures and tests, not yet decided.

    Also returns the standard deviation of the paired differences its test is about.
    """
    was, now = _outcomes(olds, thresholds[0]), _outcomes(news, thresholds[1])
    old_scores, new_scores = olds, news
    both = (old_scores >= 0) & (new_scores >= 0)
    before, after = old_scores[both], new_scores[both]
    decided = (was >= 0) & (now >= 0)
    was, now = was[decided].astype(bool), now[decided].astype(bool)
    pass_n = int(decided.sum())
    fixed = int(np.count_nonzero(now & ~was))
    broken = int(np.count_nonzero(was & ~now))
    figures: dict[str, object] = {}
    spread = 0.0
    if before.size:
        differences = after - before
        draws = bootstrap_means(
            differences, clusters=clusters[both], resamples=resamples, seed=stream_seed(seed, label)
        )
        wilcoxon = wilcoxon_signed_rank(differences)
        spread = float(differences.std(ddof=1)) if differences.size > 1 else 0.0
        figures.update(
            old_mean=float(before.mean()),
            new_mean=float(after.mean()),
            mean_difference=float(differences.mean()),
            interval=percentile_interval(draws, confidence=confidence),
            wilcoxon_p=wilcoxon.p_value,
            wilcoxon_method=wilcoxon.method,
        )
    if pass_n:
        figures["mcnemar_p"] = mcnemar_exact(fixed, broken)
    binary = bool(np.isin(before, (0.0, 1.0)).all() and np.isin(after, (0.0, 1.0)).all())
    if pass_n and (binary or not before.size):
        changes, net = fixed + broken, fixed - broken  # per-entry differences in {-1, 0, 1}
        variance = (changes - net * net / pass_n) / (pass_n - 1) if pass_n > 1 else 0.0
        spread = math.sqrt(max(0.0, variance))
        figures.update(test="mcnemar", p_value=figures["mcnemar_p"])
    elif before.size:
        figures.update(test="wilcoxon", p_value=figures["wilcoxon_p"])
    item = EvaluatorComparison.model_validate(
        {
            "evaluator": label,
            "n": int(before.size),
            "pass_n": pass_n,
            "old_passed": int(was.sum()),
            "new_passed": int(now.sum()),
            "fixed": fixed,
            "broken": broken,
            **figures,
        }
    )
    return item, spread


def _verdict(adjusted_p: float, level: float, *, up: bool) -> Verdict:
    if adjusted_p < level:
        return "better" if up else "worse"
    return "no significant change"


def _decided(
    item: EvaluatorComparison,
    adjusted_p: float,
    spread: float,
    *,
    level: float,
    strictest: float,
    power: float,
) -> EvaluatorComparison:
    """The comparison with its adjusted p-value, verdict and detectable difference."""
    if item.test == "mcnemar":
        up = item.fixed > item.broken
        entries = item.pass_n
        # No exact test of fewer changes, all one way, than this can be significant.
        floor = sign_test_minimum(strictest) / entries
    else:
        up = (item.mean_difference or 0.0) > 0
        entries = item.n
        floor = 0.0
    detectable: float | None = max(
        floor, detectable_difference(spread, entries, level=strictest, power=power)
    )
    if detectable is not None and detectable > 1:
        detectable = None  # beyond any difference of scores in [0, 1]: too few entries
    return item.model_copy(
        update={
            "adjusted_p_value": adjusted_p,
            "verdict": _verdict(adjusted_p, level, up=up),
            "detectable": detectable,
        }
    )


def _compare_metrics(
    old: RunResult,
    new: RunResult,
    pairs: _Pairs,
    *,
    confidence: float,
    resamples: int,
    seed: int,
) -> list[MetricComparison]:
    """Each dataset-level result both runs computed with the same aggregator, paired."""
    if not (old.aggregators and new.aggregators and pairs.new):
        return []
    before = plan_dataset_evaluators(old.aggregators)
    compared: list[MetricComparison] = []
    for key, evaluator in plan_dataset_evaluators(new.aggregators).items():
        baseline = before.get(key)
        if baseline is None or baseline.spec != evaluator.spec:
            continue  # computed another way in the baseline: nothing to pair
        if key not in old.dataset_results or key not in new.dataset_results:
            continue
        source = evaluator.source_evaluator_name
        old_items = [_item(entry, source) for entry in pairs.old]
        new_items = [_item(entry, source) for entry in pairs.new]
        draws = evaluator.paired_bootstrap(
            old_items, new_items, resamples=resamples, seed=stream_seed(seed, key)
        )
        figures: dict[str, object] = {}
        if draws is not None:
            shared_new = evaluator.evaluate(new_items).score or 0.0
            shared_old = evaluator.evaluate(old_items).score or 0.0
            figures.update(
                difference=shared_new - shared_old,
                interval=percentile_interval(draws, confidence=confidence),
                p_value=bootstrap_p_value(draws),
            )
        compared.append(
            MetricComparison.model_validate(
                {
                    "key": key,
                    "n": len(pairs.new),
                    "old": old.dataset_results[key].score,
                    "new": new.dataset_results[key].score,
                    **figures,
                }
            )
        )
    return compared


def _item(entry: EntryResult, source: str) -> ClassificationItem:
    """The source evaluator's evaluation of the entry (a skipped one when it has none)."""
    found = entry.evaluation(source)
    return found if found is not None else Evaluation.skip("not evaluated", evaluator=source)
