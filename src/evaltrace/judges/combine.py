"""Combining several metrics of one entry into one pass/fail verdict and one score.

:class:`MetricsAggregator` is the polarity-aware default: the entry succeeds only when every
metric succeeds, and its score is the mean quality, with lower-is-better scores read as
``1 - score``. :class:`WeightedMetricsAggregator` scores by weighted rubric levels instead.
:class:`CombinedEvaluator` runs several evaluators on one evaluable and combines their results
with an aggregator, so the combination can be used wherever one evaluator can.

Sums are computed with :func:`math.fsum`, so a mean is the correctly rounded mean of the
given floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeAlias

import anyio

from evaltrace.checks import check_timeout
from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluate

__all__ = [
    "AggregationResult",
    "CombinedEvaluator",
    "MetricResult",
    "MetricsAggregator",
    "RubricMapping",
    "WeightedMetricsAggregator",
    "rubric_score_from_details",
]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class MetricResult:
    """One metric's outcome for one entry.

    Example:
        >>> MetricResult(0.2, True, higher_is_better=False).quality
        0.8
    """

    score: float
    """The metric's normalised score, in ``[0, 1]``."""
    success: bool
    """Whether the metric passed."""
    higher_is_better: bool = True
    """False for metrics where a lower score is better (toxicity, hallucination rate, ...)."""
    rubric_score: float | None = None
    """The raw rubric level the score came from (e.g. 1 to 5), when the metric has one."""
    reasoning: str = ""
    """Why the metric gave this score."""

    def __post_init__(self) -> None:
        if not _is_number(self.score) or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"MetricResult.score must be a number in [0, 1], got {self.score!r}")
        if self.rubric_score is not None and (
            not _is_number(self.rubric_score) or not math.isfinite(self.rubric_score)
        ):
            raise ValueError(
                f"MetricResult.rubric_score must be a finite number or None, "
                f"got {self.rubric_score!r}"
            )

    @property
    def quality(self) -> float:
        """The score with polarity applied: ``score``, or ``1 - score`` if lower is better."""
        return self.score if self.higher_is_better else 1.0 - self.score


@dataclass(frozen=True)
class AggregationResult:
    """The combined outcome of an entry's metrics.

    Example:
        >>> AggregationResult(aggregate_success=True, aggregate_score=0.75).aggregate_score
        0.75
    """

    aggregate_success: bool
    """True when the aggregator's success rule holds (by default: every metric passed)."""
    aggregate_score: float
    """The combined score (by default: the polarity-aware mean)."""


class MetricsAggregator:
    """Combine named metric results: AND of successes, polarity-aware mean of scores.

    Subclass it and override :meth:`compute_success` or :meth:`compute_score` to change one
    rule while keeping the other.

    Example:
        >>> result = MetricsAggregator().aggregate(
        ...     {
        ...         "relevance": MetricResult(0.75, True),
        ...         "toxicity": MetricResult(0.25, True, higher_is_better=False),
        ...     }
        ... )
        >>> result.aggregate_success, result.aggregate_score
        (True, 0.75)
    """

    def check_metric_names(self, names: Mapping[str, object]) -> None:
        """Reject metric names this aggregator cannot score (by default, none).

        :class:`CombinedEvaluator` calls it at construction, so a configuration mistake is
        reported before any evaluator runs.

        Raises:
            ValueError: when some metric cannot be aggregated.
        """
        return

    def compute_success(self, named_results: Mapping[str, MetricResult]) -> bool:
        """Whether every metric succeeded; False when there is none (nothing was shown).

        Args:
            named_results: The metric results by name.

        Returns:
            The AND of the metrics' ``success`` flags, or False for no metric.
        """
        return bool(named_results) and all(r.success for r in named_results.values())

    def compute_score(self, named_results: Mapping[str, MetricResult]) -> float:
        """The mean of the metrics' :attr:`MetricResult.quality`; 0.0 when there is none.

        Args:
            named_results: The metric results by name.

        Returns:
            The mean quality, with lower-is-better scores inverted as ``1 - score``.
        """
        if not named_results:
            return 0.0
        return math.fsum(r.quality for r in named_results.values()) / len(named_results)

    def aggregate(self, named_results: Mapping[str, MetricResult]) -> AggregationResult:
        """Combine the metric results.

        Args:
            named_results: The metric results by name.

        Returns:
            The success verdict and the score.
        """
        return AggregationResult(
            aggregate_success=self.compute_success(named_results),
            aggregate_score=self.compute_score(named_results),
        )


