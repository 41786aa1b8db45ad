"""Where a dataset run's entries run: the :class:`Executor` seam and the local executor.

:func:`~evaltrace.datasets.run_dataset` decides what runs (the entries selected, their shard,
those a resumed run still lacks) and keeps what comes back (the results folder, the
dataset-level metrics, the progress); an executor runs the entries and hands back each
finished one with its spans. :class:`LocalExecutor` (the default) runs them in this process,
in the run's event loop; :class:`~evaltrace.datasets.RayExecutor` runs batches of them as Ray
tasks. Another executor implements :class:`Executor`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evaltrace.datasets.model import Dataset
from evaltrace.datasets.resolution import ResolvedDataset
from evaltrace.datasets.runnable import RunnableAdapter
from evaltrace.evals.evaluable import json_value
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.evals.result import EntryResult
from evaltrace.evals.runner import InputResult, RunInput, evaluate_each
from evaltrace.evals.selectors import TraceSelector
from evaltrace.metrics.classification import AggregatorSpec
from evaltrace.trace import SpanRecord, walk_trace

__all__ = [
    "EntrySink",
    "Executor",
    "LocalExecutor",
    "PreparedDataset",
    "RunPlan",
    "errored_entry",
    "run_entries",
]


@dataclass(frozen=True, kw_only=True)
class PreparedDataset:
    """A dataset checked and resolved for a run: what each entry runs and how it is scored."""

    resolved: ResolvedDataset
    """The dataset with its runnable and evaluators."""
    entry_evaluators: Sequence[list[EvaluatorFunction]]
    """Each entry's evaluators, in the order of the dataset's entries (entries with the same
    evaluators share one list, see :class:`~evaltrace.datasets.resolution.PerEntry`)."""
    aggregators: dict[str, list[AggregatorSpec]]
    """The dataset-level metrics, by the display name of their source evaluator."""
    aggregator_sources: dict[str, EvaluatorFunction]
    """The source evaluator of each key of ``aggregators``."""
    from_code: bool = False
    """Whether the runnable or the evaluators were given in code rather than by the file
    (then only this process can run the entries)."""

    @property
    def dataset(self) -> Dataset:
        """The dataset."""
        return self.resolved.dataset

    @property
    def runnable(self) -> RunnableAdapter:
        """The runnable."""
        return self.resolved.runnable


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """The entries an executor runs, and how.

    Entries are named by their *position* in the run's selection (the entries the entry
    filter selected, in dataset order): that position is each entry's
    :attr:`~evaltrace.evals.EntryResult.index`, the same in every shard of the selection.
    """

    prepared: PreparedDataset
    """The dataset, resolved."""
    selected: Sequence[int]
    """The dataset index of each position of the selection."""
    positions: Sequence[int]
    """The positions to run now (a shard of the selection, or what a resumed run lacks)."""
    run_id: str
    """The run's id."""
    threshold: float
    """The score each evaluation must reach for its entry to pass."""
    timeout: float | None
    """Seconds allowed for each run of the runnable and each evaluation."""
    concurrency: int
    """Most entries in flight at once (per worker, for an executor with workers)."""
    from_trace: TraceSelector | None = None
    """Selects what to score from each entry's trace; ``None`` for the root."""


EntrySink = Callable[[EntryResult, Iterable[SpanRecord | str]], object]
"""Receives each finished entry with its spans (records, or lines of ``traces.jsonl``); the
spans are read during the call only."""


class Executor(Protocol):
    """Runs the entries of a :class:`RunPlan`, handing each finished one to ``finished``."""

    async def execute(self, plan: RunPlan, finished: EntrySink) -> list[EvaluationError]:
        """Run every position of ``plan`` once, calling ``finished`` as each entry ends.

        Failures of an entry are data (its result says so). The runnable's ``setup`` and
        ``teardown`` run around the entries (per worker or batch, for an executor with
        workers): a ``setup`` that raises errors the entries it was to serve, which are
        still handed to ``finished``.

        Returns:
            What failed outside any entry (``setup``, ``teardown``).

        Raises:
            BaseException: Whatever stopped the run (Ctrl-C, a cancellation, a lost
                cluster); the entries handed over before it stand.
        """
        ...


class LocalExecutor:
    """Runs the entries in this process, concurrently in the run's event loop (the default).

    The runnable's ``setup`` runs once before the entries and ``teardown`` once after them,
    always.
    """

    async def execute(self, plan: RunPlan, finished: EntrySink) -> list[EvaluationError]:
        """Run the plan's entries here; see :meth:`Executor.execute`."""
        adapter = plan.prepared.runnable
        phase = "setup"
        try:
            async with adapter.session():
                phase = "entries"
                await run_entries(plan, finished)
                phase = "teardown"
        except Exception as exc:
            if phase == "entries":  # not the app's failure (those are data)
                raise
            # The app's setup raised (every entry errors), or its teardown did (after the
            # entries finished): either is the run's error, reported with the result.
            error = EvaluationError.from_exception(exc, where=phase)
            if phase == "setup":
                for position in plan.positions:
                    finished(errored_entry(plan, position, error), ())
            return [error]
        return []

    def __repr__(self) -> str:
        return "LocalExecutor()"


async def run_entries(plan: RunPlan, finished: EntrySink) -> None:
    """Run and score the plan's entries in this process (inside the runnable's session).

    Each entry's capture is released once ``finished`` has its spans, so memory holds the
    entries in flight, not the run.
    """
    prepared = plan.prepared
    entries = prepared.dataset.entries
    adapter = prepared.runnable

    async def run_entry(entry_kwargs: dict[str, Any]) -> Any:
        return await adapter.run(entry_kwargs)

    run_entry.__name__ = adapter.name  # the name of each entry's root span

    def inputs() -> Iterator[RunInput]:
        for position in plan.positions:
            index = plan.selected[position]
            entry = entries[index]
            yield RunInput(
                index=position,
                eval_input=entry.entry_kwargs,
                evaluators=prepared.entry_evaluators[index],
                evaluable=entry.to_evaluable(),
                name=entry.name,
            )

    def done(item: InputResult) -> None:
        entry = entries[plan.selected[item.index]]
        result = item.to_entry(name=entry.name, threshold=plan.threshold)
        if item.run is None:
            finished(result, ())
            return
        # The tree the selector built holds each span as a record already.
        finished(result, (node.span.record for node in walk_trace(item.run.handler.trace)))
        item.run.handler.clear()

    await evaluate_each(
        run_entry,
        inputs(),
        on_result=done,
        from_trace=plan.from_trace,
        concurrency=plan.concurrency,
        timeout=plan.timeout,
        run_id=plan.run_id,
        threshold=plan.threshold,
    )


def errored_entry(plan: RunPlan, position: int, error: EvaluationError) -> EntryResult:
    """The result of an entry that failed outside its own run: errored, never scored.

    Its runnable's ``setup`` raised, or the worker running it died: ``error`` is the entry's
    error and every evaluator's.
    """
    index = plan.selected[position]
    entry = plan.prepared.dataset.entries[index]
    names = [evaluator_name(check) for check in plan.prepared.entry_evaluators[index]]
    case = entry.to_evaluable()
    return EntryResult(
        index=position,
        name=entry.name or str(position),
        description=case.description,
        input=json_value(entry.entry_kwargs),
        eval_input=case.eval_input,
        expectation=case.expectation,
        eval_metadata=case.eval_metadata,
        evaluations=[Evaluation.errored(error, evaluator=name) for name in names],
        error=error,
    )
