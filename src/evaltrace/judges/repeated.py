"""Repeated judging: run a noisy judge several times and aggregate the scores it gave.

:class:`Repeated` is the evaluator: it runs its judge ``n`` times concurrently and hands the
runs to a strategy of :mod:`evaltrace.judges.strategies` (median by default), which turns
them into one :class:`Evaluation` whose ``details`` describe every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import anyio

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_count, check_timeout
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

__all__ = ["Repeated"]


class Repeated:
    """An evaluator that runs a judge ``n`` times concurrently and aggregates its scores.

    Each run goes through :func:`evaluate`, so a run that raises, times out or returns an
    invalid score is recorded as an error and dropped from the aggregate. When no run produces
    a score, the result is an errored evaluation (``error.type == "AllJudgesFailed"``) whose
    message lists each run's error (a skipped one when every run was skipped); calling a
    ``Repeated`` never raises for its judge's failures.

    Args:
        judge: The evaluator to repeat (sync or async).
        n: How many times to run it.
        strategy: How to aggregate: an :class:`AggregationMethod`, a registered name or a
            strategy instance (``PassAtKAggregationStrategy(k=2)``).
        max_concurrency: At most this many runs of one call at a time; unbounded when None.
        timeout: Seconds each run may take before it counts as errored.
        name: The display name; ``"{judge name} x{n} ({method})"`` by default.

    Raises:
        TypeError: ``judge`` is not callable, or ``name`` is not a string.
        ValueError: for ``n`` or ``max_concurrency`` that is not a whole number of at least 1,
            a non-positive ``timeout``, or a strategy that cannot work with ``n`` runs
            (``k > n``).

    Example:
        >>> import anyio
        >>> scores = iter([0.2, 0.8, 0.6])
        >>> judge = Repeated(lambda e: next(scores), n=3, strategy="median", max_concurrency=1)
        >>> anyio.run(judge, Evaluable()).score
        0.6
    """

    def __init__(
        self,
        judge: EvaluatorFunction,
        n: int = 3,
        strategy: AggregationSelector = AggregationMethod.MEDIAN,
        max_concurrency: int | None = None,
        timeout: float | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(judge):
            raise TypeError(
                f"Repeated(judge=...) must be an evaluator (a sync or async callable taking an "
                f"Evaluable), got {type_name(judge)} {safe_repr(judge)[:60]}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Repeated(name=...) must be a string, got {type_name(name)}")
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

    def __repr__(self) -> str:
        return (
            f"Repeated({self.judge_name!r}, n={self.n}, strategy={self.strategy!r}, "
            f"max_concurrency={self.max_concurrency}, timeout={self.timeout})"
        )

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Run the judge ``n`` times on ``evaluable`` and aggregate.

        Args:
            evaluable: What to score.
            trace: The captured trace tree, passed on to a judge that accepts it.

        Returns:
            The aggregated evaluation, or an errored one when no run produced a score.
        """
        runs = await self._run_all(evaluable, trace)
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
        return aggregated.model_copy(update={"evaluator": self.name})

    async def _run_all(self, evaluable: Evaluable, trace: Any) -> list[Evaluation]:
        results: list[Evaluation | None] = [None] * self.n
        limit: AbstractAsyncContextManager[Any] = (
            nullcontext()
            if self.max_concurrency is None or self.max_concurrency >= self.n
            else anyio.CapacityLimiter(self.max_concurrency)
        )

        async def run(index: int) -> None:
            async with limit:
                results[index] = await evaluate(
                    self.judge, evaluable, trace=trace, timeout=self.timeout, name=self.judge_name
                )

        async with anyio.create_task_group() as group:
            for index in range(self.n):
                group.start_soon(run, index)
        return [result for result in results if result is not None]

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
