"""Repeated-judge strategies: how the runs of one judge on one evaluable become one score.

:class:`~evaltrace.judges.Repeated` runs a judge several times; a run that errored or was
skipped is dropped, and the valid runs are aggregated by a strategy
(:class:`BaseJudgeAggregator`), looked up by name in a registry users extend
(:func:`register_aggregation_strategy`). Every strategy returns one :class:`Evaluation` whose
score is the aggregate, whose reasoning is the reasoning of a *representative* run, and whose
``details`` describe the whole run (see :class:`RepeatedDetails`).

Arithmetic is exact. A score is read at its shortest decimal form (``repr``), so ``0.1`` means
one tenth; means, distances to the mean and variances are computed as fractions and rounded to
a float once, at the end. Ties between runs are therefore real ties, as a person reading the
scores would see them, not artefacts of binary floating point.

``agreement`` measures how much the valid runs agree:

* when the scores are *discrete* (some score occurs more than once, or every score is 0 or 1)
  it is the share of runs that gave the modal score;
* otherwise it is ``max(0, 1 - std / mean)`` (one minus the coefficient of variation, with the
  population standard deviation); when the mean is 0 it is 1.0 if all scores are equal, else 0.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from enum import StrEnum
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple, TypeAlias, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluation import Evaluation, EvaluationError, EvaluationStatus

__all__ = [
    "AggregationMethod",
    "AggregationSelector",
    "AggregationStrategyFactory",
    "AtLeastKAggregationStrategy",
    "AverageAggregationStrategy",
    "BaseJudgeAggregator",
    "JudgeError",
    "JudgeRun",
    "MajorityVoteAggregationStrategy",
    "MaxAggregationStrategy",
    "MedianAggregationStrategy",
    "MinAggregationStrategy",
    "NoValidJudgeResultsError",
    "PassAtKAggregationStrategy",
    "RepeatedDetails",
    "RepeatedResults",
    "aggregate_repeated_results",
    "build_aggregation_strategy",
    "judge_errors",
    "register_aggregation_strategy",
    "unaggregated_details",
]


class AggregationMethod(StrEnum):
    """The built-in ways of aggregating repeated judge runs.

    Example:
        >>> AggregationMethod("median") is AggregationMethod.MEDIAN
        True
    """

    AVERAGE = "average"
    """Mean score; the representative is the run closest to the mean."""
    MEDIAN = "median"
    """Upper median (``sorted(scores)[n // 2]``), a score some run really gave."""
    MAJORITY_VOTE = "majority_vote"
    """Most frequent score; a tie falls back to the median."""
    MIN = "min"
    """Lowest score (the strictest run)."""
    MAX = "max"
    """Highest score (the most lenient run)."""
    AT_LEAST_K = "at_least_k"
    """1.0 when at least ``k`` valid runs pass a threshold, else 0.0."""
    PASS_AT_K = "pass_at_k"
    """Unbiased pass@k estimate over the valid runs."""


class JudgeError(BaseModel):
    """Why one judge run has no score.

    Example:
        >>> str(JudgeError(index=2, type="TimeoutError", message="too slow"))
        'run 2: TimeoutError: too slow'
    """

    model_config = ConfigDict(frozen=True)

    index: int
    """The run's position among all runs (0-based)."""
    type: str
    """The error type name; ``"Skipped"`` for a run whose judge declined to score."""
    message: str
    """The error message, or the reason the run was skipped."""

    def __str__(self) -> str:
        return f"run {self.index}: {self.type}: {self.message}"


class JudgeRun(BaseModel):
    """One judge run as recorded in :class:`RepeatedDetails`."""

    model_config = ConfigDict(frozen=True)

    index: int
    """The run's position among all runs (0-based)."""
    status: EvaluationStatus
    """``"scored"``, ``"skipped"`` or ``"errored"``."""
    score: float | None
    """The score the judge gave; ``None`` for an errored or skipped run."""
    reasoning: str
    """The judge's reasoning for this run."""
    error: EvaluationError | None = None
    """What went wrong, for an errored run."""


class RepeatedDetails(BaseModel):
    """The ``details`` of an aggregated evaluation (stored as a JSON dict on the evaluation).

    Read them back typed with ``RepeatedDetails.model_validate(evaluation.details)``. Fields
    that do not apply (``fallback_from`` without a fallback, ``k`` for the median, ...) are left
    out of the stored dict. Custom strategies may add their own keys.

    Example:
        >>> RepeatedDetails(num_judges=1, num_valid=0, method="median").num_valid
        0
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    num_judges: int
    """How many judge runs were configured."""
    num_valid: int
    """How many runs produced a score (errored and skipped runs are not valid)."""
    method: str
    """The aggregation method actually used (``"median"`` after a majority-vote fallback)."""
    judge_errors: list[JudgeError] = Field(default_factory=list)
    """The runs that produced no score, with why."""
    agreement: float | None = None
    """How much the valid runs agree, in ``[0, 1]`` (see the module documentation)."""
    score_distribution: dict[str, int] = Field(default_factory=dict)
    """How many valid runs gave each score, keyed by the score's ``repr``, ascending."""
    std: float | None = None
    """The population standard deviation of the valid scores."""
    representative_index: int | None = None
    """The index of the run whose reasoning the aggregate carries."""
    runs: list[JudgeRun] = Field(default_factory=list)
    """Every run, valid or not, in order."""
    fallback_from: str | None = None
    """The method that was asked for when another one had to be used."""
    fallback_reason: str | None = None
    """Why the fallback happened."""
    k: int | None = None
    """The ``k`` of ``at_least_k`` / ``pass_at_k``."""
    k_used: int | None = None
    """The ``k`` pass@k was computed with: ``min(k, num_valid)``."""
    threshold: float | None = None
    """The pass threshold of ``at_least_k`` / ``pass_at_k``."""
    num_passing: int | None = None
    """How many valid runs scored at least ``threshold``."""


class NoValidJudgeResultsError(EvaltraceError, ValueError):
    """No judge run produced a score (or no run was given at all)."""

    def __init__(self, message: str, judge_errors: Sequence[JudgeError] = ()) -> None:
        super().__init__(message)
        self.judge_errors = list(judge_errors)
        """The runs that produced no score."""


class RepeatedResults(NamedTuple):
    """The valid runs among repeated judge results, and why the others are not valid."""

    valid_results: list[Evaluation]
    """The scored evaluations, in run order."""
    valid_scores: list[float]
    """Their scores, in the same order."""
    valid_indices: list[int]
    """Their indices among all runs."""
    judge_errors: list[JudgeError]
    """The errored and skipped runs, with their indices and messages."""


def judge_errors(all_results: Sequence[Evaluation]) -> list[JudgeError]:
    """The runs that produced no score (errored or skipped), with why, in run order.

    Example:
        >>> [str(error) for error in judge_errors([Evaluation(score=1.0), Evaluation.skip("no")])]
        ['run 1: Skipped: no']
    """
    errors = []
    for index, result in enumerate(all_results):
        if result.error is not None:
            errors.append(
                JudgeError(index=index, type=result.error.type, message=result.error.message)
            )
        elif result.skipped:
            errors.append(JudgeError(index=index, type="Skipped", message=result.reasoning))
    return errors


def aggregate_repeated_results(
    all_results: Sequence[Evaluation], total_judges: int
) -> RepeatedResults:
    """Separate the valid (scored) runs from the errored and skipped ones.

    Args:
        all_results: Every judge run's evaluation, in run order.
        total_judges: How many runs were configured (at least ``len(all_results)``).

    Returns:
        The valid runs with their scores and indices, and the errors of the others.

    Raises:
        NoValidJudgeResultsError: (a ``ValueError``) when ``all_results`` is empty or no run
            produced a score.
        ValueError: when ``total_judges`` is smaller than the number of results.

    Example:
        >>> runs = [Evaluation(score=0.5), Evaluation.errored(ValueError("boom"))]
        >>> aggregate_repeated_results(runs, 2).valid_indices
        [0]
    """
    if not all_results:
        raise NoValidJudgeResultsError(
            "no judge results were given: run the judge at least once before aggregating"
        )
    if total_judges < len(all_results):
        raise ValueError(
            f"total_judges={total_judges} is smaller than the {len(all_results)} results given"
        )
    valid = [(i, r) for i, r in enumerate(all_results) if r.status == "scored"]
    errors = judge_errors(all_results)
    if not valid:
        listing = "; ".join(str(e) for e in errors)
        raise NoValidJudgeResultsError(
            f"none of the {len(all_results)} judge runs produced a score: {listing}", errors
        )
    return RepeatedResults(
        valid_results=[r for _, r in valid],
        valid_scores=[_score_of(r) for _, r in valid],
        valid_indices=[i for i, _ in valid],
        judge_errors=errors,
    )


def _score_of(result: Evaluation) -> float:
    if result.score is None:  # excluded by the callers' status checks
        raise ValueError("an unscored evaluation has no score")
    return result.score


def _exact(score: float) -> Fraction:
    """The score at its shortest decimal form, as an exact fraction."""
    return Fraction(repr(score))


def _exact_mean(scores: Sequence[float]) -> Fraction:
    return sum((_exact(s) for s in scores), Fraction(0)) / len(scores)


def _population_std(scores: Sequence[float]) -> float:
    mean = _exact_mean(scores)
    variance = sum(((_exact(s) - mean) ** 2 for s in scores), Fraction(0)) / len(scores)
    return math.sqrt(variance)


def _agreement(scores: Sequence[float]) -> float:
    counts = Counter(scores)
    if len(counts) < len(scores) or set(counts) <= {0.0, 1.0}:
        return max(counts.values()) / len(scores)
    mean = _exact_mean(scores)
    if mean == 0:
        return 1.0 if len(counts) == 1 else 0.0
    return max(0.0, 1.0 - _population_std(scores) / float(mean))


def _distribution(scores: Sequence[float]) -> dict[str, int]:
    counts = Counter(scores)
    return {repr(score): counts[score] for score in sorted(counts)}


def _first_position(scores: Sequence[float], value: float) -> int:
    return next(i for i, s in enumerate(scores) if s == value)


def _best_position(scores: Sequence[float]) -> int:
    """The highest-scoring run, earliest on ties."""
    return _first_position(scores, max(scores))


def _runs(all_results: Sequence[Evaluation]) -> list[JudgeRun]:
    return [
        JudgeRun(index=i, status=r.status, score=r.score, reasoning=r.reasoning, error=r.error)
        for i, r in enumerate(all_results)
    ]


def _stored(details: RepeatedDetails) -> dict[str, Any]:
    """The details as JSON data, without the top-level fields that do not apply."""
    data = details.model_dump(mode="json")
    return {key: value for key, value in data.items() if value is not None}


def unaggregated_details(
    all_results: Sequence[Evaluation], total_judges: int, method: AggregationMethod | str
) -> dict[str, Any]:
    """The details of runs no strategy aggregated: every run, and why each invalid one is.

    :class:`~evaltrace.judges.Repeated` gives them to the evaluation it returns when no run
    produced a score or when its strategy failed.

    Args:
        all_results: Every judge run's evaluation, in run order.
        total_judges: How many runs were configured.
        method: The aggregation method that was to be used.

    Returns:
        :class:`RepeatedDetails` data (a dict) without an aggregate.
    """
    return _stored(
        RepeatedDetails(
            num_judges=total_judges,
            num_valid=sum(1 for result in all_results if result.status == "scored"),
            method=str(method),
            judge_errors=judge_errors(all_results),
            runs=_runs(all_results),
        )
    )


class BaseJudgeAggregator(ABC):
    """A way of turning repeated judge runs into one evaluation.

    Subclass it, name the method in the class attribute :attr:`strategy`, implement
    :meth:`aggregate`, and (to select it by name) register it with
    :func:`register_aggregation_strategy`. :meth:`build_evaluation` builds the result with
    the standard metadata.

    Example:
        >>> class Strictest(BaseJudgeAggregator):
        ...     strategy = "strictest"
        ...
        ...     def aggregate(self, all_results, total_judges):
        ...         valid = aggregate_repeated_results(all_results, total_judges)
        ...         position = valid.valid_scores.index(min(valid.valid_scores))
        ...         return self.build_evaluation(
        ...             all_results, total_judges, valid,
        ...             score=valid.valid_scores[position], representative_position=position,
        ...         )
        >>> Strictest().aggregate([Evaluation(score=0.9), Evaluation(score=0.3)], 2).score
        0.3
    """

    strategy: ClassVar[AggregationMethod | str]
    """The method's identifier (an :class:`AggregationMethod`, or a custom name)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        concrete = not getattr(cls.aggregate, "__isabstractmethod__", False)
        if concrete and not hasattr(cls, "strategy"):
            raise TypeError(
                f"{cls.__name__} aggregates but names no method: set the class attribute "
                f'strategy (such as strategy = "{cls.__name__.lower()}") in its class body'
            )

    @abstractmethod
    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate every run's evaluation into one.

        Args:
            all_results: Every judge run's evaluation, in run order, errored ones included.
            total_judges: How many runs were configured.

        Returns:
            The aggregated evaluation, with :class:`RepeatedDetails` data (a dict) as ``details``.

        Raises:
            NoValidJudgeResultsError: when no run produced a score.
        """

    def check_num_judges(self, num_judges: int) -> None:
        """Reject a number of runs this strategy cannot work with (by default, none).

        :class:`Repeated` calls it at construction.

        Raises:
            ValueError: when the strategy cannot aggregate ``num_judges`` runs.
        """
        return

    def build_evaluation(
        self,
        all_results: Sequence[Evaluation],
        total_judges: int,
        valid: RepeatedResults,
        *,
        score: float,
        representative_position: int,
        method: AggregationMethod | str | None = None,
        **extra: Any,
    ) -> Evaluation:
        """Build the aggregated evaluation with the standard metadata.

        Args:
            all_results: Every run's evaluation, in run order.
            total_judges: How many runs were configured.
            valid: The output of :func:`aggregate_repeated_results` for ``all_results``.
            score: The aggregated score, in ``[0, 1]``.
            representative_position: The position *among the valid runs* of the run whose
                reasoning the result carries.
            method: The method actually used; this strategy's :attr:`strategy` by default.
            **extra: More :class:`RepeatedDetails` fields (``fallback_from``, ``k``, ...) or
                custom keys.

        Returns:
            The aggregated evaluation.
        """
        scores = valid.valid_scores
        details = RepeatedDetails(
            num_judges=total_judges,
            num_valid=len(scores),
            method=str(method if method is not None else self.strategy),
            judge_errors=valid.judge_errors,
            agreement=_agreement(scores),
            score_distribution=_distribution(scores),
            std=_population_std(scores),
            representative_index=valid.valid_indices[representative_position],
            runs=_runs(all_results),
            **extra,
        )
        return Evaluation(
            score=score,
            reasoning=valid.valid_results[representative_position].reasoning,
            details=_stored(details),
        )


class AverageAggregationStrategy(BaseJudgeAggregator):
    """The mean of the valid scores; the representative is the run closest to the mean.

    The earliest run wins a tie for closest.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8, 0.6, 0.4)]
        >>> result = AverageAggregationStrategy().aggregate(runs, 4)
        >>> result.score, result.details["representative_index"]
        (0.5, 2)
    """

    strategy = AggregationMethod.AVERAGE

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by the mean (see the class documentation)."""
        valid = aggregate_repeated_results(all_results, total_judges)
        mean = _exact_mean(valid.valid_scores)
        distances = [abs(_exact(s) - mean) for s in valid.valid_scores]
        position = distances.index(min(distances))
        return self.build_evaluation(
            all_results, total_judges, valid, score=float(mean), representative_position=position
        )


class MedianAggregationStrategy(BaseJudgeAggregator):
    """The upper median ``sorted(scores)[n // 2]``: always a score some run really gave.

    The representative is the earliest run that gave it.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8, 0.6, 0.4)]
        >>> MedianAggregationStrategy().aggregate(runs, 4).score
        0.6
    """

    strategy = AggregationMethod.MEDIAN

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by the upper median (see the class documentation)."""
        valid = aggregate_repeated_results(all_results, total_judges)
        return _by_median(self, all_results, total_judges, valid)


def _by_median(
    strategy: BaseJudgeAggregator,
    all_results: Sequence[Evaluation],
    total_judges: int,
    valid: RepeatedResults,
    **extra: Any,
) -> Evaluation:
    scores = valid.valid_scores
    median = sorted(scores)[len(scores) // 2]
    return strategy.build_evaluation(
        all_results,
        total_judges,
        valid,
        score=median,
        representative_position=_first_position(scores, median),
        method=AggregationMethod.MEDIAN,
        **extra,
    )


class MajorityVoteAggregationStrategy(BaseJudgeAggregator):
    """The most frequent score; when several scores tie for most frequent, the median.

    After a fallback ``details["method"]`` is ``"median"``, ``details["fallback_from"]`` is
    ``"majority_vote"`` and ``details["fallback_reason"]`` names the tied scores. The
    representative is the earliest run that gave the winning score.

    Example:
        >>> runs = [Evaluation(score=s) for s in (1.0, 0.0, 1.0)]
        >>> MajorityVoteAggregationStrategy().aggregate(runs, 3).score
        1.0
    """

    strategy = AggregationMethod.MAJORITY_VOTE

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by majority vote (see the class documentation)."""
        valid = aggregate_repeated_results(all_results, total_judges)
        counts = Counter(valid.valid_scores)
        top = max(counts.values())
        winners = sorted(score for score, count in counts.items() if count == top)
        if len(winners) > 1:
            tied = ", ".join(repr(s) for s in winners)
            votes = "1 vote" if top == 1 else f"{top} votes"
            return _by_median(
                self,
                all_results,
                total_judges,
                valid,
                fallback_from=AggregationMethod.MAJORITY_VOTE.value,
                fallback_reason=f"no single most frequent score: {tied} have {votes} each",
            )
        return self.build_evaluation(
            all_results,
            total_judges,
            valid,
            score=winners[0],
            representative_position=_first_position(valid.valid_scores, winners[0]),
        )


class MinAggregationStrategy(BaseJudgeAggregator):
    """The lowest valid score; the representative is the earliest run that gave it.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8)]
        >>> MinAggregationStrategy().aggregate(runs, 2).score
        0.2
    """

    strategy = AggregationMethod.MIN

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by the minimum."""
        return _by_extreme(self, all_results, total_judges, min)


