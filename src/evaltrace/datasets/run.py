"""Running a dataset: :func:`run_dataset`, what ``evaltrace test`` does for each dataset file.

A run checks everything first: the file is loaded, the runnable imported, every evaluator
built and every entry's arguments checked against the runnable (:func:`prepare_dataset`);
all problems are raised at once, as one :class:`~evaltrace.datasets.DatasetError`, before
anything runs or anything is written. Then the runnable's ``setup`` runs once, the entries run
concurrently (each under its own capture, its ``eval_input`` served to
``wrap(purpose="input")``, each run and each evaluation bounded by the timeout), and its
``teardown`` runs once, always, also when the run is interrupted.

The run itself is the engine's (:func:`evaltrace.engine.execute`): with ``output_dir`` it
writes its folder ``<output_dir>/<run-id>/`` (see :mod:`evaltrace.results.folder`), each
entry's spans appended to ``traces.jsonl`` as the entry finishes and its capture then
released, so a long run never holds every trace in memory; ``result.json`` is written at the
end, atomically, also when the run is interrupted (then with the entries that finished, and
``interrupted`` set).
"""

from __future__ import annotations

import os
import re
import warnings
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final, TypeAlias, overload

from evaltrace._safe_text import exception_text
from evaltrace.concurrency import pending
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONFIDENCE,
    DEFAULT_DATASET_TIMEOUT,
    DEFAULT_EPOCH_REDUCER,
    DEFAULT_EPOCHS,
    DEFAULT_RESAMPLES,
    DEFAULT_STATISTICS_SEED,
    DEFAULT_THRESHOLD,
)
from evaltrace.datasets.entries import DatasetEntries, PreparedDataset
from evaltrace.datasets.fingerprint import run_fingerprint
from evaltrace.datasets.jsonl import with_entry_lines
from evaltrace.datasets.loading import ValidParts, load_dataset, with_positions
from evaltrace.datasets.model import Dataset, DatasetEntry, EvaluatorSpec
from evaltrace.datasets.problems import DatasetError, DatasetProblem, format_location
from evaltrace.datasets.references import ReferenceLoader, parse_reference
from evaltrace.datasets.registry import (
    BUILTIN_EVALUATORS,
    UnknownEvaluatorError,
    lookup_evaluator,
    registered_evaluators,
)
from evaltrace.datasets.resolution import (
    PerEntry,
    ResolvedDataset,
    ResolvedEvaluator,
    resolve_dataset,
)
from evaltrace.datasets.sharding import Shard, selection_digest, shard_positions
from evaltrace.engine import (
    Executor,
    Listing,
    LocalExecutor,
    Observer,
    Output,
    RunConfig,
    Scored,
    execute,
)
from evaltrace.errors import EvaltraceError, ResumeError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.evals.selectors import TraceSelector
from evaltrace.judges.strategies import BaseJudgeAggregator
from evaltrace.llm.prices import PriceTable
from evaltrace.metrics.classification import AggregatorSpec, compute_dataset_evaluator_results
from evaltrace.results.model import EntryResult, EntrySelection, RunResult

__all__ = [
    "DatasetSource",
    "EntryFilter",
    "NoEntriesSelectedError",
    "PreparedDataset",
    "ResumeError",
    "matches_filter",
    "prepare_dataset",
    "run_dataset",
    "select_entries",
]


EntryFilter: TypeAlias = str | Callable[[DatasetEntry], bool]
"""Which entries run: text found (ignoring case) in an entry's name or description, or a
predicate on the entry."""


class NoEntriesSelectedError(EvaltraceError, ValueError):
    """The entry filter of a run matches none of the dataset's entries."""


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
    if not isinstance(dataset, Dataset):
        try:
            loaded = load_dataset(dataset)
        except DatasetError as exc:
            error = _with_code_problems(exc, runnable, evaluators, loader)
            raise with_positions(error, dataset) from None
    else:
        loaded = dataset
    try:
        return _prepared(loaded, runnable, evaluators, loader)
    except DatasetError as exc:
        if loaded.path is None:
            raise
        raise with_positions(exc, loaded.path) from None


