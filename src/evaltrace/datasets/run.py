"""Running a dataset: :func:`run_dataset`, what ``evaltrace test`` does for each dataset file.

A run checks everything first: the file is loaded, the runnable imported, every evaluator
built and every entry's arguments checked against the runnable (:func:`prepare_dataset`);
all problems are raised at once, as one :class:`~evaltrace.datasets.DatasetError`, before
anything runs or anything is written. Then the runnable's ``setup`` runs once, the entries run
concurrently (each under its own capture, its ``eval_input`` served to
``wrap(purpose="input")``, each run and each evaluation bounded by the timeout), and its
``teardown`` runs once, always, also when the run is interrupted.

With ``output_dir``, the run writes its folder ``<output_dir>/<run-id>/`` (see
:mod:`evaltrace.results.folder`): each entry's spans are appended to ``traces.jsonl`` as the
entry finishes, and the capture is then released, so a long run never holds every trace in
memory; ``result.json`` is written at the end, atomically, also when the run is interrupted
(then with the entries that finished, and ``interrupted`` set).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeAlias

from pydantic import JsonValue

from evaltrace._safe_text import exception_text, safe_repr
from evaltrace.checks import check_count, check_timeout
from evaltrace.datasets.loading import load_dataset
from evaltrace.datasets.model import Dataset, DatasetEntry
from evaltrace.datasets.problems import DatasetError, DatasetProblem, format_location
from evaltrace.datasets.references import ReferenceLoader
from evaltrace.datasets.resolution import ResolvedDataset, resolve_dataset
from evaltrace.datasets.runnable import RunnableAdapter
from evaltrace.datasets.stored import entry_traces
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluable import json_value
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import (
    EvaluatorFunction,
    PreparedEvaluator,
    evaluator_name,
    prepare_evaluator,
)
from evaltrace.evals.result import EntryResult, RunResult
from evaltrace.evals.runner import InputResult, evaluate_inputs
from evaltrace.evals.selectors import TraceSelector
from evaltrace.evals.stored import StoredCase, StoredScoring
from evaltrace.metrics.classification import AggregatorSpec, compute_dataset_evaluator_results
from evaltrace.results.folder import ResultsFolder, ResultsFolderError, new_run_id
from evaltrace.results.progress import RunProgress
from evaltrace.trace import StoredTrace, walk_trace

__all__ = [
    "DEFAULT_DATASET_TIMEOUT",
    "DatasetSource",
    "EntryFilter",
    "NoEntriesSelectedError",
    "PreparedDataset",
    "matches_filter",
    "prepare_dataset",
    "run_dataset",
]

DEFAULT_DATASET_TIMEOUT: Final = 300.0
"""Seconds each run of the runnable, and each evaluation, may take in a dataset run unless
told otherwise. Long enough for a judge call that retries (each request is bounded by the
judge timeout, 60 s by default); short enough that one hung call cannot stall a CI job for
hours."""

EntryFilter: TypeAlias = str | Callable[[DatasetEntry], bool]
"""Which entries run: text found (ignoring case) in an entry's name or description, or a
predicate on the entry."""


class NoEntriesSelectedError(EvaltraceError, ValueError):
    """The entry filter of a run matches none of the dataset's entries."""


@dataclass(frozen=True, kw_only=True)
class PreparedDataset:
    """A dataset checked and resolved for a run: what each entry runs and how it is scored."""

    resolved: ResolvedDataset
    """The dataset with its runnable and evaluators."""
    entry_evaluators: list[list[EvaluatorFunction]]
    """Each entry's evaluators, in the order of the dataset's entries."""
    aggregators: dict[str, list[AggregatorSpec]]
    """The dataset-level metrics, by the display name of their source evaluator."""
    aggregator_sources: dict[str, EvaluatorFunction]
    """The source evaluator of each key of ``aggregators``."""

    @property
    def dataset(self) -> Dataset:
        """The dataset."""
        return self.resolved.dataset

    @property
    def runnable(self) -> RunnableAdapter:
        """The runnable."""
        return self.resolved.runnable


DatasetSource: TypeAlias = PreparedDataset | ResolvedDataset | Dataset | str | os.PathLike[str]
"""What :func:`run_dataset` runs: a dataset file's path, or a dataset loaded, resolved or
prepared."""


