"""``evaltrace test``: run dataset files, write each run's results folder, report, exit code."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evaltrace.cli._discovery import dataset_files
from evaltrace.cli._options import (
    Gate,
    GatedCommand,
    gate_fails,
    gate_level,
    output_format,
    prices_option,
    regression_gate,
    statistics_options,
    verbose,
)
from evaltrace.cli._selectors import SELECTOR_HELP, SelectorType, selector
from evaltrace.cli._terminal import INTERRUPTED, CommandError, err, out, printable
from evaltrace.cli.cache import judge_cache_option, no_judge_cache_option, using_judge_cache
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DATASET_TIMEOUT,
    DEFAULT_THRESHOLD,
    RESULTS_DIR,
)
from evaltrace.errors import EvaltraceError

if TYPE_CHECKING:
    from evaltrace.datasets import PreparedDataset, Shard
    from evaltrace.engine import Executor, Listing
    from evaltrace.engine.scoring import Scored
    from evaltrace.llm.prices import PriceTable
    from evaltrace.results import EntryResult, RunResult, ScorecardWriter

__all__ = ["test"]


@click.command(
    "test", short_help="Run dataset files, save each run and print the report.", cls=GatedCommand
)
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
@click.option(
    "-k",
    "entry_filter",
    metavar="FILTER",
    help="Run only the entries whose name or description contains FILTER (ignoring case).",
)
@verbose("List every entry in the report.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Most entries of a dataset in flight at once.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_DATASET_TIMEOUT,
    show_default=True,
    help="Seconds allowed for each run of the app and each evaluation; 0 for no limit.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=DEFAULT_THRESHOLD,
    show_default=True,
    help="The score each evaluation must reach for its entry to pass.",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    metavar="K",
    help="Run each entry's app K times, each run scored on its own, then reduced (--reducer); "
    "default: the dataset file's epochs, else 1.",
)
@click.option(
    "--reducer",
    metavar="NAME",
    help="How an entry's K runs are reduced to one evaluation per evaluator: mean, median, "
    "mode, min or max (default: the dataset file's reducer, else mean).",
)
@click.option(
    "--output-dir",
    type=click.Path(),
    default=RESULTS_DIR,
    show_default=True,
    help="Where each run's folder (<run-id>/result.json, traces.jsonl) is written.",
)
@click.option(
    "--baseline",
    type=click.Path(),
    metavar="RESULT",
    help="A result.json (or run folder) to compare the run with.",
)
@regression_gate("--baseline, even if everything passed")
@statistics_options("the run's intervals and the comparison with --baseline")
@prices_option("the run's cost")
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 even when entries fail or error (a demo, or a report-only job); bad usage, an "
    "invalid dataset and Ctrl-C keep their exit codes.",
)
@click.option(
    "--no-scorecard",
    is_flag=True,
    help="Do not write scorecard.html (the HTML page of the run) into each run's folder.",
)
@click.option(
    "--shard",
    metavar="K/N",
    help="Run only shard K of N of each dataset's entries (a stable, balanced split; "
    "combine the shards' folders with `evaltrace merge`).",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Finish the interrupted run in DIR: run only the entries missing from its "
    "entries.jsonl (same dataset, entry filter and shard), then write its result.json.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --resume: finish the run even when this run's fingerprint (evaluators, "
    "threshold, dataset entries, code, ...) differs from the interrupted one's.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the entries run: this process, or Ray tasks (needs evaltrace[ray]).",
)
@click.option(
    "--address",
    metavar="ADDR",
    help="With --executor ray: the Ray cluster to connect to (default: start a local one).",
)
@click.option(
    "--traces",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Score the traces stored in FILE (JSONL, OTLP-JSON, Phoenix span JSON) with the "
    "--evaluator(s), instead of running dataset files; nothing runs.",
)
@click.option(
    "--evaluator",
    "evaluator_names",
    multiple=True,
    metavar="NAME",
    help="With --traces: an evaluator for every trace (a built-in or registered name, or a "
    "reference such as checks.py:polite); repeat for several.",
)
@click.option(
    "--select",
    type=SelectorType(),
    help=f"With --traces: what to score in each trace: {SELECTOR_HELP} (default root).",
)
@judge_cache_option(
    "Keep judge responses in the SQLite file PATH and answer repeated requests from it "
    "(default: EVALTRACE_JUDGE_CACHE, else a file in the user's cache directory; "
    "`evaltrace cache path` prints it)."
)
@no_judge_cache_option()
@output_format(text="the report", json="each run's result.json content, one per line")
def test(
    paths: Sequence[str],
    entry_filter: str | None,
    verbose: bool,
    concurrency: int,
    timeout: float,
    threshold: float,
    epochs: int | None,
    reducer: str | None,
    output_dir: str,
    baseline: str | None,
    fail_on_regression: Gate | None,
    confidence: float,
    resamples: int,
    statistics_seed: int,
    prices: PriceTable | None,
    exit_zero: bool,
    no_scorecard: bool,
    shard: str | None,
    resume: str | None,
    force: bool,
    executor: str,
    address: str | None,
    traces: str | None,
    evaluator_names: Sequence[str],
    select: str | None,
    judge_cache: str | None,
    no_judge_cache: bool,
    output_format: str,
) -> int:
    """Run the dataset files in PATHS (files, or folders searched for dataset files).

    A folder's dataset files are named *.evaltrace.json, .yaml, .yml or .jsonl.

    Every dataset is checked before anything runs: a file that is invalid, or whose
    references or arguments do not fit, is reported with every problem and exit code 2. Then
    each dataset runs: the app's setup once, the entries concurrently, its teardown once.
    Each run writes OUTPUT_DIR/<run-id>/: result.json, traces.jsonl and scorecard.html (a
    self-contained page of the run to open in a browser; compared with --baseline if given).

    With --traces FILE, the traces stored in FILE are scored instead, one entry per trace,
    by the --evaluator(s), into a results folder of the same kind; a line of FILE that cannot
    be read fails its trace (LOG_FILE_ERROR) and the others are scored.

    Each run's report gives every evaluator's mean score and pass rate with their intervals
    (--confidence, bootstrap with --resamples and --seed). With --baseline, the comparison
    gives per evaluator a verdict (better, worse, no significant change) from paired tests.
    Judge responses are kept in the judge cache (--judge-cache, EVALTRACE_JUDGE_CACHE, or the
    default file) and a request asked again is answered from it, each sample of a repeated
    judge apart; --no-judge-cache asks every judge afresh. The report says what the judges
    spent and what the cache saved.

    Exit codes: 0 every entry passed (or --exit-zero), 1 some entry failed or errored (or, with
    --fail-on-regression, something got significantly worse than the baseline), 2 bad usage
    or an invalid dataset, 130 interrupted (the entries that finished are written).
    """
    # The judge cache is configured for the whole command: closed when its context ends.
    click.get_current_context().with_resource(using_judge_cache(judge_cache, no_judge_cache))
    from evaltrace.datasets import DatasetError, ReferenceLoader, matches_filter, prepare_dataset

    if traces is not None or evaluator_names or select is not None:
        return _test_traces(
            paths,
            traces,
            evaluator_names,
            select,
            entry_filter=entry_filter,
            verbose=verbose,
            concurrency=concurrency,
            timeout=timeout,
            threshold=threshold,
            output_dir=output_dir,
            exit_zero=exit_zero,
            no_scorecard=no_scorecard,
            output_format=output_format,
            statistics=_Statistics(confidence, resamples, statistics_seed),
            prices=prices,
        )
    from evaltrace.results import (
        ResultFileError,
        ResultsFolderError,
        check_writable,
        load_result,
    )

    if force and resume is None:
        raise CommandError("--force goes with --resume DIR (finish a run whose settings differ)")
    if fail_on_regression is not None and baseline is None:
        raise CommandError("--fail-on-regression compares with a baseline: give --baseline RESULT")
    if fail_on_regression not in (None, "any") and not resamples:
        raise CommandError(
            "--fail-on-regression decides by the paired tests, which need --resamples >= 1; "
            "use --fail-on-regression=any to fail on any regression without them"
        )
    statistics = _Statistics(confidence, resamples, statistics_seed)
    options = _scale_options(paths, entry_filter, shard, resume, executor, address, force)
    if resume is not None:
        paths, entry_filter = options.paths, options.entry_filter
    files = dataset_files(paths)
    loader = ReferenceLoader()
    prepared: list[PreparedDataset] = []
    problems = []
    for file in files:
        try:
            prepared.append(prepare_dataset(file, loader=loader))
        except DatasetError as exc:
            problems += exc.problems
    if problems:
        raise CommandError(str(DatasetError(problems)))
    chosen = []
    for item in prepared:
        if any(matches_filter(entry, entry_filter) for entry in item.dataset.entries):
            chosen.append(item)
        else:
            err(f"evaltrace test: {item.dataset.source}: no entry matches -k {entry_filter!r}")
    if not chosen:
        raise CommandError(
            f"-k {entry_filter!r} matches no entry of {_count(prepared, 'dataset')}; it selects "
            "entries whose name or description contains it (ignoring case)"
        )
    old: RunResult | None = None
    if baseline is not None:
        try:
            old = load_result(baseline)
        except ResultFileError as exc:
            raise CommandError(f"--baseline: {exc}") from None
    try:
        parent = check_writable(output_dir)
    except ResultsFolderError as exc:
        raise CommandError(f"--output-dir: {exc}") from None

    runs = _Runs(chosen, parent, baseline=old, scorecard=not no_scorecard, threshold=threshold)
    interrupted = runs.run(
        entry_filter=entry_filter,
        concurrency=concurrency,
        timeout=timeout or None,
        threshold=threshold,
        epochs=epochs,
        reducer=_reducer(reducer),
        scale=options,
        verbose=verbose,
        statistics=statistics,
        prices=prices,
    )
    folders = [
        Path(resume) if resume is not None else Path(output_dir) / result.run_id
        for result in runs.results
    ]
    _print_results(runs.results, folders, output_format=output_format, verbose=verbose)
    for result, folder in zip(runs.results, folders, strict=True):
        sink = runs.sinks.get(result.run_id)
        page = None
        if not no_scorecard:
            writer = sink.page_writer() if sink is not None else None
            page = _scorecard(folder, old, writer, runs.compared(result))
        if output_format == "text":
            out(f"results: {folder} ({result.name})")
            if page is not None:
                out(f"scorecard: {page}")
    runs.close()
    regressions = _compare(
        old,
        [runs.compared(result) for result in runs.results],
        output_format=output_format,
        verbose=verbose,
        statistics=statistics,
        gate=fail_on_regression,
    )
    if interrupted:
        err(f"evaltrace test: interrupted; what finished is in {runs.last_folder}")
        return INTERRUPTED
    if runs.write_error is not None:
        raise CommandError(str(runs.write_error))
    failed = not all(result.passed for result in runs.results)
    return 0 if exit_zero else int(failed or regressions)


def _test_traces(
    paths: Sequence[str],
    traces: str | None,
    evaluator_names: Sequence[str],
    select: str | None,
    *,
    entry_filter: str | None,
    verbose: bool,
    concurrency: int,
    timeout: float,
    threshold: float,
    output_dir: str,
    exit_zero: bool,
    no_scorecard: bool,
    output_format: str,
    statistics: _Statistics,
    prices: PriceTable | None,
) -> int:
    """``evaltrace test --traces FILE --evaluator NAME``: score a stored trace file."""
    import anyio

    from evaltrace.datasets import DatasetError, resolve_evaluator_names
    from evaltrace.engine import run_traces, traces_to_score
    from evaltrace.results import ResultsFolderError, check_writable, new_run_id

    if traces is None:
        raise CommandError("--evaluator and --select go with --traces FILE (a stored trace file)")
    if paths:
        raise CommandError("give dataset PATHS or --traces FILE, not both")
    if entry_filter is not None:
        raise CommandError("-k selects dataset entries; it does not go with --traces")
    if not evaluator_names:
        raise CommandError("--traces needs an --evaluator (e.g. --evaluator ExactMatch)")
    if not Path(traces).exists():
        raise CommandError(f"--traces: {traces}: no such file")
    try:
        evaluators = resolve_evaluator_names(evaluator_names)
    except DatasetError as exc:
        raise CommandError(str(exc)) from None
    try:  # before anything is written: a file holding no span is refused
        file = traces_to_score(traces)
    except (OSError, EvaltraceError) as exc:
        raise CommandError(f"--traces: {printable(str(exc))}") from None
    try:
        parent = check_writable(output_dir)
    except ResultsFolderError as exc:
        raise CommandError(f"--output-dir: {exc}") from None
    run_id = new_run_id()
    sink = _Sink(threshold=threshold, baseline=None, scorecard=not no_scorecard, prices=prices)
    try:
        result = anyio.run(
            lambda: run_traces(
                file,
                evaluators,
                from_trace=selector(select) if select is not None else None,
                concurrency=concurrency,
                timeout=timeout or None,
                threshold=threshold,
                output_dir=parent,
                progress=True,
                run_id=run_id,
                keep_entries=_listing(verbose),
                confidence=statistics.confidence,
                resamples=statistics.resamples,
                statistics_seed=statistics.seed,
                prices=prices,
                observers=[sink.observe],
            )
        )
    except KeyboardInterrupt:
        sink.close()
        err(f"evaltrace test: interrupted; what finished is in {parent / run_id}")
        return INTERRUPTED
    except (OSError, EvaltraceError) as exc:
        sink.close()
        raise CommandError(f"--traces: {printable(str(exc))}") from None
    folder = Path(output_dir) / result.run_id  # as the user named it, like a dataset run's
    _print_results([result], [folder], output_format=output_format, verbose=verbose)
    page = None if no_scorecard else _scorecard(folder, None, sink.page_writer(), result)
    sink.close()
    if output_format == "text":
        out(f"results: {folder} ({result.name})")
        if page is not None:
            out(f"scorecard: {page}")
    return 0 if exit_zero or result.passed else 1


def _reducer(name: str | None) -> str | None:
    """``--reducer``, checked against the registry of reducers."""
    if name is None:
        return None
    from evaltrace.judges import build_aggregation_strategy

    try:
        build_aggregation_strategy(name)
    except (ValueError, TypeError) as exc:
        raise CommandError(f"--reducer: {exc}") from None
    return name


def _listing(verbose: bool) -> Listing:
    """What a run keeps for its report: every entry with ``-v``, else those it lists."""
    from evaltrace.engine import Listing
    from evaltrace.results.report import ALL_ROWS_UP_TO, MAX_LISTED_ENTRIES

    if verbose:
        return Listing(all_up_to=sys.maxsize, failing_up_to=None)
    return Listing(all_up_to=ALL_ROWS_UP_TO, failing_up_to=MAX_LISTED_ENTRIES)


class _Runs:
    """The runs of one invocation, one dataset after the other in one event loop."""

    def __init__(
        self,
        datasets: list[PreparedDataset],
        parent: Path,
        *,
        baseline: RunResult | None,
        scorecard: bool,
        threshold: float,
    ) -> None:
        self.datasets = datasets
        self.parent = parent
        self.results: list[RunResult] = []
        self.last_folder: Path | None = None
        self.write_error: Exception | None = None
        self.baseline = baseline
        self.scorecard = scorecard
        self.threshold = threshold
        self.sinks: dict[str, _Sink] = {}
        """Each run's scorecard and compared entries, by run id (none for a resumed run)."""

    def compared(self, result: RunResult) -> RunResult:
        """``result`` with the entries the comparison with the baseline reads."""
        sink = self.sinks.get(result.run_id)
        return result if sink is None else sink.compared(result)

    def close(self) -> None:
        """Remove the runs' temporary scorecard rows."""
        for sink in self.sinks.values():
            sink.close()

    def run(
        self,
        *,
        entry_filter: str | None,
        concurrency: int,
        timeout: float | None,
        threshold: float,
        epochs: int | None,
        reducer: str | None,
        scale: _ScaleOptions,
        verbose: bool,
        statistics: _Statistics,
        prices: PriceTable | None,
    ) -> bool:
        """Run every dataset; whether Ctrl-C interrupted the runs.

        Each run keeps only the entries its report lists (they all stream to its folder),
        its scorecard's rows and, with a baseline, what the comparison reads of each entry;
        its result counts the statuses of every entry.
        """
        import anyio

        from evaltrace.datasets import run_dataset
        from evaltrace.results import (
            ResultFileError,
            ResultsFolderError,
            ResumeError,
            RunFolderBusyError,
            load_result,
            new_run_id,
        )

        async def run_all() -> None:
            for item in self.datasets:
                run_id = new_run_id()
                self.last_folder = scale.resume or self.parent / run_id
                observers = []
                if scale.resume is None:  # a resumed run's earlier entries are in its folder
                    sink = self.sinks[run_id] = _Sink(
                        threshold=self.threshold,
                        baseline=self.baseline,
                        scorecard=self.scorecard,
                        prices=prices,
                    )
                    observers.append(sink.observe)
                try:
                    result = await run_dataset(
                        item,
                        concurrency=concurrency,
                        timeout=timeout,
                        output_dir=self.parent,
                        entry_filter=entry_filter,
                        threshold=threshold,
                        epochs=epochs,
                        reducer=reducer,
                        progress=True,
                        run_id=run_id,
                        shard=scale.shard,
                        resume=scale.resume,
                        executor=scale.executor,
                        keep_entries=_listing(verbose),
                        force=scale.force,
                        confidence=statistics.confidence,
                        resamples=statistics.resamples,
                        statistics_seed=statistics.seed,
                        prices=prices,
                        observers=observers,
                    )
                except ResultsFolderError as exc:  # written in part: report what was
                    self.write_error = exc
                    try:
                        result = load_result(self.last_folder)
                    except ResultFileError:
                        continue
                self.results.append(result)

        try:
            anyio.run(run_all)
        except (ResumeError, RunFolderBusyError) as exc:  # refused before it changed anything
            raise CommandError(f"--resume: {exc}") from None
        except KeyboardInterrupt:
            if self.last_folder is not None:
                try:
                    self.results.append(load_result(self.last_folder))
                except ResultFileError:
                    pass  # interrupted before its folder was made: nothing of it finished
            return True
        return False