RubricMapping: TypeAlias = Mapping[Any, float] | Callable[[float], float]
"""Maps a rubric level to a score: a table keyed by level (``{1: 0.0, 2: 0.5, 3: 1.0}``) or
a function of the level."""


class WeightedMetricsAggregator(MetricsAggregator):
    """Score by weighted, mapped rubric levels: ``Σ wᵢ·mapᵢ(rubric_scoreᵢ) / Σ wᵢ``.

    The sums run over the metrics present in the results. Each of them needs a weight, a
    mapping and a ``rubric_score``; a table mapping must contain the level given. A total
    weight of 0 scores 0.0. Success is still the AND of the metrics' successes.

    Args:
        weights: A non-negative weight per metric name.
        score_mapping: A :data:`RubricMapping` per metric name.

    Raises:
        ValueError: for a negative or non-finite weight.
        TypeError: for a mapping that is neither a table nor a callable.

    Example:
        >>> aggregator = WeightedMetricsAggregator(
        ...     weights={"accuracy": 3, "style": 1},
        ...     score_mapping={"accuracy": {1: 0.0, 2: 0.5, 3: 1.0}, "style": lambda r: r / 4},
        ... )
        >>> aggregator.compute_score(
        ...     {
        ...         "accuracy": MetricResult(1.0, True, rubric_score=3),
        ...         "style": MetricResult(0.5, True, rubric_score=2),
        ...     }
        ... )
        0.875
    """

    def __init__(
        self, weights: Mapping[str, float], score_mapping: Mapping[str, RubricMapping]
    ) -> None:
        for name, weight in weights.items():
            if not _is_number(weight) or not math.isfinite(weight) or weight < 0:
                raise ValueError(f"weights[{name!r}] must be a finite number >= 0, got {weight!r}")
        for name, mapping in score_mapping.items():
            if not isinstance(mapping, Mapping) and not callable(mapping):
                raise TypeError(
                    f"score_mapping[{name!r}] must be a dict from rubric level to score or a "
                    f"callable, got {type(mapping).__name__}"
                )
        self.weights = dict(weights)
        """The weight of each metric."""
        self.score_mapping = dict(score_mapping)
        """How each metric's rubric level becomes a score."""

    def check_metric_names(self, names: Mapping[str, object]) -> None:
        """Reject metrics without a weight or a mapping.

        Raises:
            ValueError: naming the first metric that lacks one, and what to add.
        """
        for name in names:
            self._require_configured(name)

    def _require_configured(self, name: str) -> tuple[float, RubricMapping]:
        if name not in self.weights:
            raise ValueError(
                f"metric {name!r} has no weight: add weights[{name!r}] = <number>; "
                f"weighted metrics: {sorted(self.weights)}"
            )
        if name not in self.score_mapping:
            raise ValueError(
                f"metric {name!r} has no score mapping: add score_mapping[{name!r}] = "
                "{level: score, ...} or a function of the rubric level"
            )
        return self.weights[name], self.score_mapping[name]

    def _mapped(self, name: str, result: MetricResult, mapping: RubricMapping) -> float:
        level = result.rubric_score
        if level is None:
            raise ValueError(
                f"metric {name!r} has no rubric_score; WeightedMetricsAggregator maps rubric "
                f"levels, so build it as MetricResult(..., rubric_score=<level>)"
            )
        if isinstance(mapping, Mapping):
            if level not in mapping:
                raise ValueError(
                    f"metric {name!r} has rubric level {level!r}, which score_mapping[{name!r}] "
                    f"does not list (it lists {sorted(mapping)}); add a score for it"
                )
            value = mapping[level]
        else:
            value = mapping(level)
        if not _is_number(value) or not math.isfinite(value):
            raise ValueError(
                f"score_mapping[{name!r}] gave {value!r} for rubric level {level!r}; "
                "it must give a finite number"
            )
        return float(value)

    def compute_score(self, named_results: Mapping[str, MetricResult]) -> float:
        """The weighted mean of the mapped rubric levels; 0.0 for no metric or no weight.

        Args:
            named_results: The metric results by name.

        Returns:
            ``Σ wᵢ·mapᵢ(rubric_scoreᵢ) / Σ wᵢ`` over the metrics given.

        Raises:
            ValueError: when a metric has no weight, no mapping or no rubric score, or its
                level is missing from its table.
        """
        weighted: list[float] = []
        weights: list[float] = []
        for name, result in named_results.items():
            weight, mapping = self._require_configured(name)
            weighted.append(weight * self._mapped(name, result, mapping))
            weights.append(weight)
        total = math.fsum(weights)
        if total == 0:
            return 0.0
        return math.fsum(weighted) / total