def prepare_dataset(
    dataset: DatasetSource,
    *,
    runnable: object | None = None,
    evaluators: Sequence[EvaluatorFunction] | None = None,
    loader: ReferenceLoader | None = None,
) -> PreparedDataset:
    """Load (for a path), resolve and check a dataset for a run, reporting every problem at once.

    Beyond :func:`~evaltrace.datasets.resolve_dataset`, it checks that every entry has an
    evaluator and that the dataset-level metrics can be computed.

    Args:
        dataset: A dataset file's path, or a dataset loaded, resolved or prepared.
        runnable: The runnable to use instead of the dataset's ``runnable``.
        evaluators: Evaluators given in code: every entry is scored by these instead of the
            evaluators the file lists (which are then not built), and the file's
            aggregators apply to the one of these whose display name they are declared on.
        loader: The run's module loader, shared by the datasets of one run.

    Raises:
        DatasetError: Everything wrong with the dataset, its references and its entries.
    """
    if isinstance(dataset, PreparedDataset | ResolvedDataset):
        if runnable is not None or evaluators is not None:
            raise TypeError(
                "the dataset is already resolved, with its runnable and evaluators; to give "
                "runnable= or evaluators=, pass the Dataset itself (or its path)"
            )
        return dataset if isinstance(dataset, PreparedDataset) else _prepared_from_files(dataset)
    loaded = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    if evaluators is None:
        return _prepared_from_files(resolve_dataset(loaded, runnable=runnable, loader=loader))
    given = list(evaluators)
    if not given:
        raise ValueError("evaluators is empty; give one or more, or None for the file's own")
    for position, check in enumerate(given):
        if not callable(check):
            raise TypeError(f"evaluators[{position}] is {type(check).__name__}, not callable")
    without_evaluators = loaded.model_copy(
        update={
            "evaluators": [],
            "entries": [e.model_copy(update={"evaluators": None}) for e in loaded.entries],
        }
    )
    resolved = resolve_dataset(without_evaluators, runnable=runnable, loader=loader)
    resolved = ResolvedDataset(
        dataset=loaded,
        runnable=resolved.runnable,
        evaluators=[],
        entry_evaluators=[[] for _ in loaded.entries],
    )
    names = {evaluator_name(check): check for check in given}
    aggregators = {
        spec.name: list(spec.aggregators) for spec in loaded.evaluators if spec.aggregators
    }
    unknown = sorted(set(aggregators) - set(names))
    if unknown:
        raise DatasetError(
            [
                DatasetProblem(
                    file=loaded.source,
                    location="evaluators",
                    message=f"aggregators are declared for {unknown}, but the evaluators given "
                    f"are {sorted(names)}",
                    hint="name the evaluator entries in the file after the evaluators' names",
                )
            ]
        )
    problems = _aggregator_problems(loaded.source, aggregators)
    if problems:
        raise DatasetError(problems)
    return PreparedDataset(
        resolved=resolved,
        entry_evaluators=[given] * len(loaded.entries),
        aggregators=aggregators,
        aggregator_sources={name: names[name] for name in aggregators},
    )


def _prepared_from_files(resolved: ResolvedDataset) -> PreparedDataset:
    dataset = resolved.dataset
    problems: list[DatasetProblem] = []
    lists: dict[tuple[int, ...], list[EvaluatorFunction]] = {}
    entry_evaluators: list[list[EvaluatorFunction]] = []
    for index, own in enumerate(resolved.entry_evaluators):
        if not own:
            problems.append(_no_evaluator(dataset, index))
        key = tuple(id(item) for item in own)
        # Entries with the same evaluators share one list, which the runner plans once.
        entry_evaluators.append(lists.setdefault(key, [item.evaluator for item in own]))
    aggregators: dict[str, list[AggregatorSpec]] = {}
    sources: dict[str, EvaluatorFunction] = {}
    for item in resolved.evaluators:
        if item.spec.aggregators:
            aggregators[item.name] = list(item.spec.aggregators)
            sources[item.name] = item.evaluator
    problems += _aggregator_problems(dataset.source, aggregators)
    if problems:
        raise DatasetError(problems)
    return PreparedDataset(
        resolved=resolved,
        entry_evaluators=entry_evaluators,
        aggregators=aggregators,
        aggregator_sources=sources,
    )


def _no_evaluator(dataset: Dataset, index: int) -> DatasetProblem:
    entry = dataset.entries[index]
    own_list = entry.evaluators is not None
    return DatasetProblem(
        file=dataset.source,
        location=format_location(("entries", index, "evaluators") if own_list else ("entries",)),
        message=f"no evaluator scores entry {entry.name!r}",
        hint="list evaluators on the entry, or in the top-level 'evaluators'"
        if own_list
        else "add a top-level 'evaluators' list, or give the entry its own",
    )