class _Sink:
    """What ``evaltrace test`` gathers of one run as each entry finishes, never read back.

    The scorecard's rows (written at once to its :class:`~evaltrace.results.ScorecardWriter`)
    and, with a baseline, each entry without its inputs, outputs, trace and details: what the
    comparison reads.
    """

    def __init__(
        self,
        *,
        threshold: float,
        baseline: RunResult | None,
        scorecard: bool,
        prices: PriceTable | None,
    ) -> None:
        from evaltrace.llm.prices import resolve_prices
        from evaltrace.results import ScorecardWriter

        self.writer: ScorecardWriter | None = (
            ScorecardWriter(threshold=threshold, baseline=baseline, prices=resolve_prices(prices))
            if scorecard
            else None
        )
        self.entries: list[EntryResult] | None = [] if baseline is not None else None
        self.traces_elsewhere = False
        """Whether an entry was scored in another process (Ray): its trace came back as
        lines of traces.jsonl, so the page is built from the folder."""

    def observe(self, scored: Scored, done: int, total: int) -> None:
        entry = scored.result
        if scored.lines is not None and not scored.roots:
            self.traces_elsewhere = True
        if self.writer is not None and not self.traces_elsewhere:
            self.writer.add_entry(entry, trace=scored.roots)
        if self.entries is not None:
            self.entries.append(_compared_entry(entry))

    def page_writer(self) -> ScorecardWriter | None:
        """The writer holding the page's rows (``None``: build the page from the folder)."""
        return None if self.traces_elsewhere else self.writer

    def compared(self, result: RunResult) -> RunResult:
        """``result`` holding every entry as the comparison reads it."""
        if self.entries is None:
            return result
        entries = sorted(self.entries, key=lambda entry: entry.index)
        return result.model_copy(update={"entries": entries})

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _compared_entry(entry: EntryResult) -> EntryResult:
    """What the comparison with a baseline reads of an entry: names, statuses, scores."""
    return entry.model_copy(
        update={
            "input": None,
            "eval_input": [],
            "output": None,
            "eval_output": None,
            "eval_metadata": None,
            "trace_ids": [],
            "components": {},
            "evaluations": [
                evaluation.model_copy(update={"details": {}}) for evaluation in entry.evaluations
            ],
        }
    )


