"""``assert_dataset_pass``: run a dataset file's entries through an app and check them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from evaltrace.datasets.loading import load_dataset
from evaltrace.datasets.problems import DatasetError, DatasetProblem
from evaltrace.datasets.runnable import RunnableAdapter
from evaltrace.evals.assertions import EvalAssertionError
from evaltrace.evals.criteria import PassCriteria, ScoreThreshold
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.evals.report import results_table
from evaltrace.evals.runner import evaluate_inputs
from evaltrace.evals.selectors import TraceSelector
from evaltrace.metrics.classification import AggregatorSpec, compute_dataset_evaluator_results

__all__ = ["DEFAULT_DATASET_TIMEOUT", "DatasetPassResult", "assert_dataset_pass"]

DEFAULT_DATASET_TIMEOUT: Final = 300.0
"""Seconds each run of the runnable, and each evaluation, may take in a dataset run unless
told otherwise. Long enough for a judge call that retries (each request is bounded by the
judge timeout, 60 s by default); short enough that one hung call cannot stall a CI job for
hours."""


@dataclass(kw_only=True)
class DatasetPassResult:
    """What :func:`assert_dataset_pass` returns when the dataset passes."""

    results: list[list[Evaluation]]
    """The matrix ``[entries][evaluators]``."""
    dataset_results: dict[str, Evaluation]
    """Run-level results of the aggregators the file declares, keyed ``"{evaluator}::{type}"``
    (see :func:`~evaltrace.metrics.compute_dataset_evaluator_results`)."""


async def assert_dataset_pass(
    runnable: Callable[..., Any],
    dataset: str | os.PathLike[str],
    evaluators: Sequence[EvaluatorFunction],
    *,
    pass_criteria: PassCriteria | None = None,
    from_trace: TraceSelector | None = None,
    concurrency: int = 8,
    timeout: float | None = DEFAULT_DATASET_TIMEOUT,
) -> DatasetPassResult:
    """Load a dataset file, score every entry, and check the pass criteria.

    Each entry's ``entry_kwargs`` go to the runnable as a dataset run gives them (as keyword
    arguments, or validated into the model or mapping its one parameter is annotated with;
    see :class:`~evaltrace.datasets.RunnableAdapter`), its ``eval_input`` items are served to
    ``wrap(..., purpose="input")``, and its ``expectation``, ``eval_metadata`` and
    ``description`` go to the evaluators. Evaluators declared in the file as
    ``{"name": ..., "aggregators": [...]}`` get dataset-level results (precision, recall,
    F-beta, confusion matrix) computed from their per-entry results; the name is matched
    against the display names of ``evaluators``.

    Args:
        runnable: The app entry point (a function, or a class following
            :class:`~evaltrace.datasets.Runnable`).
        dataset: Path of a dataset file (JSON or YAML).
        evaluators: Sync or async evaluators, applied to every entry.
        pass_criteria: Judges the matrix; default ``ScoreThreshold(threshold=0.5, pct=1.0)``.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most entries in flight at once.
        timeout: Seconds allowed for each run and for each evaluation; by default
            :data:`DEFAULT_DATASET_TIMEOUT` (300 s), ``None`` for no limit. A run or
            evaluation past it is errored, and the entry fails.

    Returns:
        The matrix and the dataset-level results.

    Raises:
        EvalAssertionError: The criteria failed; its message also lists the dataset-level
            results, which it carries as ``dataset_results``.
        DatasetError: The file is missing or malformed, an entry's ``entry_kwargs`` do not fit
            the runnable, or the file declares aggregators for an evaluator that is not among
            ``evaluators``.
    """
    loaded = load_dataset(dataset)
    adapter = RunnableAdapter(runnable)
    names = [evaluator_name(check) for check in evaluators]
    aggregators = _declared_aggregators(loaded.evaluators)
    problems = [
        problem
        for index, entry in enumerate(loaded.entries)
        for problem in adapter.check_arguments(
            entry.entry_kwargs, file=loaded.source, location=f"entries[{index}].entry_kwargs"
        )
    ]
    unknown = sorted(set(aggregators) - set(names))
    if unknown:
        problems.append(
            DatasetProblem(
                file=loaded.source,
                location="evaluators",
                message=f"aggregators are declared for {unknown}, but the evaluators given "
                f"are {names}",
                hint="name the evaluator entries in the file after the evaluators' names",
            )
        )
    if problems:
        raise DatasetError(problems)

    async def run_entry(entry_kwargs: Mapping[str, Any]) -> Any:
        return await adapter.run(entry_kwargs)

    run_entry.__name__ = adapter.name
    async with adapter.session():
        results = await evaluate_inputs(
            run_entry,
            [entry.entry_kwargs for entry in loaded.entries],
            evaluators,
            evaluables=[
                Evaluable(
                    eval_input=list(entry.eval_input),
                    expectation=entry.expectation,
                    eval_metadata=entry.eval_metadata,
                    description=entry.description,
                )
                for entry in loaded.entries
            ],
            from_trace=from_trace,
            concurrency=concurrency,
            timeout=timeout,
        )
    matrix = [item.evaluations for item in results]
    columns = {name: [row[i] for row in matrix] for i, name in enumerate(names)}
    dataset_results = compute_dataset_evaluator_results(
        {name: columns[name] for name in aggregators}, aggregators
    )
    criteria = pass_criteria or ScoreThreshold()
    passed, message = criteria(matrix)
    if not passed:
        table = results_table(results, names, criteria)
        summary = _dataset_summary(dataset_results)
        error = EvalAssertionError(
            f"assert_dataset_pass failed for {loaded.source}: {message}\n{table}{summary}",
            matrix,
            results,
        )
        error.dataset_results = dataset_results
        raise error
    return DatasetPassResult(results=matrix, dataset_results=dataset_results)


def _declared_aggregators(specs: Sequence[Any] | None) -> dict[str, list[AggregatorSpec]]:
    """The aggregators the dataset's evaluator specs declare, by evaluator name."""
    declared: dict[str, list[AggregatorSpec]] = {}
    for spec in specs or ():
        aggregators = getattr(spec, "aggregators", None)
        if aggregators:
            declared[spec.name] = list(aggregators)
    return declared


def _dataset_summary(dataset_results: Mapping[str, Evaluation]) -> str:
    if not dataset_results:
        return ""
    lines = ["", "dataset-level results:"]
    for key, evaluation in dataset_results.items():
        shown = f"{evaluation.score:.4f}" if evaluation.score is not None else evaluation.status
        lines.append(f"  {key}: {shown}")
    return "\n".join(lines)