def _aggregator_problems(
    file: str, aggregators: dict[str, list[AggregatorSpec]]
) -> list[DatasetProblem]:
    try:
        compute_dataset_evaluator_results({name: [] for name in aggregators}, aggregators)
    except ValueError as exc:
        return [DatasetProblem(file=file, location="evaluators", message=exception_text(exc))]
    return []


def matches_filter(entry: DatasetEntry, entry_filter: EntryFilter | None) -> bool:
    """Whether ``entry`` is selected by ``entry_filter``.

    Text selects the entries whose name or description contains it, ignoring case; a
    predicate is called with the entry.

    Example:
        >>> entry = DatasetEntry(name="refund-late", entry_kwargs={})
        >>> matches_filter(entry, "REFUND"), matches_filter(entry, "greeting")
        (True, False)
    """
    if entry_filter is None:
        return True
    if isinstance(entry_filter, str):
        wanted = entry_filter.casefold()
        return any(wanted in (text or "").casefold() for text in (entry.name, entry.description))
    return bool(entry_filter(entry))


async def run_dataset(
    dataset: DatasetSource,
    *,
    runnable: object | None = None,
    evaluators: Sequence[EvaluatorFunction] | None = None,
    concurrency: int = 8,
    timeout: float | None = DEFAULT_DATASET_TIMEOUT,
    output_dir: str | os.PathLike[str] | None = None,
    entry_filter: EntryFilter | None = None,
    threshold: float = 0.5,
    from_trace: TraceSelector | None = None,
    on_entry: Callable[[EntryResult, int, int], object] | None = None,
    progress: bool = False,
    loader: ReferenceLoader | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Run every entry of a dataset through its runnable, score it, and return the result.

    Args:
        dataset: A dataset file's path (JSON or YAML), a loaded :class:`Dataset`, or one
            resolved (:func:`resolve_dataset`) or prepared (:func:`prepare_dataset`).
        runnable: The app entry point, instead of the dataset's ``runnable`` reference.
        evaluators: Evaluators given in code, scoring every entry instead of the file's.
        concurrency: Most entries in flight at once.
        timeout: Seconds allowed for each run of the runnable and for each evaluation
            (:data:`DEFAULT_DATASET_TIMEOUT` by default; ``None`` for no limit). A run past it
            makes its entry ``TIMED_OUT``.
        output_dir: Where to write the run's folder (``<output_dir>/<run-id>/``); nothing is
            written by default. ``evaltrace test`` writes to ``evaltrace_results``.
        entry_filter: Run only the entries whose name or description contains this text
            (ignoring case), or for which this predicate is true.
        threshold: The score each evaluation must reach for its entry to pass.
        from_trace: Selects what to score from each entry's trace; default
            :func:`evaltrace.root`.
        on_entry: Called as each entry finishes, with its result, the number finished and the
            number selected (in the event loop's thread; keep it quick).
        progress: Show a progress bar (plain lines when ``CI`` is set or standard error is
            not a terminal) on standard error.
        loader: The module loader shared by the datasets of one run.
        run_id: The run's id (and folder name); a new :func:`~evaltrace.results.new_run_id`
            by default.

    Returns:
        The run's result: one :class:`~evaltrace.evals.EntryResult` per selected entry (its
        status, evaluations, output and trace ids), the dataset-level metrics, timing and
        settings. A ``setup`` that raised errors every entry; a ``teardown`` that raised is
        in ``errors``.

    Raises:
        DatasetError: Everything wrong with the dataset, before anything runs.
        NoEntriesSelectedError: ``entry_filter`` matches no entry.
        ResultsFolderError: ``output_dir`` cannot be written (before anything runs), or
            writing failed during the run (after it ended; ``result.json`` is written if it
            can be).
        ValueError: A bad ``concurrency``, ``timeout`` or ``threshold``.

    Example:
        >>> result = anyio.run(run_dataset, "faq.evaltrace.json")  # doctest: +SKIP
        >>> result.status_counts  # doctest: +SKIP
        {<CompletionStatus.SUCCESS: 'SUCCESS'>: 12}
    """
    check_count(concurrency, "concurrency")
    check_timeout(timeout)
    if isinstance(threshold, bool) or not (
        isinstance(threshold, int | float) and math.isfinite(threshold) and 0 <= threshold <= 1
    ):
        raise ValueError(f"threshold must be a number in [0, 1], got {safe_repr(threshold)}")
    prepared = prepare_dataset(dataset, runnable=runnable, evaluators=evaluators, loader=loader)
    data = prepared.dataset
    selected = [i for i, entry in enumerate(data.entries) if matches_filter(entry, entry_filter)]
    if not selected:
        raise NoEntriesSelectedError(
            f"the entry filter {_describe_filter(entry_filter)} matches none of the "
            f"{len(data.entries)} entries of dataset {data.name or data.source!r}; it selects "
            "entries whose name or description contains it (ignoring case)"
        )
    folder = ResultsFolder.create(output_dir, run_id) if output_dir is not None else None
    display = RunProgress(data.name or prepared.runnable.name, len(selected)) if progress else None
    with contextlib.ExitStack() as stack:
        if folder is not None:
            stack.enter_context(folder)
        if display is not None:
            stack.enter_context(display)
        run = _Run(
            prepared=prepared,
            selected=selected,
            threshold=threshold,
            folder=folder,
            display=display,
            on_entry=on_entry,
            run_id=folder.run_id if folder is not None else (run_id or new_run_id()),
            settings={
                "concurrency": concurrency,
                "timeout": timeout,
                "threshold": threshold,
                "entry_filter": None if entry_filter is None else _describe_filter(entry_filter),
                "runnable": prepared.runnable.name,
                "from_trace": None if from_trace is None else evaluator_name(from_trace),
            },
        )
        return await run.execute(concurrency=concurrency, timeout=timeout, from_trace=from_trace)


def _describe_filter(entry_filter: EntryFilter | None) -> str:
    if isinstance(entry_filter, str):
        return repr(entry_filter)
    return evaluator_name(entry_filter)


class _Run:
    """One run of a prepared dataset: its entries as they finish, and the result at the end."""

    def __init__(
        self,
        *,
        prepared: PreparedDataset,
        selected: list[int],
        threshold: float,
        folder: ResultsFolder | None,
        display: RunProgress | None,
        on_entry: Callable[[EntryResult, int, int], object] | None,
        run_id: str,
        settings: dict[str, JsonValue],
    ) -> None:
        self.prepared = prepared
        self.selected = selected
        self.threshold = threshold
        self.folder = folder
        self.display = display
        self.on_entry = on_entry
        self.run_id = run_id
        self.settings = settings
        self.entries: list[EntryResult | None] = [None] * len(selected)
        self.errors: list[EvaluationError] = []
        self.write_error: ResultsFolderError | None = None
        self.started_at = datetime.now(UTC)
        self.started = time.perf_counter()

    async def execute(
        self, *, concurrency: int, timeout: float | None, from_trace: TraceSelector | None
    ) -> RunResult:
        data = self.prepared.dataset
        adapter = self.prepared.runnable
        entries = [data.entries[i] for i in self.selected]
        if data.stored:
            return await self._score_stored(entries, concurrency, timeout, from_trace)

        async def run_entry(entry_kwargs: dict[str, Any]) -> Any:
            return await adapter.run(entry_kwargs)

        run_entry.__name__ = adapter.name  # the name of each entry's root span
        results: list[InputResult] = []
        phase = "setup"
        try:
            async with adapter.session():
                phase = "entries"
                results = await evaluate_inputs(
                    run_entry,
                    [entry.entry_kwargs for entry in entries],
                    [],
                    evaluables=[entry.to_evaluable() for entry in entries],
                    per_input_evaluators=[self._evaluators_of(p) for p in range(len(entries))],
                    from_trace=from_trace,
                    concurrency=concurrency,
                    timeout=timeout,
                    on_progress=self._finished,
                )
                phase = "teardown"
        except Exception as exc:
            if phase == "entries":  # not the app's failure (those are data): keep what finished
                self._write(self._result(interrupted=True), raising=False)
                raise
            # The app's setup raised (every entry errors), or its teardown did (after the
            # entries finished): either is the run's error, reported with the result.
            self.errors.append(EvaluationError.from_exception(exc, where=phase))
            if phase == "setup":
                self._setup_failed(entries)
        except BaseException:  # interrupted (Ctrl-C, cancelled): keep what finished
            self._write(self._result(interrupted=True), raising=False)
            raise
        for item in results:
            if self.entries[item.index] is None:  # its on_progress call failed part-way
                self.entries[item.index] = self._entry(item)
        results.clear()  # the runner's rows: what the result needs is in the entries now
        result = self._result(interrupted=False)
        self._write(result, raising=True)
        return result

    async def _score_stored(
        self,
        entries: list[DatasetEntry],
        concurrency: int,
        timeout: float | None,
        from_trace: TraceSelector | None,
    ) -> RunResult:
        """Score entries that point at stored traces: nothing runs, no setup or teardown."""
        prepared: dict[int, PreparedEvaluator] = {}

        def evaluators_of(position: int) -> list[PreparedEvaluator]:
            checks = self._evaluators_of(position)
            for check in checks:  # each evaluator prepared once
                if id(check) not in prepared:
                    prepared[id(check)] = prepare_evaluator(check)
            return [prepared[id(check)] for check in checks]

        data = self.prepared.dataset
        base_dir = data.path.parent if data.path is not None else None
        traces = entry_traces(entries, base_dir)
        cases = (
            StoredCase(
                trace=stored,
                index=position,
                evaluators=evaluators_of(position),
                name=entry.name,
                case=entry.to_evaluable(),
            )
            for position, (entry, stored) in enumerate(zip(entries, traces, strict=True))
        )
        done = 0

        def finished(entry: EntryResult, stored: StoredTrace) -> None:
            nonlocal done
            done += 1
            self.entries[entry.index] = entry
            if self.folder is not None and self.write_error is None:
                try:
                    self.folder.add_entry(entry, (n.span.record for n in walk_trace(stored.roots)))
                except ResultsFolderError as exc:
                    self.write_error = exc
            if self.display is not None:
                self.display.advance(entry)
            if self.on_entry is not None:
                self.on_entry(entry, done, len(entries))

        scoring = StoredScoring(
            from_trace=from_trace, timeout=timeout, threshold=self.threshold, run_id=self.run_id
        )
        try:
            await scoring.score(cases, concurrency=concurrency, on_entry=finished)
        except BaseException:  # interrupted (Ctrl-C, cancelled): keep what finished
            self._write(self._result(interrupted=True), raising=False)
            raise
        result = self._result(interrupted=False)
        self._write(result, raising=True)
        return result

    def _entry(self, item: InputResult) -> EntryResult:
        entry = self.prepared.dataset.entries[self.selected[item.index]]
        return item.to_entry(name=entry.name, threshold=self.threshold)

    def _finished(self, item: InputResult, done: int, total: int) -> None:
        """Keep a finished entry, write its spans, release its capture, report it."""
        entry = self._entry(item)
        self.entries[item.index] = entry
        if item.run is not None:
            if self.folder is not None and self.write_error is None:
                # The tree the selector built holds each span as a record already.
                spans = (node.span.record for node in walk_trace(item.run.handler.trace))
                try:
                    self.folder.add_entry(entry, spans)
                except ResultsFolderError as exc:
                    self.write_error = exc
            item.run.handler.clear()
        if self.display is not None:
            self.display.advance(entry)
        if self.on_entry is not None:
            self.on_entry(entry, done, total)

    def _setup_failed(self, entries: list[DatasetEntry]) -> None:
        error = self.errors[-1]
        for position, entry in enumerate(entries):
            names = [evaluator_name(check) for check in self._evaluators_of(position)]
            case = entry.to_evaluable()
            result = EntryResult(
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
            self.entries[position] = result
            if self.display is not None:
                self.display.advance(result)

    def _evaluators_of(self, position: int) -> list[EvaluatorFunction]:
        return self.prepared.entry_evaluators[self.selected[position]]

    def _result(self, *, interrupted: bool) -> RunResult:
        entries = [entry for entry in self.entries if entry is not None]
        data = self.prepared.dataset
        names: dict[str, None] = {}
        for position in range(len(self.selected)):
            for check in self._evaluators_of(position):
                names.setdefault(evaluator_name(check), None)
        return RunResult(
            run_id=self.run_id,
            name=data.name or self.prepared.runnable.name,
            source=data.source if data.path is not None else None,
            evaluators=list(names),
            entries=entries,
            dataset_results=self._dataset_results(entries),
            started_at=self.started_at,
            finished_at=datetime.now(UTC),
            duration_s=time.perf_counter() - self.started,
            threshold=self.threshold,
            settings=self.settings,
            errors=self.errors,
            interrupted=interrupted,
        )

    def _dataset_results(self, entries: list[EntryResult]) -> dict[str, Evaluation]:
        aggregators = self.prepared.aggregators
        if not aggregators:
            return {}
        columns: dict[str, list[Evaluation]] = {name: [] for name in aggregators}
        for entry in entries:
            checks = self._evaluators_of(entry.index)
            for name, source in self.prepared.aggregator_sources.items():
                for check, evaluation in zip(checks, entry.evaluations, strict=False):
                    if check is source:
                        columns[name].append(evaluation)
                        break
        return compute_dataset_evaluator_results(columns, aggregators)

    def _write(self, result: RunResult, *, raising: bool) -> None:
        if self.folder is None:
            return
        try:
            self.folder.finish(result)
        except ResultsFolderError as exc:
            self.write_error = self.write_error or exc
        if raising and self.write_error is not None:
            raise self.write_error