class MaxAggregationStrategy(BaseJudgeAggregator):
    """The highest valid score; the representative is the earliest run that gave it.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8)]
        >>> MaxAggregationStrategy().aggregate(runs, 2).score
        0.8
    """

    strategy = AggregationMethod.MAX

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by the maximum."""
        return _by_extreme(self, all_results, total_judges, max)


def _by_extreme(
    strategy: BaseJudgeAggregator,
    all_results: Sequence[Evaluation],
    total_judges: int,
    pick: Callable[[Sequence[float]], float],
) -> Evaluation:
    """Aggregate by the score ``pick`` chooses, represented by the earliest run that gave it."""
    valid = aggregate_repeated_results(all_results, total_judges)
    chosen = pick(valid.valid_scores)
    return strategy.build_evaluation(
        all_results,
        total_judges,
        valid,
        score=chosen,
        representative_position=_first_position(valid.valid_scores, chosen),
    )


def _check_k_and_threshold(k: object, threshold: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number of runs >= 1, got {k!r}")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 <= threshold <= 1.0
    ):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")


class _KOfNStrategy(BaseJudgeAggregator):
    """Shared construction and checks of the strategies parameterised by ``k``."""

    def __init__(self, k: int, threshold: float = DEFAULT_THRESHOLD) -> None:
        _check_k_and_threshold(k, threshold)
        self.k = k
        """The number of runs the strategy is about."""
        self.threshold = float(threshold)
        """A run passes when its score is at least this."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self.k}, threshold={self.threshold})"

    def check_num_judges(self, num_judges: int) -> None:
        """Reject ``k`` larger than the number of runs.

        Raises:
            ValueError: when ``k > num_judges``.
        """
        if self.k > num_judges:
            raise ValueError(
                f"{self.strategy} needs k <= n, but k={self.k} and n={num_judges}: "
                f"run the judge at least {self.k} times or lower k"
            )


