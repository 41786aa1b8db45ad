"""``assert_dataset_pass``: run a dataset file's entries through an app and check them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltrace.concurrency import pending
from evaltrace.constants import DEFAULT_CONCURRENCY, DEFAULT_DATASET_TIMEOUT, DEFAULT_THRESHOLD
from evaltrace.datasets.model import Dataset
from evaltrace.datasets.run import EntryFilter, run_dataset
from evaltrace.engine import EvalAssertionError, entries_table
from evaltrace.evals.criteria import PassCriteria, ScoreThreshold, as_pass_criteria
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import EvaluatorFunction
from evaltrace.evals.selectors import TraceSelector
from evaltrace.results.model import RunResult

__all__ = ["DatasetPassResult", "assert_dataset_pass"]


@dataclass(kw_only=True)
class DatasetPassResult:
    """What :func:`assert_dataset_pass` returns when the dataset passes."""

    results: list[list[Evaluation]]
    """The matrix ``[entries][evaluators]`` (each entry's own evaluators, in order)."""
    dataset_results: dict[str, Evaluation]
    """Run-level results of the aggregators the file declares, keyed ``"{evaluator}::{type}"``
    (see :func:`~evaltrace.metrics.compute_dataset_evaluator_results`)."""
    run: RunResult
    """The whole result of the run, as ``evaltrace test`` saves it."""


@pending("evaltrace.assert_dataset_pass")
async def assert_dataset_pass(
    runnable: Callable[..., Any] | None,
    dataset: str | os.PathLike[str] | Dataset,
    evaluators: Sequence[EvaluatorFunction] | None = None,
    *,
    pass_criteria: PassCriteria | float | None = None,
    from_trace: TraceSelector | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_DATASET_TIMEOUT,
    entry_filter: EntryFilter | None = None,
    output_dir: str | os.PathLike[str] | None = None,
) -> DatasetPassResult:
    """Run a dataset file's entries, score them, and check the pass criteria.

    This is :func:`~evaltrace.datasets.run_dataset` with an assertion: each entry's
    ``entry_kwargs`` go to the runnable (as keyword arguments, or validated into the model
    its one parameter is annotated with), its ``eval_input`` items are served to
    ``wrap(..., purpose="input")``, and its ``expectation``, ``eval_metadata`` and
    ``description`` go to the evaluators. Evaluators declared in the file with
    ``aggregators`` get dataset-level results (precision, recall, F-beta, confusion matrix).

    Args:
        runnable: The app entry point (a function, or a class following
            :class:`~evaltrace.datasets.Runnable`); ``None`` for the file's ``runnable``.
        dataset: Path of a dataset file (JSON or YAML), or a loaded dataset.
        evaluators: Sync or async evaluators applied to every entry, instead of the file's;
            ``None`` (the default) for the evaluators the file lists. The file's aggregators
            then apply to the evaluator given here whose display name they are declared on.
        pass_criteria: Judges the matrix; default ``ScoreThreshold(threshold=0.5, pct=1.0)``;
            a number is the threshold of a ``ScoreThreshold``.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most entries in flight at once.
        timeout: Seconds allowed for each run and for each evaluation; by default
            :data:`~evaltrace.datasets.DEFAULT_DATASET_TIMEOUT` (300 s), ``None`` for no
            limit. A run or evaluation past it is errored, and the entry fails.
        entry_filter: Run only the entries whose name or description contains this text
            (ignoring case), or for which this predicate is true.
        output_dir: Also write the run's results folder there (``<output_dir>/<run-id>/``).

    Returns:
        The matrix, the dataset-level results and the run's result.

    Raises:
        EvalAssertionError: The criteria failed, or the runnable's setup or teardown raised;
            its message lists what failed and the dataset-level results, which it carries as
            ``dataset_results``.
        DatasetError: The file is missing or malformed, a reference does not load, an
            entry's ``entry_kwargs`` do not fit the runnable, or the file declares
            aggregators for an evaluator that is not among ``evaluators``.
    """
    criteria = as_pass_criteria(pass_criteria)
    run = await run_dataset(
        dataset,
        runnable=runnable,
        evaluators=evaluators,
        concurrency=concurrency,
        timeout=timeout,
        output_dir=output_dir,
        entry_filter=entry_filter,
        threshold=criteria.threshold if isinstance(criteria, ScoreThreshold) else DEFAULT_THRESHOLD,
        from_trace=from_trace,
    )
    matrix = [entry.evaluations for entry in run.entries]
    passed, message = criteria(matrix)
    if run.errors:
        passed = False
        message = "; ".join(
            f"the runnable's {error.where} raised {error.type}: {error.message}"
            for error in run.errors
        )
    if not passed:
        table = entries_table(run.entries, run.evaluators, criteria)
        where = run.source or run.name
        error = EvalAssertionError(
            f"assert_dataset_pass failed for {where}: {message}\n{table}"
            f"{_dataset_summary(run.dataset_results)}",
            matrix,
            [],
        )
        error.dataset_results = run.dataset_results
        raise error
    return DatasetPassResult(results=matrix, dataset_results=run.dataset_results, run=run)


def _dataset_summary(dataset_results: Mapping[str, Evaluation]) -> str:
    if not dataset_results:
        return ""
    lines = ["", "dataset-level results:"]
    for key, evaluation in dataset_results.items():
        shown = f"{evaluation.score:.4f}" if evaluation.score is not None else evaluation.status
        lines.append(f"  {key}: {shown}")
    return "\n".join(lines)