@dataclass(frozen=True)
class _Statistics:
    """--confidence, --resamples and --seed."""

    confidence: float
    """The confidence level of the intervals."""
    resamples: int
    """The bootstrap's resamples (0: none)."""
    seed: int
    """Their seed."""


@dataclass(frozen=True, kw_only=True)
class _ScaleOptions:
    """--shard, --resume and --executor, checked."""

    paths: Sequence[str]
    """The dataset files (for --resume without any: the one the run recorded)."""
    entry_filter: str | None
    """-k (for --resume without it: the one the run recorded)."""
    shard: Shard | None = None
    """The shard to run."""
    resume: Path | None = None
    """The folder of the run to finish."""
    force: bool = False
    """Resume even when the fingerprints differ."""
    executor: Executor | None = None
    """Where the entries run (None: this process)."""


def _scale_options(
    paths: Sequence[str],
    entry_filter: str | None,
    shard: str | None,
    resume: str | None,
    executor: str,
    address: str | None,
    force: bool,
) -> _ScaleOptions:
    from evaltrace.datasets import RayExecutor, Shard, ShardSpecError
    from evaltrace.errors import MissingExtraError
    from evaltrace.results import ResultFileError, read_run_header

    chosen_shard = None
    if shard is not None:
        try:
            chosen_shard = Shard.parse(shard)
        except ShardSpecError as exc:
            raise CommandError(f"--shard: {exc}") from None
    if address is not None and executor != "ray":
        raise CommandError("--address is the address of a Ray cluster: give --executor ray too")
    runner: Executor | None = None
    if executor == "ray":
        try:
            runner = RayExecutor(address=address)
        except MissingExtraError as exc:
            raise CommandError(f"--executor ray: {exc}") from None
    if resume is None:
        return _ScaleOptions(
            paths=paths, entry_filter=entry_filter, shard=chosen_shard, executor=runner
        )
    try:
        started = read_run_header(resume)
    except ResultFileError as exc:
        raise CommandError(f"--resume: {exc}") from None
    selection = started.selection
    if not paths:
        if started.source is None:
            raise CommandError(
                f"--resume: the run in {resume} records no dataset file; give it as PATHS"
            )
        recorded = Path(started.source).resolve()
        if not recorded.is_relative_to(Path.cwd().resolve()):
            # A results folder is data: the code it leads to must be the user's own choice.
            raise CommandError(
                f"--resume: the run in {resume} was made from {started.source}, outside the "
                "current folder; give that dataset file as PATHS to resume it"
            )
        paths = [started.source]
    if len(dataset_files(paths)) != 1:
        raise CommandError("--resume finishes one run: give one dataset file (or none)")
    if selection is not None:
        if entry_filter is None:
            entry_filter = selection.entry_filter
        if chosen_shard is None and selection.shards > 1:
            chosen_shard = Shard(selection.shard, selection.shards)
    return _ScaleOptions(
        paths=paths,
        entry_filter=entry_filter,
        shard=chosen_shard,
        resume=Path(resume),
        executor=runner,
        force=force,
    )