def _prepared(
    loaded: Dataset,
    runnable: object | None,
    evaluators: Sequence[EvaluatorFunction] | None,
    loader: ReferenceLoader | None,
) -> PreparedDataset:
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
    _warn_unused_file_evaluators(loaded, list(names))
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
    listed = [name for name in listed if name not in given]  # named for their aggregators
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


_ENTRY_LOCATION: Final = re.compile(r"^entries\[(\d+)\]")


def _with_code_problems(
    error: DatasetError,
    runnable: object | None,
    evaluators: Sequence[EvaluatorFunction] | None,
    loader: ReferenceLoader | None,
) -> DatasetError:
    """``error`` with the problems its file's valid parts have with the user's code.

    A file whose own validation failed is still checked against the runnable's signature,
    the evaluators' and the aggregators', so that one validation lists every problem.
    """
    parts = error.valid_parts
    if not isinstance(parts, ValidParts):
        return error
    try:
        _prepared(parts.dataset, runnable, evaluators, loader)
    except DatasetError as more:
        known = {(problem.location, problem.message) for problem in error.problems}
        added = []
        for problem in more.problems:
            problem = _at_file_index(problem, parts.indexes)
            if (problem.location, problem.message) not in known:
                added.append(problem)
        if added:
            return DatasetError([*error.problems, *added])
    return error


def _at_file_index(problem: DatasetProblem, indexes: Sequence[int]) -> DatasetProblem:
    """``problem`` located by its entry's index in the file (the valid parts skip some)."""
    found = _ENTRY_LOCATION.match(problem.location)
    if found is None:
        return problem
    location = f"entries[{indexes[int(found.group(1))]}]" + problem.location[found.end() :]
    return replace(problem, location=location)


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
    for position, item in enumerate(resolved.evaluators):
        if item.spec.aggregators and not _may_label(item.spec):
            problems.append(_unlabelled(dataset.source, position, item.spec))
        if item.spec.aggregators:
            aggregators[item.name] = list(item.spec.aggregators)
            sources[item.name] = item.evaluator
    problems += _aggregator_problems(dataset.source, aggregators)
    if problems:
        raise DatasetError(with_entry_lines(dataset, problems))
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


def _may_label(spec: EvaluatorSpec) -> bool:
    """Whether the evaluator of ``spec`` may record labels (``details.expected/actual``).

    None of evaltrace's own evaluators and checks does (each gives a score); a custom one may.
    """
    if spec.check is not None:
        return False
    if parse_reference(spec.name) is not None:
        return True
    try:
        return lookup_evaluator(spec.name) not in BUILTIN_EVALUATORS
    except UnknownEvaluatorError:  # reported where it is built
        return True


