"""``assert_pass``: run inputs through an app, score them, and check the pass criteria."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evaltrace.concurrency import pending
from evaltrace.constants import DEFAULT_CONCURRENCY, DEFAULT_EPOCH_REDUCER, DEFAULT_EPOCHS
from evaltrace.engine.inputs import InputResult, evaluate_inputs
from evaltrace.engine.report import results_table
from evaltrace.errors import EvaltraceError
from evaltrace.evals.criteria import PassCriteria, as_pass_criteria
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.evals.selectors import TraceSelector
from evaltrace.judges.strategies import BaseJudgeAggregator

__all__ = ["EvalAssertionError", "assert_pass"]


class EvalAssertionError(AssertionError, EvaltraceError):
    """:func:`assert_pass` failed its pass criteria.

    Attributes:
        results: The matrix ``[inputs][evaluators]`` of evaluations.
        inputs: Per input: the run (with its trace), the evaluable, the evaluations.
    """

    def __init__(
        self, message: str, results: list[list[Evaluation]], inputs: list[InputResult]
    ) -> None:
        super().__init__(message)
        self.results = results
        self.inputs = inputs
        self.dataset_results: dict[str, Evaluation] = {}
        """Dataset-level results (set by :func:`assert_dataset_pass`)."""


@pending("evaltrace.assert_pass")
async def assert_pass(
    runnable: Callable[..., Any],
    eval_inputs: Sequence[Any],
    evaluators: Sequence[EvaluatorFunction],
    *,
    evaluables: Sequence[Evaluable] | None = None,
    pass_criteria: PassCriteria | float | None = None,
    from_trace: TraceSelector | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    epochs: int = DEFAULT_EPOCHS,
    reducer: str | BaseJudgeAggregator = DEFAULT_EPOCH_REDUCER,
) -> list[list[Evaluation]]:
    """Run each input once, score it with every evaluator, and check the pass criteria.

    Inputs run concurrently (at most ``concurrency`` at once), each under its own capture; the
    evaluators of one input run concurrently. An ``evaluables[i]`` whose ``eval_output`` is set
    is scored as it is, without running the runnable; otherwise its named inputs are served to
    ``wrap(..., purpose="input")`` during the run and its expectation is kept.

    Args:
        runnable: The app entry point, sync or async, called with one input.
        eval_inputs: One argument per run.
        evaluators: Sync or async evaluators.
        evaluables: Optional test cases, one per input.
        pass_criteria: Judges the matrix; default ``ScoreThreshold(threshold=0.5, pct=1.0)``;
            a number is the threshold of a ``ScoreThreshold``.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most inputs in flight at once.
        timeout: Seconds allowed for each run and for each evaluation.
        epochs: Run the app this many times per input; each evaluator's evaluations of the
            runs are reduced to one by ``reducer`` before the criteria judge them.
        reducer: ``"mean"``, ``"median"``, ``"mode"``, ``"min"``, ``"max"``, or a strategy.

    Returns:
        The matrix ``[inputs][evaluators]`` when the criteria pass.

    Raises:
        EvalAssertionError: The criteria failed; carries the matrix and a readable table.
        ValueError: Mismatched lengths, no evaluators, or a bad ``concurrency``/``timeout``.

    Example:
        >>> import anyio
        >>> def app(question: str) -> str:
        ...     return question.upper()
        >>> matrix = anyio.run(assert_pass, app, ["a", "b"], [lambda e: e.output_value().isupper()])
        >>> [[e.score for e in row] for row in matrix]
        [[1.0], [1.0]]
    """
    criteria = as_pass_criteria(pass_criteria)
    results = await evaluate_inputs(
        runnable,
        eval_inputs,
        evaluators,
        evaluables=evaluables,
        from_trace=from_trace,
        concurrency=concurrency,
        timeout=timeout,
        epochs=epochs,
        reducer=reducer,
    )
    matrix = [item.evaluations for item in results]
    passed, message = criteria(matrix)
    if not passed:
        names = [evaluator_name(check) for check in evaluators]
        table = results_table(results, names, criteria)
        raise EvalAssertionError(f"assert_pass failed: {message}\n{table}", matrix, results)
    return matrix
