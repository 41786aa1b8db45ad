"""The one run: :func:`execute` scores a source's entries and builds the saved result.

Every way of running is an adapter over :func:`execute`: it makes an
:class:`~evaltrace.engine.entries.EntrySource` (plain inputs, stored traces, a dataset's
entries, a pipeline's inputs) and a :class:`~evaltrace.engine.config.RunConfig`, and says
what to keep. :func:`execute` then, once for all of them:

* builds the run's header (name, settings, selection, aggregators, fingerprint) and, with an
  :class:`Output`, creates the run's folder and writes ``run.json``, or takes an interrupted
  run's folder up again (checking its fingerprint and lock first, so a refused resume changes
  nothing) and leaves out the entries it has;
* hands the entries to the executor (:class:`~evaltrace.engine.scheduler.LocalExecutor`, or
  Ray), and as each one finishes: lets the source complete it, appends it with its spans to
  the folder, counts its status, tallies the dataset-level metrics, shows progress, gives it
  to the observers, keeps it (all, none, or those a report lists) and drops its capture;
* builds the :class:`~evaltrace.results.RunResult` (here only) and writes ``result.json``,
  also when the run is interrupted (then with what finished, ``interrupted`` set).
"""

from __future__ import annotations

import contextlib
import heapq
import inspect
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaltrace.engine.config import RunConfig
from evaltrace.engine.entries import EntrySource
from evaltrace.engine.scheduler import Executor, LocalExecutor, Work
from evaltrace.engine.scoring import Scored
from evaltrace.errors import ResultsFolderError, ResumeError
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import evaluator_name
from evaltrace.evals.telemetry import export_run_statistics
from evaltrace.metrics.classification import DatasetResultsTally
from evaltrace.results.folder import (
    DuplicateEntryError,
    EntryLines,
    ResultsFolder,
    load_result,
    new_run_id,
)
from evaltrace.results.model import CompletionStatus, EntryResult, LabelTally, RunResult
from evaltrace.results.progress import RunProgress
from evaltrace.results.run_statistics import StatisticsTally, statistics_attributes
from evaltrace.results.uncertainty import RunStatistics
from evaltrace.results.usage import UsageTally

__all__ = ["Listing", "Observer", "Output", "execute"]

Observer = Callable[[Scored, int, int], object]
"""Called with each scored entry, the number this run has scored and the number it scores
(in the event loop's thread); an awaitable it returns is awaited before the next entry is
taken. What it raises ends the run, what finished being written."""


@dataclass(frozen=True, kw_only=True)
class Output:
    """Where a run writes its folder: a new one, or an interrupted run's to finish."""

    parent: Path | None = None
    """The folder in which the run's folder ``<parent>/<run-id>/`` is created."""
    resume: Path | None = None
    """The folder of an interrupted run: only the entries missing from it run."""
    force: bool = False
    """Resume even when the fingerprints differ (the differences are recorded)."""


@dataclass(frozen=True)
class Listing:
    """Keep the entries a report lists, not every entry of a large run.

    Every entry when there are at most ``all_up_to``, else the first ``failing_up_to`` (in
    entry order) that did not pass (all of them with ``None``).
    """

    all_up_to: int
    """Up to this many entries in all, every one is kept."""
    failing_up_to: int | None
    """Beyond that, how many of those that did not pass are kept."""

    def select(self, entries: Iterable[EntryResult]) -> list[EntryResult]:
        """The entries this listing keeps of ``entries`` (in any order), in entry order.

        What a run keeps as its entries finish, for entries read another way.

        Example:
            >>> from evaltrace.evals import Evaluation
            >>> ok = EntryResult(index=0, name="a", evaluations=[Evaluation(score=1.0)])
            >>> bad = EntryResult(index=1, name="b", evaluations=[Evaluation(score=0.0)])
            >>> [e.name for e in Listing(all_up_to=1, failing_up_to=5).select([bad, ok])]
            ['b']
        """
        kept = _Kept(self)
        for entry in entries:
            kept.add(entry)
        return kept.entries()


