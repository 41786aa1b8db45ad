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
import warnings
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypeAlias

from evaltrace._safe_text import exception_text, safe_repr
from evaltrace.checks import check_count, check_timeout
from evaltrace.constants import DEFAULT_CONCURRENCY, DEFAULT_DATASET_TIMEOUT, DEFAULT_THRESHOLD
from evaltrace.datasets.executor import Executor, LocalExecutor, PreparedDataset, RunPlan
from evaltrace.datasets.fingerprint import run_fingerprint
from evaltrace.datasets.loading import load_dataset
from evaltrace.datasets.model import Dataset, DatasetEntry
from evaltrace.datasets.problems import DatasetError, DatasetProblem, format_location
from evaltrace.datasets.references import ReferenceLoader
from evaltrace.datasets.registry import registered_evaluators
from evaltrace.datasets.resolution import (
    PerEntry,
    ResolvedDataset,
    ResolvedEvaluator,
    resolve_dataset,
)
from evaltrace.datasets.sharding import Shard, selection_digest, shard_positions
from evaltrace.datasets.stored import StoredTraceExecutor
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.evals.result import EntryResult, EntrySelection, RunResult
from evaltrace.evals.selectors import TraceSelector
from evaltrace.metrics.classification import (
    AGGREGATOR_SPEC_ADAPTER,
    AggregatorSpec,
    DatasetResultsTally,
    compute_dataset_evaluator_results,
)
from evaltrace.results.folder import (
    DuplicateEntryError,
    EntryLines,
    ResultsFolder,
    ResultsFolderError,
    load_result,
    new_run_id,
)
from evaltrace.results.progress import RunProgress
from evaltrace.trace import SpanRecord

__all__ = [
    "DEFAULT_DATASET_TIMEOUT",
    "DatasetSource",
    "EntryFilter",
    "NoEntriesSelectedError",
    "PreparedDataset",
    "ResumeError",
    "matches_filter",
    "prepare_dataset",
    "run_dataset",
]


EntryFilter: TypeAlias = str | Callable[[DatasetEntry], bool]
"""Which entries run: text found (ignoring case) in an entry's name or description, or a
predicate on the entry."""


class NoEntriesSelectedError(EvaltraceError, ValueError):
    """The entry filter of a run matches none of the dataset's entries."""


class ResumeError(EvaltraceError, ValueError):
    """A run cannot be resumed in the folder given.

    It holds a run of another dataset, selection or shard, or one whose fingerprint
    (evaluators, threshold, code, ...) differs, or it is damaged.
    """


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
        prepared = _prepared_from_files(resolve_dataset(loaded, runnable=runnable, loader=loader))
        return replace(prepared, from_code=runnable is not None)
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
        entry_evaluators=PerEntry.repeat([], len(loaded.entries)),
    )
    names = {evaluator_name(check): check for check in given}
    _warn_unused_file_evaluators(loaded, list(names))
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
        entry_evaluators=PerEntry.repeat(given, len(loaded.entries)),
        aggregators=aggregators,
        aggregator_sources={name: names[name] for name in aggregators},
        from_code=True,
    )


def _warn_unused_file_evaluators(dataset: Dataset, given: list[str]) -> None:
    """Say that the file's evaluators are not used, the ones given in code are; name typos."""
    listed = [spec.name for spec in dataset.evaluators] + [
        spec.name for entry in dataset.entries for spec in entry.evaluators or ()
    ]
    if not listed:
        return
    known = set(registered_evaluators())
    shown = ", ".join(
        repr(name) + ("" if ":" in name or name in known else " (not a known evaluator)")
        for name in dict.fromkeys(listed)
    )
    warnings.warn(
        f"{dataset.source} lists the evaluators {shown}; the evaluators given in code "
        f"({', '.join(given)}) score every entry instead, and the file's are not built",
        UserWarning,
        stacklevel=4,
    )