class AtLeastKAggregationStrategy(_KOfNStrategy):
    """1.0 when at least ``k`` valid runs score ``>= threshold``, else 0.0.

    Errored and skipped runs never count as passing, so fewer than ``k`` valid runs give 0.0.
    The representative is the highest-scoring run (a passing one whenever any passes),
    earliest on ties. ``details`` adds ``k``, ``threshold`` and ``num_passing``.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8, 0.6, 0.4)]
        >>> AtLeastKAggregationStrategy(k=2).aggregate(runs, 4).score
        1.0
    """

    strategy = AggregationMethod.AT_LEAST_K

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by counting passing runs (see the class documentation)."""
        valid = aggregate_repeated_results(all_results, total_judges)
        passing = sum(1 for s in valid.valid_scores if s >= self.threshold)
        return self.build_evaluation(
            all_results,
            total_judges,
            valid,
            score=1.0 if passing >= self.k else 0.0,
            representative_position=_best_position(valid.valid_scores),
            k=self.k,
            threshold=self.threshold,
            num_passing=passing,
        )


class PassAtKAggregationStrategy(_KOfNStrategy):
    """The unbiased pass@k estimate: the chance that k of the valid runs include a pass.

    With ``n`` valid runs of which ``c`` score ``>= threshold``, the score is
    ``1 - C(n - c, k) / C(n, k)``, computed exactly. ``k = 1`` gives ``c / n``; ``k = n``
    gives 1.0 when any run passes. When errors leave fewer than ``k`` valid runs, ``k`` is
    lowered to ``n`` and ``details["k_used"]`` says so. The representative is the
    highest-scoring run, earliest on ties. ``details`` adds ``k``, ``k_used``, ``threshold``
    and ``num_passing``.

    Example:
        >>> runs = [Evaluation(score=s) for s in (0.2, 0.8, 0.6, 0.4)]
        >>> round(PassAtKAggregationStrategy(k=2).aggregate(runs, 4).score, 4)
        0.8333
    """

    strategy = AggregationMethod.PASS_AT_K

    def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
        """Aggregate by the pass@k estimate (see the class documentation)."""
        valid = aggregate_repeated_results(all_results, total_judges)
        n = len(valid.valid_scores)
        passing = sum(1 for s in valid.valid_scores if s >= self.threshold)
        k = min(self.k, n)
        estimate = 1 - Fraction(math.comb(n - passing, k), math.comb(n, k))
        return self.build_evaluation(
            all_results,
            total_judges,
            valid,
            score=float(estimate),
            representative_position=_best_position(valid.valid_scores),
            k=self.k,
            k_used=k,
            threshold=self.threshold,
            num_passing=passing,
        )


AggregationStrategyFactory: TypeAlias = Callable[..., BaseJudgeAggregator]
"""Builds a strategy from keyword options (a strategy class is one)."""

AggregationSelector: TypeAlias = AggregationMethod | str | BaseJudgeAggregator
"""A strategy, or the registered name of one."""

_Factory = TypeVar("_Factory", bound=AggregationStrategyFactory)

_STRATEGIES: dict[str, AggregationStrategyFactory] = {
    AggregationMethod.AVERAGE.value: AverageAggregationStrategy,
    AggregationMethod.MEDIAN.value: MedianAggregationStrategy,
    AggregationMethod.MAJORITY_VOTE.value: MajorityVoteAggregationStrategy,
    AggregationMethod.MIN.value: MinAggregationStrategy,
    AggregationMethod.MAX.value: MaxAggregationStrategy,
    AggregationMethod.AT_LEAST_K.value: AtLeastKAggregationStrategy,
    AggregationMethod.PASS_AT_K.value: PassAtKAggregationStrategy,
    # The names an app's repeated runs (epochs) are reduced by, as eval harnesses call them.
    "mean": AverageAggregationStrategy,
    "mode": MajorityVoteAggregationStrategy,
}


def _method_key(name: str) -> str:
    return name.strip().lower()


@overload
def register_aggregation_strategy(
    name: str, factory: None = None, *, replace: bool = False
) -> Callable[[_Factory], _Factory]: ...
@overload
def register_aggregation_strategy(
    name: str, factory: _Factory, *, replace: bool = False
) -> _Factory: ...
def register_aggregation_strategy(
    name: str, factory: AggregationStrategyFactory | None = None, *, replace: bool = False
) -> Any:
    """Make a strategy selectable by name in :func:`build_aggregation_strategy` and Repeated.

    Call it with a factory (a strategy class, or any callable taking keyword options and
    returning a :class:`BaseJudgeAggregator`), or use it as a class decorator.

    Args:
        name: The method name, matched case-insensitively.
        factory: Builds the strategy; omit it to get a decorator.
        replace: Allow replacing an existing registration (built-ins included).

    Returns:
        ``factory`` itself, or a decorator that registers and returns its argument.

    Raises:
        ValueError: when ``name`` is empty or already registered and ``replace`` is false.

    Example:
        >>> @register_aggregation_strategy("strictest_of_all")
        ... class Strictest(MinAggregationStrategy):
        ...     strategy = "strictest_of_all"
        >>> build_aggregation_strategy("Strictest_Of_All").strategy
        'strictest_of_all'
    """
    key = _method_key(name)
    if not key:
        raise ValueError("an aggregation method name must not be empty")
    if key in _STRATEGIES and not replace:
        raise ValueError(
            f"aggregation method {key!r} is already registered; pass replace=True to replace it"
        )

    def register(target: _Factory) -> _Factory:
        _STRATEGIES[key] = target
        return target

    return register if factory is None else register(factory)


def build_aggregation_strategy(method: AggregationSelector, **options: Any) -> BaseJudgeAggregator:
    """Return the strategy for ``method``.

    Args:
        method: An :class:`AggregationMethod`, a registered method name (case-insensitive)
            or a strategy instance (returned as is).
        **options: Keyword arguments for the named strategy's factory. ``at_least_k`` and
            ``pass_at_k`` need ``k`` (and accept ``threshold``); the others take none.

    Returns:
        The strategy.

    Raises:
        ValueError: for an unknown name (the message lists the known ones), for options the
            strategy does not accept or misses, or for options given with an instance.
        TypeError: when ``method`` is neither a name nor a strategy instance.

    Example:
        >>> build_aggregation_strategy("MEDIAN").strategy
        <AggregationMethod.MEDIAN: 'median'>
        >>> build_aggregation_strategy("pass_at_k", k=2).k
        2
    """
    if isinstance(method, BaseJudgeAggregator):
        if options:
            raise ValueError(
                f"options {sorted(options)} apply only when building a strategy by name; "
                f"configure the {type(method).__name__} instance instead"
            )
        return method
    if isinstance(method, type) and issubclass(method, BaseJudgeAggregator):
        raise TypeError(
            f"build_aggregation_strategy() got the class {method.__name__}; "
            f"pass an instance such as {method.__name__}(...) or a method name"
        )
    if not isinstance(method, str):
        raise TypeError(
            "build_aggregation_strategy() takes an AggregationMethod, a method name or a "
            f"BaseJudgeAggregator instance, got {type(method).__name__} {method!r}"
        )
    key = _method_key(method)
    factory = _STRATEGIES.get(key)
    if factory is None:
        known = ", ".join(sorted(_STRATEGIES))
        raise ValueError(f"unknown aggregation method {method!r}; known methods: {known}")
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a callable without an inspectable signature
        signature = None
    if signature is not None:
        try:
            signature.bind(**options)
        except TypeError as exc:
            raise ValueError(
                f"cannot build aggregation method {key!r} with options {options}: {exc}. "
                f"Its options are {signature}; e.g. build_aggregation_strategy({key!r}, k=2) "
                "for at_least_k and pass_at_k, or pass a strategy instance"
            ) from exc
    strategy = factory(**options)
    if not isinstance(strategy, BaseJudgeAggregator):
        raise TypeError(
            f"the factory registered for {key!r} returned {type(strategy).__name__}, "
            "not a BaseJudgeAggregator"
        )
    return strategy