def rubric_score_from_details(evaluation: Evaluation) -> float | None:
    """The ``rubric_score`` an evaluator put in its ``details``, if any.

    Args:
        evaluation: An evaluation whose ``details`` may hold ``rubric_score`` (a dict key or
            a model attribute).

    Returns:
        The rubric score as a float, or None when there is none.

    Raises:
        ValueError: when ``rubric_score`` is present but not a finite number.

    Example:
        >>> rubric_score_from_details(Evaluation(score=1.0, details={"rubric_score": 5}))
        5.0
    """
    details = evaluation.details
    value = (
        details.get("rubric_score")
        if isinstance(details, dict)
        else getattr(details, "rubric_score", None)
    )
    if value is None:
        return None
    if not _is_number(value) or not math.isfinite(value):
        raise ValueError(f"details['rubric_score'] must be a finite number, got {value!r}")
    return float(value)


class CombinedEvaluator:
    """An evaluator that runs several named evaluators and combines them into one result.

    The evaluators run concurrently through :func:`evaluate`. Each scored evaluation becomes a
    :class:`MetricResult` whose ``success`` is its polarity-adjusted score (:attr:`quality`)
    reaching ``threshold``: ``score >= threshold`` normally, ``1 - score >= threshold`` for a
    lower-is-better metric. The aggregator then gives the verdict and the score.

    The result's score is the aggregate score clamped to ``[0, 1]``; its ``details`` hold
    ``metrics`` (each metric's result), ``aggregate_success``, ``aggregate_score`` (unclamped),
    ``threshold`` and ``skipped``. An errored metric makes the combined evaluation errored
    (``error.type == "MetricErrored"``, naming the metric); a skipped metric is left out of the
    aggregate, and when all are skipped the combined evaluation is skipped.

    Args:
        evaluators: The evaluators to combine, by metric name.
        aggregator: How to combine; :class:`MetricsAggregator` by default.
        threshold: The quality a metric needs to succeed.
        higher_is_better: The polarity of each metric (True when not listed).
        rubric_from: Reads a metric's rubric level from its evaluation;
            :func:`rubric_score_from_details` by default.
        name: The display name.
        timeout: Seconds each evaluator may take before it counts as errored.

    Raises:
        ValueError: for no evaluator, a threshold outside ``[0, 1]``, polarity given for an
            unknown metric, or metrics the aggregator cannot score.

    Example:
        >>> import anyio
        >>> combined = CombinedEvaluator(
        ...     {"has_output": lambda e: 1.0, "toxicity": lambda e: 0.25},
        ...     higher_is_better={"toxicity": False},
        ... )
        >>> result = anyio.run(combined, Evaluable())
        >>> result.score, result.details["aggregate_success"]
        (0.875, True)
    """

    def __init__(
        self,
        evaluators: Mapping[str, EvaluatorFunction],
        *,
        aggregator: MetricsAggregator | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        higher_is_better: Mapping[str, bool] | None = None,
        rubric_from: Callable[[Evaluation], float | None] | None = None,
        name: str = "combined",
        timeout: float | None = None,
    ) -> None:
        if not evaluators:
            raise ValueError("CombinedEvaluator needs at least one evaluator to combine")
        if not _is_number(threshold) or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
        polarity = dict(higher_is_better or {})
        unknown = sorted(set(polarity) - set(evaluators))
        if unknown:
            raise ValueError(
                f"higher_is_better names metrics that are not evaluated: {unknown}; "
                f"the metrics are {sorted(evaluators)}"
            )
        check_timeout(timeout)
        self.aggregator = aggregator if aggregator is not None else MetricsAggregator()
        """How the metric results are combined."""
        self.aggregator.check_metric_names(evaluators)
        self.evaluators = dict(evaluators)
        """The evaluators, by metric name."""
        self.threshold = float(threshold)
        """The quality a metric needs to succeed."""
        self.higher_is_better = {metric: polarity.get(metric, True) for metric in evaluators}
        """The polarity of every metric."""
        self.rubric_from = rubric_from or rubric_score_from_details
        """Reads a metric's rubric level from its evaluation."""
        self.name = name
        """This evaluator's display name."""
        self.timeout = timeout
        """The per-evaluator timeout in seconds (None: none)."""

    def __repr__(self) -> str:
        return f"CombinedEvaluator({sorted(self.evaluators)}, name={self.name!r})"

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Run every evaluator on ``evaluable`` and combine their results.

        Args:
            evaluable: What to score.
            trace: The captured trace tree, passed on to the evaluators that accept it.

        Returns:
            The combined evaluation (see the class documentation).
        """
        evaluations = await self._run_all(evaluable, trace)
        metrics: dict[str, dict[str, Any]] = {
            metric: {
                "status": ev.status,
                "score": ev.score,
                "reasoning": ev.reasoning,
                "error": ev.error.model_dump() if ev.error is not None else None,
            }
            for metric, ev in evaluations.items()
        }
        errored = {m: ev.error for m, ev in evaluations.items() if ev.error is not None}
        if errored:
            listing = "; ".join(f"{m!r}: {err.type}: {err.message}" for m, err in errored.items())
            noun = "metric" if len(errored) == 1 else "metrics"
            return Evaluation.errored(
                EvaluationError(
                    type="MetricErrored",
                    message=f"{noun} {', '.join(map(repr, errored))} errored ({listing})",
                    where="evaluator",
                ),
                evaluator=self.name,
                details={"metrics": metrics, "threshold": self.threshold},
            )
        skipped = [m for m, ev in evaluations.items() if ev.skipped]
        if len(skipped) == len(evaluations):
            return Evaluation.skip(
                f"every metric was skipped: {', '.join(skipped)}",
                details={"metrics": metrics, "threshold": self.threshold, "skipped": skipped},
                evaluator=self.name,
            )
        try:
            results = {
                m: self._metric_result(m, ev) for m, ev in evaluations.items() if not ev.skipped
            }
            aggregated = self.aggregator.aggregate(results)
        except Exception as exc:  # a failing rubric reader or aggregator is reported as data
            return Evaluation.errored(
                exc,
                where="aggregation",
                evaluator=self.name,
                details={"metrics": metrics, "threshold": self.threshold, "skipped": skipped},
            )
        for metric, result in results.items():
            metrics[metric].update(asdict(result))
        return Evaluation(
            score=min(1.0, max(0.0, aggregated.aggregate_score)),
            reasoning=self._summary(results, aggregated, skipped),
            details={
                "metrics": metrics,
                "aggregate_success": aggregated.aggregate_success,
                "aggregate_score": aggregated.aggregate_score,
                "threshold": self.threshold,
                "skipped": skipped,
            },
            evaluator=self.name,
        )

    async def _run_all(self, evaluable: Evaluable, trace: Any) -> dict[str, Evaluation]:
        evaluations: dict[str, Evaluation] = {}

        async def run(metric: str, evaluator: EvaluatorFunction) -> None:
            evaluations[metric] = await evaluate(
                evaluator, evaluable, trace=trace, timeout=self.timeout, name=metric
            )

        async with anyio.create_task_group() as group:
            for metric, evaluator in self.evaluators.items():
                group.start_soon(run, metric, evaluator)
        return {metric: evaluations[metric] for metric in self.evaluators}

    def _metric_result(self, metric: str, evaluation: Evaluation) -> MetricResult:
        score = evaluation.score
        if score is None:  # errored and skipped evaluations are handled before this
            raise ValueError(f"metric {metric!r} has no score")
        higher = self.higher_is_better[metric]
        quality = score if higher else 1.0 - score
        return MetricResult(
            score=score,
            success=quality >= self.threshold,
            higher_is_better=higher,
            rubric_score=self.rubric_from(evaluation),
            reasoning=evaluation.reasoning,
        )

    def _summary(
        self,
        results: Mapping[str, MetricResult],
        aggregated: AggregationResult,
        skipped: list[str],
    ) -> str:
        passed = sum(1 for r in results.values() if r.success)
        parts = [
            f"{metric} {r.score:g}{'' if r.higher_is_better else ' (lower is better)'} "
            f"{'passed' if r.success else 'failed'}"
            for metric, r in results.items()
        ]
        verdict = "all passed" if aggregated.aggregate_success else "not all passed"
        text = (
            f"{passed} of {len(results)} metrics passed at threshold {self.threshold:g} "
            f"({verdict}): {'; '.join(parts)}. Aggregate score {aggregated.aggregate_score:g}."
        )
        if skipped:
            text += f" Skipped: {', '.join(skipped)}."
        return text