async def execute(
    source: EntrySource,
    config: RunConfig,
    *,
    executor: Executor | None = None,
    output: Output | None = None,
    keep: bool | Listing = True,
    observers: Sequence[Observer] = (),
    progress: bool = False,
    release: bool = False,
) -> RunResult:
    """Score every entry of ``source`` and return the run's saved result.

    Args:
        source: Where the entries come from.
        config: The run's settings.
        executor: Where the entries are scored; :class:`LocalExecutor` by default.
        output: Where the run's folder is written; nothing is written by default.
        keep: Which entries the result returned holds: all (``True``), none (``False``;
            they are in the folder), or those a :class:`Listing` names. Its ``counts`` tell
            of every entry whatever is kept.
        observers: Called with each scored entry (see :data:`Observer`), in order.
        progress: Show progress on standard error.
        release: Drop each entry's capture once the folder and the observers had it, so
            memory holds the entries in flight, not the run.

    Raises:
        ResumeError: ``output.resume`` holds a run of another source, selection or
            fingerprint (unless ``output.force``), or is damaged; it is left as it was.
        RunFolderBusyError: Another process is writing ``output.resume``.
        ResultsFolderError: The folder cannot be written (before anything runs), or writing
            failed during the run (after it ended; ``result.json`` is written if it can be).
        BaseException: What stopped the run (Ctrl-C, a cancellation, an observer raising);
            ``result.json`` is written first, with what finished.
    """
    header = _header(source, config, executor)
    state = _Running(header, source, config, keep=keep, observers=observers, release=release)
    resumed = output is not None and output.resume is not None
    if output is not None and output.resume is not None:
        state.reopen(output.resume, force=output.force)
    elif output is not None and output.parent is not None:
        state.create(output.parent)
    work = Work(
        source=source,
        config=config,
        run_id=state.header.run_id,
        done=state.prior.has if resumed else None,
    )
    state.total = len(source) - len(state.prior)
    with contextlib.ExitStack() as stack:
        if state.folder is not None:
            stack.callback(state.folder.close)
        if progress:
            display = RunProgress(source.name, state.total, scored=source.scored)
            state.display = stack.enter_context(display)
        try:
            errors = await (executor or LocalExecutor()).execute(work, state.finished)
        except BaseException:  # interrupted (Ctrl-C, cancelled, a failure): keep what finished
            state.write(state.result(interrupted=True, errors=[]), raising=False)
            raise
        result = state.result(interrupted=False, errors=[*errors, *source.errors()])
        state.write(result, raising=True)
    if result.statistics is not None:  # known at the end only: after every entry's events
        export_run_statistics(result.name, result.run_id, statistics_attributes(result.statistics))
    if resumed and keep is True and state.folder is not None:
        return load_result(state.folder.result_path)  # every entry, the earlier ones too
    return result


def _header(source: EntrySource, config: RunConfig, executor: Executor | None) -> RunResult:
    """The run as it starts: what ``run.json`` holds."""
    info = source.info()
    settings: dict[str, Any] = {
        "concurrency": config.concurrency,
        "timeout": config.timeout,
        "threshold": config.threshold,
        "from_trace": None if config.from_trace is None else evaluator_name(config.from_trace),
        "executor": "local" if executor is None else type(executor).__name__,
        "epochs": config.epochs,
        "reducer": config.reducer_name,
        **info.settings,
    }
    return _run_result(
        run_id=config.run_id or new_run_id(),
        name=source.name,
        source=info.source,
        evaluators=info.evaluators,
        threshold=config.threshold,
        settings=settings,
        selection=info.selection,
        aggregators=info.aggregators,
        fingerprint=info.fingerprint,
        started_at=datetime.now(UTC),
    )


def _run_result(**fields: Any) -> RunResult:
    """The one place a run's result is built (validated: dataset-level details become data)."""
    return RunResult(**fields)


