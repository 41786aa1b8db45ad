"""Repeated judging: run a noisy judge several times and aggregate the scores it gave.

:class:`Repeated` is the evaluator: it runs its judge ``n`` times concurrently and hands the
runs to a strategy of :mod:`evaltrace.judges.strategies` (median by default), which turns
them into one :class:`Evaluation` whose ``details`` describe every run. Each run is a sample
of its own (:func:`~evaltrace.llm.judge_sample`): the judge cache keys the k-th run apart
from the others, so ``n`` runs are ``n`` samples, on the first run of a suite and on every
later one. With ``early_stop=True`` it stops asking once the runs made settle the verdict
the ``n`` would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import anyio

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_count, check_timeout
from evaltrace.evals.criteria import pass_threshold
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluate, evaluator_name
from evaltrace.judges.strategies import (
    AggregationMethod,
    AggregationSelector,
    build_aggregation_strategy,
    judge_errors,
    unaggregated_details,
)
from evaltrace.llm.samples import judge_sample

__all__ = ["Repeated"]


class Repeated:
    """An evaluator that runs a judge ``n`` times concurrently and aggregates its scores.

    Each run goes through :func:`evaluate`, so a run that raises, times out or returns an
    invalid score is recorded as an error and dropped from the aggregate. When no run produces
    a score, the result is an errored evaluation (``error.type == "AllJudgesFailed"``) whose
    message lists each run's error (a skipped one when every run was skipped); calling a
    ``Repeated`` never raises for its judge's failures.

    With ``early_stop=True`` the runs are made in waves, each as small as could settle the
    verdict, and none is made once the runs so far settle it: when every way the runs left
    could go (any score, or none) gives the same verdict (see
    :meth:`BaseJudgeAggregator.settled`). The verdict is then exactly the one all ``n`` runs
    would give: the status and the pass or fail at the run's threshold
    (:func:`~evaltrace.evals.pass_threshold`), and for ``majority_vote`` and ``at_least_k``
    the score itself. ``details["num_taken"]`` says how many runs were made and
    ``details["stop_reason"]`` why no more were; agreement, spread and the distribution are
    over the runs made.

    Args:
        judge: The evaluator to repeat (sync or async).
        n: How many times to run it.
        strategy: How to aggregate: an :class:`AggregationMethod`, a registered name or a
            strategy instance (``PassAtKAggregationStrategy(k=2)``).
        max_concurrency: At most this many runs of one call at a time; unbounded when None.
        timeout: Seconds each run may take before it counts as errored.
        name: The display name; ``"{judge name} x{n} ({method})"`` by default.
        early_stop: Stop asking once the runs made settle the verdict (see above).

    Raises:
        TypeError: ``judge`` is not callable, ``name`` is not a string, or ``early_stop`` is
            not a bool.
        ValueError: for ``n`` or ``max_concurrency`` that is not a whole number of at least 1,
            a non-positive ``timeout``, or a strategy that cannot work with ``n`` runs
            (``k > n``).

    Example:
        >>> import anyio
        >>> scores = iter([0.2, 0.8, 0.6])
        >>> judge = Repeated(lambda e: next(scores), n=3, strategy="median", max_concurrency=1)
        >>> anyio.run(judge, Evaluable()).score
        0.6
        >>> votes = iter([1.0, 1.0, 1.0])
        >>> settled = Repeated(lambda e: next(votes), n=5, strategy="majority_vote",
        ...                    max_concurrency=1, early_stop=True)
        >>> anyio.run(settled, Evaluable()).details["num_taken"]
        3
    """

    def __init__(
        self,
        judge: EvaluatorFunction,
        n: int = 3,
        strategy: AggregationSelector = AggregationMethod.MEDIAN,
        max_concurrency: int | None = None,
        timeout: float | None = None,
        name: str | None = None,
        early_stop: bool = False,
    ) -> None:
        if not callable(judge):
            raise TypeError(
                f"Repeated(judge=...) must be an evaluator (a sync or async callable taking an "
                f"Evaluable), got {type_name(judge)} {safe_repr(judge)[:60]}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Repeated(name=...) must be a string, got {type_name(name)}")
        if not isinstance(early_stop, bool):
            raise TypeError(
                f"Repeated(early_stop=...) must be True or False, got {type_name(early_stop)}"
            )
        check_count(n, "n")
        if max_concurrency is not None:
            check_count(max_concurrency, "max_concurrency")
        check_timeout(timeout)
        resolved = build_aggregation_strategy(strategy)
        resolved.check_num_judges(n)
        self.judge = judge
        """The repeated evaluator."""
        self.n = n
        """How many times the judge runs per call."""
        self.strategy = resolved
        """The aggregation strategy."""
        self.max_concurrency = max_concurrency
        """The cap on concurrent runs within one call (None: unbounded)."""
        self.timeout = timeout
        """The per-run timeout in seconds (None: none)."""
        self.judge_name = evaluator_name(judge)
        """The judge's display name, given to each run's evaluation."""
        self.name = name or f"{self.judge_name} x{n} ({resolved.strategy})"
        """This evaluator's display name."""
        self.early_stop = early_stop
        """Whether the runs stop once the verdict is settled."""

    def __repr__(self) -> str:
        stop = ", early_stop=True" if self.early_stop else ""
        return (
            f"Repeated({self.judge_name!r}, n={self.n}, strategy={self.strategy!r}, "
            f"max_concurrency={self.max_concurrency}, timeout={self.timeout}{stop})"
        )

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Run the judge ``n`` times on ``evaluable`` and aggregate.

        Args:
            evaluable: What to score.
            trace: The captured trace tree, passed on to a judge that accepts it.

        Returns:
            The aggregated evaluation, or an errored one when no run produced a score.
        """
        stopped: str | None = None
        if self.early_stop:
            runs: list[Evaluation] = []
            try:
                stopped = await self._run_until_settled(evaluable, trace, runs)
            except Exception as exc:  # a faulty custom strategy's settled() is reported as data
                return Evaluation.errored(
                    exc, where="aggregation", evaluator=self.name, details=self._bare_details(runs)
                )
        else:
            runs = await self._run(evaluable, trace, 0, self.n)
        if not any(run.status == "scored" for run in runs):
            return self._no_valid_run(runs)
        try:
            aggregated = self.strategy.aggregate(runs, self.n)
        except Exception as exc:  # a faulty custom strategy is reported as data
            return Evaluation.errored(
                exc, where="aggregation", evaluator=self.name, details=self._bare_details(runs)
            )
        if not isinstance(aggregated, Evaluation):
            return Evaluation.errored(
                EvaluationError(
                    type="InvalidAggregate",
                    message=f"{type(self.strategy).__name__}.aggregate() returned "
                    f"{type(aggregated).__name__}, not an Evaluation",
                    where="aggregation",
                ),
                evaluator=self.name,
                details=self._bare_details(runs),
            )
        update: dict[str, Any] = {"evaluator": self.name}
        if self.early_stop and isinstance(aggregated.details, dict):
            update["details"] = {
                **aggregated.details,
                "num_taken": len(runs),
                **({"stop_reason": stopped} if stopped is not None else {}),
            }
        return aggregated.model_copy(update=update)

    async def _run(
        self, evaluable: Evaluable, trace: Any, start: int, count: int
    ) -> list[Evaluation]:
        """Make runs ``start`` to ``start + count - 1``, concurrently (capped); in order."""
        results: list[Evaluation | None] = [None] * count
        limit: AbstractAsyncContextManager[Any] = (
            nullcontext()
            if self.max_concurrency is None or self.max_concurrency >= count
            else anyio.CapacityLimiter(self.max_concurrency)
        )

        async def run(position: int) -> None:
            async with limit:
                with judge_sample(start + position):
                    results[position] = await evaluate(
                        self.judge,
                        evaluable,
                        trace=trace,
                        timeout=self.timeout,
                        name=self.judge_name,
                    )

        async with anyio.create_task_group() as group:
            for position in range(count):
                group.start_soon(run, position)
        return [result for result in results if result is not None]

    async def _run_until_settled(
        self, evaluable: Evaluable, trace: Any, runs: list[Evaluation]
    ) -> str | None:
        """Make runs (appended to ``runs``) until the verdict is settled; why it is, if it is."""
        threshold = pass_threshold()
        while len(runs) < self.n:
            reason = self.strategy.settled(runs, self.n, threshold)
            if reason is not None:
                return reason
            wave = self._wave(runs, threshold)
            runs += await self._run(evaluable, trace, len(runs), wave)
        return None

    def _wave(self, runs: Sequence[Evaluation], threshold: float) -> int:
        """How many runs to make next: the fewest that could settle the verdict.

        A wave of ``size`` runs could settle it when ``size`` runs all giving a likely score
        would: a score given already, or, before any, 0, 1 or a threshold. So a judge that
        keeps agreeing with itself is asked no more than it takes, and one whose likely
        answers cannot settle the verdict early is asked the rest at once. Capped by
        ``max_concurrency``: more could not run at once anyway.
        """
        left = self.n - len(runs)
        cap = left if self.max_concurrency is None else min(left, self.max_concurrency)
        likely = {run.score for run in runs if run.score is not None}
        if not likely:
            likely = {0.0, 1.0, threshold}
            own = getattr(self.strategy, "threshold", None)
            if isinstance(own, float) and 0.0 <= own <= 1.0:
                likely.add(own)
        for size in range(1, cap):
            for score in sorted(likely):
                wave = [Evaluation(score=score)] * size
                if self.strategy.settled([*runs, *wave], self.n, threshold) is not None:
                    return size
        return cap

    def _bare_details(self, runs: Sequence[Evaluation]) -> dict[str, Any]:
        return unaggregated_details(runs, self.n, self.strategy.strategy)

    def _no_valid_run(self, runs: Sequence[Evaluation]) -> Evaluation:
        details = self._bare_details(runs)
        listing = "; ".join(str(error) for error in judge_errors(runs))
        if all(run.skipped for run in runs):
            return Evaluation.skip(
                f"every one of the {self.n} judge runs was skipped: {listing}",
                details=details,
                evaluator=self.name,
            )
        error = EvaluationError(
            type="AllJudgesFailed",
            message=f"none of the {self.n} judge runs produced a score: {listing}",
            where="judge",
        )
        return Evaluation.errored(error, evaluator=self.name, details=details)