def _scorecard(
    folder: Path, baseline: RunResult | None, writer: ScorecardWriter | None, result: RunResult
) -> Path | None:
    """Write the run's scorecard.html; a failure to write it is reported, never fatal.

    From the rows its writer gathered as the run went; a resumed run's (whose earlier
    entries are in its folder only) from the folder.
    """
    from evaltrace.results import SCORECARD_FILE, write_scorecard

    try:
        if writer is not None:
            return writer.write(folder / SCORECARD_FILE, result)
        return write_scorecard(folder, baseline=baseline)
    except (OSError, EvaltraceError) as exc:
        err(f"evaltrace test: the scorecard of {folder} was not written: {printable(str(exc))}")
        return None


def _print_results(
    results: list[RunResult], folders: list[Path], *, output_format: str, verbose: bool
) -> None:
    from evaltrace.results import ENTRIES_FILE, print_report, scan_entries, write_result_line

    if output_format == "json":
        # Each entry's line is copied from the folder's entries.jsonl, as result.json's are:
        # no entry is parsed again or held.
        for result, folder in zip(results, folders, strict=True):
            write_result_line(sys.stdout, result, scan_entries([folder / ENTRIES_FILE]))
        return
    print_report(results, verbose=verbose)


def _compare(
    old: RunResult | None,
    results: list[RunResult],
    *,
    output_format: str,
    verbose: bool,
    statistics: _Statistics,
    gate: Gate | None,
) -> bool:
    """Print the comparison with the baseline; whether it fails ``gate``."""
    if old is None:
        return False
    from evaltrace.results import diff_results, print_diff

    matching = [result for result in results if result.name == old.name]
    if not matching and len(results) == 1:
        matching = results
    if not matching:
        err(
            f"evaltrace test: the baseline is a run of {old.name!r}; no dataset of that name "
            "ran, so nothing is compared"
        )
        return False
    regressions = False
    for result in matching:
        diff = diff_results(
            old,
            result,
            level=gate_level(gate),
            confidence=statistics.confidence,
            resamples=statistics.resamples,
            seed=statistics.seed,
        )
        regressions = regressions or gate_fails(diff, gate)
        print_diff(
            diff, file=sys.stderr if output_format == "json" else sys.stdout, verbose=verbose
        )
    return regressions


def _count(items: Sequence[object], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