class _Running:
    """One run under way: its folder, the entries as they finish, and its result."""

    def __init__(
        self,
        header: RunResult,
        source: EntrySource,
        config: RunConfig,
        *,
        keep: bool | Listing,
        observers: Sequence[Observer],
        release: bool,
    ) -> None:
        self.header = header
        self.source = source
        self.config = config
        self.observers = observers
        self.release = release
        self.completes = type(source).finish is not EntrySource.finish
        """Whether the source completes each saved result (else it is built when used)."""
        self.folder: ResultsFolder | None = None
        self.prior = EntryLines(files=[], where=array("q"), count=0)
        self.tally = DatasetResultsTally(header.aggregators)
        self.counts: Counter[CompletionStatus] = Counter()
        self.labels = LabelTally()
        # Each entry is one cluster (its index): an entry run several times (epochs) counts
        # once, its runs reduced to one evaluation per evaluator.
        self.scores = (
            StatisticsTally(threshold=header.threshold, evaluators=header.evaluators)
            if config.resamples
            else None
        )
        self.spent = UsageTally()
        self.kept = _Kept(keep)
        self.display: RunProgress | None = None
        self.done = 0
        self.total = 0
        self.write_error: ResultsFolderError | None = None
        self.started = time.perf_counter()

    def create(self, parent: Path) -> None:
        run_id = self.header.run_id or None
        folder = self.folder = ResultsFolder.create(parent, run_id, header=self.header)
        self.header = self.header.model_copy(update={"run_id": folder.run_id})

    def reopen(self, path: Path, *, force: bool) -> None:
        header = self.header
        forced: list[str] = []
        recorded: list[RunResult] = []

        def check(started: RunResult) -> None:
            recorded.append(started)
            forced.extend(_resume_differences(path, started, header, force=force))

        try:
            folder = self.folder = ResultsFolder.reopen(path, check=check)
        except DuplicateEntryError as exc:
            raise ResumeError(
                f"{path} cannot be resumed: its entries.jsonl holds entry #{exc.index} twice "
                "(the folder was written by two runs at once, or edited); it is left as it "
                "is: start a new run"
            ) from None
        self.prior = folder.done
        for line in folder.done.lines():
            entry = EntryResult.model_validate_json(line)
            self.counts[entry.status] += 1
            self.labels.add(entry.evaluations)
            self.tally.add(entry.evaluations)
            if self.scores is not None:
                self.scores.add(entry)
            self.spent.add(entry.usage, entry.judge_usage, entry.duration_s)
        settings = {**header.settings, **({"forced": forced} if forced else {})}
        self.header = recorded[0].model_copy(update={"settings": settings})

    async def finished(self, scored: Scored) -> None:
        """Take one scored entry: complete, write, count, show, observe, keep, release.

        Its saved result is built only when something here uses it (the folder, the
        display, the entries kept, a source that completes it, an observer that asks).
        """
        if self.completes:
            scored.result = self.source.finish(scored)
        if self.folder is not None and self.write_error is None:
            try:
                self.folder.add_entry(scored.result, scored.spans())
            except ResultsFolderError as exc:
                self.write_error = exc
        self.counts[scored.status] += 1
        self.labels.add(scored.evaluations)
        self.tally.add(scored.evaluations)
        if self.scores is not None:
            self.scores.add_evaluations(scored.evaluations, scored.index)
        self.spent.add(scored.usage, scored.judge_usage, scored.duration_s)
        self.done += 1
        if self.display is not None:
            self.display.advance(scored.result)
        for observer in self.observers:
            outcome = observer(scored, self.done, self.total)
            if outcome is not None and inspect.isawaitable(outcome):
                await outcome
        if self.kept.keep is not False:
            self.kept.add(scored.result)
        if self.release:
            scored.release()

    def result(self, *, interrupted: bool, errors: Iterable[EvaluationError]) -> RunResult:
        fields = {name: getattr(self.header, name) for name in type(self.header).model_fields}
        dataset_results = self.tally.results()
        return _run_result(
            **{
                **fields,
                "entries": self.kept.entries(),
                "counts": dict(self.counts),
                "label_counts": self.labels.counts(),
                "dataset_results": dataset_results,
                "statistics": self.statistics(dataset_results),
                "finished_at": datetime.now(UTC),
                "duration_s": time.perf_counter() - self.started,
                "errors": [*self.header.errors, *errors],
                "interrupted": interrupted,
                **self.spent.fields(self.config.price_table),
            }
        )

    def statistics(self, dataset_results: dict[str, Evaluation]) -> RunStatistics | None:
        """The run's statistics, computed once, at its end (``None`` with ``resamples=0``)."""
        if self.scores is None:
            return None
        config = self.config
        return self.scores.statistics(
            confidence=config.confidence,
            resamples=config.resamples,
            seed=config.statistics_seed,
            dataset=self.tally,
            dataset_results=dataset_results,
        )

    def write(self, result: RunResult, *, raising: bool) -> None:
        if self.folder is None:
            return
        try:
            self.folder.finish(result)
        except ResultsFolderError as exc:
            self.write_error = self.write_error or exc
        if raising and self.write_error is not None:
            raise self.write_error