def _prepared_from_files(resolved: ResolvedDataset) -> PreparedDataset:
    dataset = resolved.dataset
    problems: list[DatasetProblem] = []
    # resolve_dataset gives entries with the same evaluators one list; they share one list of
    # functions too, which the runner plans once.
    by_list: dict[int, list[EvaluatorFunction]] = {}

    def evaluators_of(index: int, own: list[ResolvedEvaluator]) -> list[EvaluatorFunction]:
        if not own:
            problems.append(_no_evaluator(dataset, index))
        known = by_list.get(id(own))
        if known is None:
            known = by_list[id(own)] = [item.evaluator for item in own]
        return known

    entry_evaluators = PerEntry(
        evaluators_of(index, own) for index, own in enumerate(resolved.entry_evaluators)
    )
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
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = DEFAULT_DATASET_TIMEOUT,
    output_dir: str | os.PathLike[str] | None = None,
    entry_filter: EntryFilter | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    from_trace: TraceSelector | None = None,
    on_entry: Callable[[EntryResult, int, int], object] | None = None,
    progress: bool = False,
    loader: ReferenceLoader | None = None,
    run_id: str | None = None,
    shard: Shard | str | None = None,
    resume: str | os.PathLike[str] | None = None,
    executor: Executor | None = None,
    keep_entries: bool = True,
    force: bool = False,
) -> RunResult:
    """Run every entry of a dataset through its runnable, score it, and return the result.

    Args:
        dataset: A dataset file's path (JSON or YAML), a loaded :class:`Dataset`, or one
            resolved (:func:`resolve_dataset`) or prepared (:func:`prepare_dataset`).
        runnable: The app entry point, instead of the dataset's ``runnable`` reference.
        evaluators: Evaluators given in code, scoring every entry instead of the file's.
        concurrency: Most entries in flight at once (in each worker, with an executor that
            has workers).
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
            number this run runs (in the event loop's thread; keep it quick).
        progress: Show a progress bar (plain lines when ``CI`` is set or standard error is
            not a terminal) on standard error.
        loader: The module loader shared by the datasets of one run.
        run_id: The run's id (and folder name); a new :func:`~evaltrace.results.new_run_id`
            by default.
        shard: Run only this shard of the selected entries: a :class:`Shard` or ``"K/N"``
            (see :mod:`evaltrace.datasets.sharding` for the rule). Each entry keeps its
            position in the whole selection as its ``index``, so that
            :func:`~evaltrace.results.merge_results` can put the shards back together.
        resume: The folder of an interrupted run of this dataset (same entry filter and
            shard, checked): only the entries missing from its ``entries.jsonl`` run,
            appended to its files, and its ``result.json`` is written with every entry.
            ``output_dir`` and ``run_id`` are then not used. The run's fingerprint (the
            dataset's entries, the evaluators, the code files, threshold, timeout, ...) must
            equal the interrupted one's, and no other process may be writing the folder.
        executor: Where the entries run: :class:`LocalExecutor` (this process, the default)
            or a :class:`~evaltrace.datasets.RayExecutor`.
        keep_entries: Whether the result returned holds every entry (the default). With
            ``False`` and an ``output_dir``, each entry is written as it finishes and then
            dropped, so memory stays flat in the number of entries; the result returned then
            has no entries (read them with :func:`~evaltrace.results.load_result` or
            :func:`~evaltrace.results.iter_entries` from the folder).
        force: Resume even when the fingerprints differ (the differences are recorded in
            the result's ``settings["forced"]``).

    Returns:
        The run's result: one :class:`~evaltrace.evals.EntryResult` per selected entry (its
        status, evaluations, output and trace ids), the dataset-level metrics, timing and
        settings. A ``setup`` that raised errors every entry; a ``teardown`` that raised is
        in ``errors``.

    Raises:
        DatasetError: Everything wrong with the dataset, before anything runs.
        NoEntriesSelectedError: ``entry_filter`` matches no entry.
        ResumeError: ``resume`` is the folder of a run of another dataset, selection or shard,
            or of a run whose fingerprint differs (without ``force``), or it is damaged.
        RunFolderBusyError: Another process is writing ``resume``.
        ResultFileError: ``resume`` is not a run's folder.
        ResultsFolderError: ``output_dir`` cannot be written (before anything runs), or
            writing failed during the run (after it ended; ``result.json`` is written if it
            can be).
        ValueError: A bad ``concurrency``, ``timeout``, ``threshold`` or ``shard``, or
            ``keep_entries=False`` without a folder.

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
    if not keep_entries and output_dir is None and resume is None:
        raise ValueError(
            "keep_entries=False drops each entry once it is written: give output_dir= (or "
            "resume=) for the run's folder"
        )
    chosen_shard = Shard.parse(shard) if isinstance(shard, str) else shard or Shard(1, 1)
    prepared = prepare_dataset(dataset, runnable=runnable, evaluators=evaluators, loader=loader)
    data = prepared.dataset
    # Positions in a compact array: a run of 10**6 entries holds 8 bytes for each, not 36;
    # none without a filter.
    selected: Sequence[int] = (
        range(len(data.entries))
        if entry_filter is None
        else array(
            "q", (i for i, entry in enumerate(data.entries) if matches_filter(entry, entry_filter))
        )
    )
    if not selected:
        raise NoEntriesSelectedError(
            f"the entry filter {_describe_filter(entry_filter)} matches none of the "
            f"{len(data.entries)} entries of dataset {data.name or data.source!r}; it selects "
            "entries whose name or description contains it (ignoring case)"
        )
    name = data.name or prepared.runnable.name
    names = (data.entries[i].name or str(i) for i in selected)
    selection = EntrySelection(
        entries=len(selected),
        digest=selection_digest(names),
        shard=chosen_shard.index,
        shards=chosen_shard.count,
        entry_filter=entry_filter if isinstance(entry_filter, str) else None,
    )
    positions: Sequence[int] = (
        shard_positions(name, [data.entries[i].name or str(i) for i in selected], chosen_shard)
        if chosen_shard.count > 1
        else range(len(selected))
    )
    filter_text = None if entry_filter is None else _describe_filter(entry_filter)
    selector_name = None if from_trace is None else evaluator_name(from_trace)
    header = RunResult(
        run_id=run_id or "",
        name=name,
        source=data.source if data.path is not None else None,
        evaluators=_evaluator_names(prepared, selected),
        threshold=threshold,
        settings={
            "concurrency": concurrency,
            "timeout": timeout,
            "threshold": threshold,
            "entry_filter": filter_text,
            "runnable": prepared.runnable.name,
            "from_trace": selector_name,
            "executor": "local" if executor is None else _executor_name(executor),
        },
        selection=selection,
        aggregators={
            source: [
                AGGREGATOR_SPEC_ADAPTER.dump_python(spec, mode="json", by_alias=True)
                for spec in specs
            ]
            for source, specs in prepared.aggregators.items()
        },
        started_at=datetime.now(UTC),
        fingerprint=run_fingerprint(
            prepared,
            threshold=threshold,
            timeout=timeout,
            entry_filter=filter_text,
            from_trace=selector_name,
            shard=chosen_shard,
        ),
    )
    tally = DatasetResultsTally(prepared.aggregators)
    folder: ResultsFolder | None
    if resume is not None:
        folder, header, done = _reopen(resume, header, tally, force=force)
        positions = array("q", (position for position in positions if not done.has(position)))
    else:
        folder = ResultsFolder.create(output_dir, run_id, header=header) if output_dir else None
        header = header.model_copy(
            update={"run_id": folder.run_id if folder else (run_id or new_run_id())}
        )
    display = RunProgress(name, len(positions)) if progress else None
    with contextlib.ExitStack() as stack:
        if folder is not None:
            stack.enter_context(folder)
        if display is not None:
            stack.enter_context(display)
        run = _Run(
            header=header,
            folder=folder,
            display=display,
            on_entry=on_entry,
            tally=tally,
            keep=len(selected) if keep_entries and resume is None else None,
            total=len(positions),
        )
        plan = RunPlan(
            prepared=prepared,
            selected=selected,
            positions=positions,
            run_id=header.run_id,
            threshold=threshold,
            timeout=timeout,
            concurrency=concurrency,
            from_trace=from_trace,
        )
        result = await run.execute(_executor_for(data, executor), plan)
    if resume is not None and keep_entries and folder is not None:
        return load_result(folder.result_path)
    return result


def _executor_for(data: Dataset, executor: Executor | None) -> Executor:
    """The executor given, or the one the dataset needs: stored traces are only scored here."""
    if not data.stored:
        return executor or LocalExecutor()
    if executor is not None and not isinstance(executor, LocalExecutor):
        raise ValueError(
            f"dataset {data.name or data.source!r} points at stored traces, which are scored "
            f"in this process; run it without executor={_executor_name(executor)}"
        )
    return StoredTraceExecutor()


def _evaluator_names(prepared: PreparedDataset, selected: Sequence[int]) -> list[str]:
    """The display names of every evaluator of the selection, in first-use order."""
    names: dict[str, None] = {}
    seen: set[int] = set()
    for index in selected:
        checks = prepared.entry_evaluators[index]
        if id(checks) in seen:  # entries with the same evaluators share one list
            continue
        seen.add(id(checks))
        for check in checks:
            names.setdefault(evaluator_name(check), None)
    return list(names)


def _executor_name(executor: object) -> str:
    return type(executor).__name__


def _reopen(
    path: str | os.PathLike[str], header: RunResult, tally: DatasetResultsTally, *, force: bool
) -> tuple[ResultsFolder, RunResult, EntryLines]:
    """The interrupted run's folder, its header, and the entries it has (counted in ``tally``).

    Everything is checked before the folder changes: a refused resume leaves it as it was.
    """
    forced: list[str] = []
    headers: list[RunResult] = []

    def check(started: RunResult) -> None:
        headers.append(started)
        given, recorded = header.selection, started.selection
        if started.name != header.name or recorded is None or given is None:
            raise ResumeError(
                f"{path} holds a run of {started.name!r}, not of {header.name!r}; resume a "
                "run in its own folder, with its own dataset"
            )
        if (recorded.digest, recorded.shard, recorded.shards) != (
            given.digest,
            given.shard,
            given.shards,
        ):
            raise ResumeError(
                f"{path} holds a run of {recorded.label} of {started.name!r} (entry filter "
                f"{recorded.entry_filter!r}), but this run selects {given.label} (entry "
                f"filter {given.entry_filter!r}); resume with the same entry filter and shard"
            )
        if started.fingerprint is None or header.fingerprint is None:
            return  # written before runs had fingerprints: nothing to compare
        differences = started.fingerprint.differences(header.fingerprint)
        if differences and not force:
            shown = "; ".join(d.describe(str(path), "this run") for d in differences)
            raise ResumeError(
                f"{path} cannot be resumed by this run: {shown}. Its entries would mix with "
                "entries scored differently; start a new run, or resume with --force "
                "(force=True) if you know they are comparable"
            )
        forced.extend(d.field for d in differences)

    try:
        folder = ResultsFolder.reopen(path, check=check)
    except DuplicateEntryError as exc:
        raise ResumeError(
            f"{path} cannot be resumed: its entries.jsonl holds entry #{exc.index} twice (the "
            "folder was written by two runs at once, or edited); it is left as it is: start "
            "a new run"
        ) from None
    try:
        if header.aggregators:
            for line in folder.done.lines():
                tally.add(EntryResult.model_validate_json(line).evaluations)
    except BaseException:
        folder.close()
        raise
    settings = {**header.settings, **({"forced": forced} if forced else {})}
    return folder, headers[0].model_copy(update={"settings": settings}), folder.done


def _describe_filter(entry_filter: EntryFilter | None) -> str:
    if isinstance(entry_filter, str):
        return repr(entry_filter)
    return evaluator_name(entry_filter)


class _Run:
    """One run: its entries as they finish (written, tallied, dropped) and the result."""

    def __init__(
        self,
        *,
        header: RunResult,
        folder: ResultsFolder | None,
        display: RunProgress | None,
        on_entry: Callable[[EntryResult, int, int], object] | None,
        tally: DatasetResultsTally,
        keep: int | None,
        total: int,
    ) -> None:
        self.header = header
        self.folder = folder
        self.display = display
        self.on_entry = on_entry
        self.tally = tally
        self.kept: list[EntryResult | None] | None = [None] * keep if keep is not None else None
        self.total = total
        self.done = 0
        self.errors: list[EvaluationError] = []
        self.write_error: ResultsFolderError | None = None
        self.started = time.perf_counter()

    async def execute(self, executor: Executor, plan: RunPlan) -> RunResult:
        try:
            self.errors += await executor.execute(plan, self.finished)
        except BaseException:  # interrupted (Ctrl-C, cancelled, a failure): keep what finished
            self._write(self._result(interrupted=True), raising=False)
            raise
        result = self._result(interrupted=False)
        self._write(result, raising=True)
        return result

    def finished(self, entry: EntryResult, spans: Iterable[SpanRecord | str]) -> None:
        """Write a finished entry with its spans, count it, report it; keep it if asked."""
        if self.folder is not None and self.write_error is None:
            try:
                self.folder.add_entry(entry, spans)
            except ResultsFolderError as exc:
                self.write_error = exc
        self.tally.add(entry.evaluations)
        if self.kept is not None:
            self.kept[entry.index] = entry
        self.done += 1
        if self.display is not None:
            self.display.advance(entry)
        if self.on_entry is not None:
            self.on_entry(entry, self.done, self.total)

    def _result(self, *, interrupted: bool) -> RunResult:
        kept = self.kept or []
        fields = {name: getattr(self.header, name) for name in RunResult.model_fields}
        return RunResult(  # validated: the dataset-level details are saved as JSON data
            **{
                **fields,
                "entries": [entry for entry in kept if entry is not None],
                "dataset_results": self.tally.results(),
                "finished_at": datetime.now(UTC),
                "duration_s": time.perf_counter() - self.started,
                "errors": [*self.header.errors, *self.errors],
                "interrupted": interrupted,
            }
        )

    def _write(self, result: RunResult, *, raising: bool) -> None:
        if self.folder is None:
            return
        try:
            self.folder.finish(result)
        except ResultsFolderError as exc:
            self.write_error = self.write_error or exc
        if raising and self.write_error is not None:
            raise self.write_error