def _unlabelled(file: str, position: int, spec: EvaluatorSpec) -> DatasetProblem:
    kinds = list(dict.fromkeys(aggregator.type for aggregator in spec.aggregators))
    label = repr(spec.name) if spec.check is None else f"the {spec.check.type!r} check"
    return DatasetProblem(
        file=file,
        location=format_location(("evaluators", position, "aggregators")),
        message=(
            f"{', '.join(kinds)} count{'' if len(kinds) > 1 else 's'} each entry's expected "
            f"and actual labels, which {label} does not record (it gives a score)"
        ),
        hint=(
            "give the aggregators to an evaluator that labels each entry: a custom one "
            "returning Evaluation(score=..., details={'expected': <label>, 'actual': <label>}) "
            "(see docs/metrics.md, dataset-level metrics)"
        ),
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


@pending("evaltrace.run_dataset")
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
    keep_entries: bool | Listing = True,
    force: bool = False,
    epochs: int | None = None,
    reducer: str | BaseJudgeAggregator | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    statistics_seed: int = DEFAULT_STATISTICS_SEED,
    prices: PriceTable | str | os.PathLike[str] | None = None,
    observers: Sequence[Observer] = (),
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
            (:data:`~evaltrace.constants.DEFAULT_DATASET_TIMEOUT` by default; ``None`` for no
            limit). A run past it makes its entry ``TIMED_OUT``.
        output_dir: Where to write the run's folder (``<output_dir>/<run-id>/``); nothing is
            written by default. ``evaltrace test`` writes to ``evaltrace_results``.
        entry_filter: Run only the entries whose name or description contains this text
            (ignoring case), or for which this predicate is true.
        threshold: The score each evaluation must reach for its entry to pass.
        from_trace: Selects what to score from each entry's trace; default
            :func:`evaltrace.root`.
        on_entry: Called as each entry finishes, with its result, the number finished and the
            number this run runs (in the event loop's thread; keep it quick). An exception it
            raises ends the run (what finished is written).
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
        executor: Where the entries run: :class:`~evaltrace.engine.LocalExecutor` (this
            process, the default) or a :class:`~evaltrace.datasets.RayExecutor`.
        keep_entries: Whether the result returned holds every entry (the default). With
            ``False`` and an ``output_dir``, each entry is written as it finishes and then
            dropped, so memory stays flat in the number of entries; the result returned then
            has no entries but their ``counts`` (read them with
            :func:`~evaltrace.results.load_result` or :func:`~evaltrace.results.iter_entries`
            from the folder). A :class:`~evaltrace.engine.Listing` keeps the entries a report
            lists.
        force: Resume even when the fingerprints differ (the differences are recorded in
            the result's ``settings["forced"]``).
        epochs: Run each entry's app this many times, each run captured and scored on its
            own (kept in the entry's ``epochs``), its evaluations reduced by ``reducer``; the
            dataset file's ``epochs`` (else once) by default.
        reducer: How an entry's runs are reduced: ``"mean"``, ``"median"``, ``"mode"``,
            ``"min"``, ``"max"``, or a strategy such as ``AtLeastKAggregationStrategy(k=2)``;
            the dataset file's ``reducer`` (else ``"mean"``) by default.
        confidence: The confidence level of the run's intervals (``statistics``).
        resamples: How often the bootstrap resamples the entries for those intervals; 0
            computes no statistics.
        statistics_seed: The seed of those resamples.
        prices: The price table the run's cost is computed by (a
            :class:`~evaltrace.llm.prices.PriceTable` or a price file's path); ``None``: the
            file ``EVALTRACE_PRICES`` names, else none (tokens are counted, the cost is
            unknown).
        observers: Called with each scored entry as it finishes, with its live trace (see
            :data:`~evaltrace.engine.run.Observer`): ``evaltrace test`` writes its
            scorecard so.

    Returns:
        The run's result: one :class:`~evaltrace.results.EntryResult` per selected entry
        (its status, evaluations, output and trace ids), the dataset-level metrics, timing
        and settings. A ``setup`` that raised errors every entry; a ``teardown`` that raised
        is in ``errors``.

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
    if not keep_entries and output_dir is None and resume is None:
        raise ValueError(
            "keep_entries=False drops each entry once it is written: give output_dir= (or "
            "resume=) for the run's folder"
        )
    prepared = prepare_dataset(dataset, runnable=runnable, evaluators=evaluators, loader=loader)
    data = prepared.dataset
    config = RunConfig(
        concurrency=concurrency,
        timeout=timeout,
        threshold=threshold,
        from_trace=from_trace,
        run_id=run_id,
        epochs=epochs if epochs is not None else data.epochs or DEFAULT_EPOCHS,
        reducer=reducer if reducer is not None else data.reducer or DEFAULT_EPOCH_REDUCER,
        confidence=confidence,
        resamples=resamples,
        statistics_seed=statistics_seed,
        prices=prices,
    )
    source = select_entries(prepared, config, entry_filter=entry_filter, shard=shard)
    observers = list(observers)
    if on_entry is not None:
        callback = on_entry

        def observe(scored: Scored, done: int, total: int) -> None:
            callback(scored.result, done, total)

        observers.append(observe)
    return await execute(
        source,
        config,
        executor=_executor_for(prepared.dataset, executor),
        output=_output(output_dir, resume, force),
        keep=keep_entries,
        observers=observers,
        progress=progress,
        release=True,
    )


def _output(
    output_dir: str | os.PathLike[str] | None, resume: str | os.PathLike[str] | None, force: bool
) -> Output | None:
    if resume is not None:
        return Output(resume=Path(resume), force=force)
    return Output(parent=Path(output_dir)) if output_dir is not None else None


def select_entries(
    prepared: PreparedDataset,
    config: RunConfig,
    *,
    entry_filter: EntryFilter | None = None,
    shard: Shard | str | None = None,
) -> DatasetEntries:
    """The entries of ``prepared`` a run scores: those ``entry_filter`` selects, one shard.

    Raises:
        NoEntriesSelectedError: ``entry_filter`` matches no entry.
        ShardSpecError: ``shard`` is not ``"K/N"``.
    """
    chosen_shard = Shard.parse(shard) if isinstance(shard, str) else shard or Shard(1, 1)
    data = prepared.dataset
    # Positions in a compact array: a run of 10**6 entries holds 8 bytes for each, not 36;
    # none without a filter (bench_scale.py, streamed memory per entry).
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
    selection = EntrySelection(
        entries=len(selected),
        digest=selection_digest(_selected_names(data, selected)),
        shard=chosen_shard.index,
        shards=chosen_shard.count,
        entry_filter=entry_filter if isinstance(entry_filter, str) else None,
    )
    positions: Sequence[int] = (
        shard_positions(name, _SelectedNames(data, selected), chosen_shard)
        if chosen_shard.count > 1
        else range(len(selected))
    )
    filter_text = None if entry_filter is None else _describe_filter(entry_filter)
    fingerprint = run_fingerprint(
        prepared,
        threshold=config.threshold,
        timeout=config.timeout,
        entry_filter=filter_text,
        from_trace=None if config.from_trace is None else evaluator_name(config.from_trace),
        shard=chosen_shard,
        epochs=config.epochs,
        reducer=config.reducer_name,
    )
    return DatasetEntries(
        prepared,
        selected=selected,
        positions=positions,
        selection=selection,
        fingerprint=fingerprint,
        settings={"entry_filter": filter_text},
    )


def _selected_names(data: Dataset, selected: Sequence[int]) -> Iterator[str]:
    """The names of the selected entries, one at a time (a JSONL dataset's are read anew)."""
    if isinstance(selected, range) and selected == range(len(data.entries)):
        return (entry.name or str(i) for i, entry in enumerate(data.entries))
    return (data.entries[i].name or str(i) for i in selected)


class _SelectedNames(Sequence[str]):
    """The names of the selected entries, each read when asked (never a list of them all)."""

    def __init__(self, data: Dataset, selected: Sequence[int]) -> None:
        self._data = data
        self._selected = selected

    def __len__(self) -> int:
        return len(self._selected)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = self._selected[index]
        return self._data.entries[position].name or str(position)

    def __iter__(self) -> Iterator[str]:
        return _selected_names(self._data, self._selected)


def _executor_for(data: Dataset, executor: Executor | None) -> Executor | None:
    """The executor given; a dataset of stored traces is only scored in this process."""
    if not data.stored or executor is None or isinstance(executor, LocalExecutor):
        return executor
    raise ValueError(
        f"dataset {data.name or data.source!r} points at stored traces, which are scored "
        f"in this process; run it without executor={type(executor).__name__}"
    )


def _describe_filter(entry_filter: EntryFilter | None) -> str:
    if isinstance(entry_filter, str):
        return repr(entry_filter)
    return evaluator_name(entry_filter)