def _resume_differences(
    path: Path, started: RunResult, header: RunResult, *, force: bool
) -> list[str]:
    """The fingerprint fields ``started`` and ``header`` disagree on, or why not to resume."""
    given, recorded = header.selection, started.selection
    if started.name != header.name or (recorded is None) != (given is None):
        raise ResumeError(
            f"{path} holds a run of {started.name!r}, not of {header.name!r}; resume a run in "
            "its own folder, with its own dataset"
        )
    if (
        recorded is not None
        and given is not None
        and (
            (recorded.digest, recorded.shard, recorded.shards)
            != (given.digest, given.shard, given.shards)
        )
    ):
        raise ResumeError(
            f"{path} holds a run of {recorded.label} of {started.name!r} (entry filter "
            f"{recorded.entry_filter!r}), but this run selects {given.label} (entry filter "
            f"{given.entry_filter!r}); resume with the same entry filter and shard"
        )
    if started.fingerprint is None or header.fingerprint is None:
        return []  # written before runs had fingerprints: nothing to compare
    differences = started.fingerprint.differences(header.fingerprint)
    if differences and not force:
        shown = "; ".join(d.describe(str(path), "this run") for d in differences)
        raise ResumeError(
            f"{path} cannot be resumed by this run: {shown}. Its entries would mix with "
            "entries scored differently; start a new run, or resume with --force "
            "(force=True) if you know they are comparable"
        )
    return [difference.field for difference in differences]


class _Kept:
    """The entries a run returns: all, none, or those a report lists."""

    def __init__(self, keep: bool | Listing) -> None:
        self.keep = keep
        self.all: list[EntryResult] = []
        self.count = 0
        self.passing: list[EntryResult] = []
        self.failing: list[tuple[int, EntryResult]] = []  # a heap of the first ones, by -index

    def add(self, entry: EntryResult) -> None:
        keep = self.keep
        if keep is True:
            self.all.append(entry)
            return
        if keep is False:
            return
        self.count += 1
        if entry.status.passed:
            if self.count <= keep.all_up_to:
                self.passing.append(entry)
        elif keep.failing_up_to is None or len(self.failing) < keep.failing_up_to:
            heapq.heappush(self.failing, (-entry.index, entry))
        elif keep.failing_up_to > 0 and entry.index < -self.failing[0][0]:
            heapq.heapreplace(self.failing, (-entry.index, entry))

    def entries(self) -> list[EntryResult]:
        """The entries kept, in entry order."""
        keep = self.keep
        if keep is True:
            return sorted(self.all, key=_index)
        if keep is False:
            return []
        kept = [entry for _, entry in self.failing]
        if self.count <= keep.all_up_to:
            kept += self.passing
        return sorted(kept, key=_index)


def _index(entry: EntryResult) -> int:
    return entry.index
