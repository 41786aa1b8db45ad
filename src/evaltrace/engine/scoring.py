"""One entry, run (or read) and scored into its saved result: :func:`score`.

Every way of running scores its entries here: a live run of the app under its own capture, a
stored trace read back, or a test case that carries its output already. The selector picks
what to score from the trace, the entry's evaluators score it concurrently (each under the
timeout, failures as data), and :func:`entry_result` builds the saved
:class:`~evaltrace.results.EntryResult` (the one place it is built). Nothing here raises but a
cancellation of the run: a runnable that raises, a selector that finds nothing, a stored
trace that cannot be read, an evaluator that hangs are each the entry's error, and no entry
ends with fewer evaluations than evaluators.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import types
from collections.abc import Coroutine, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio

from evaltrace.capture import conventions as conv
from evaltrace.concurrency import StrayCancellationError, is_stray_cancellation
from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.engine.entries import Entry
from evaltrace.engine.runs import EntryPoint, RunOutcome, run_captured
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.criteria import passing_at
from evaltrace.evals.evaluable import UNSET, Evaluable, Unset, json_value, saved_value
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import PreparedEvaluator, evaluate_prepared
from evaltrace.evals.selectors import TraceSelector, root
from evaltrace.evals.telemetry import export_evaluations
from evaltrace.judges.strategies import (
    BaseJudgeAggregator,
    NoValidJudgeResultsError,
    build_aggregation_strategy,
)
from evaltrace.llm.calls import ModelUsage, add_model_usage, app_model_usage
from evaltrace.llm.prices import PriceTable, using_prices
from evaltrace.llm.samples import judge_epoch
from evaltrace.llm.usage import JudgeUsage, add_judge_usage, collect_judge_usage
from evaltrace.results.model import CompletionStatus, EntryResult, EpochResult, entry_status
from evaltrace.trace import ObservationNode, SpanRecord, SpanView, TraceFileProblem, walk_trace

__all__ = [
    "Scored",
    "entry_result",
    "failed_entry",
    "score",
    "scoring_run",
    "trace_file_error",
    "with_case",
]

_PROBLEMS_QUOTED: Final = 3
"""How many problems of a stored trace its error quotes."""


class Scored:
    """One entry, scored: what it gave, and what its run left in memory.

    Its saved result (:attr:`result`) is built when first asked for: a run that keeps no
    entry and writes no folder (``evaluate_inputs``) builds none it does not use
    (bench_runner.py: the runner's overhead against pydantic-evals).
    """

    __slots__ = (
        "_duration_s",
        "_result",
        "_status",
        "entry",
        "error",
        "evaluable",
        "evaluations",
        "judge_usage",
        "lines",
        "others",
        "roots",
        "run",
        "threshold",
        "usage",
    )

    def __init__(
        self,
        *,
        entry: Entry | None,
        result: EntryResult | None = None,
        evaluations: list[Evaluation] | None = None,
        error: EvaluationError | None = None,
        evaluable: Evaluable | None = None,
        run: RunOutcome | None = None,
        roots: Sequence[ObservationNode] = (),
        lines: Sequence[str] | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        judge_usage: Mapping[str, JudgeUsage] | None = None,
        usage: Mapping[str, ModelUsage] | None = None,
        duration_s: float | None = None,
    ) -> None:
        if result is not None:
            evaluations, error = result.evaluations, result.error
            judge_usage, usage = result.judge_usage, result.usage
        elif entry is None or evaluations is None:
            raise ValueError("a scored entry is given its result, or its entry and evaluations")
        self.entry = entry
        """The entry (``None`` for one scored in another process, handed back as data)."""
        self._result = result
        self._status: CompletionStatus | None = None
        self._duration_s = duration_s
        self.evaluations: list[Evaluation] = evaluations
        """One evaluation per evaluator, in their order."""
        self.error = error
        """What failed before the evaluators ran, if anything."""
        self.evaluable = evaluable
        """What the evaluators scored (``None`` when nothing could be)."""
        self.run = run
        """The run of the app, with its live capture (``None`` when nothing ran here)."""
        self.roots = roots
        """The trace scored (the run's, or the stored one)."""
        self.lines = lines
        """Its spans as lines of ``traces.jsonl``, when it was scored in another process."""
        self.threshold = threshold
        """The score that passes, for the status."""
        self.judge_usage: Mapping[str, JudgeUsage] = judge_usage or _NO_JUDGE_USAGE
        """What its evaluators' judge calls spent, by model."""
        self.usage: Mapping[str, ModelUsage] = usage or _NO_USAGE
        """The app's model calls, by model."""
        self.others: Sequence[RunOutcome] = ()
        """The other runs of an entry run several times (their captures, to release)."""

    @property
    def index(self) -> int:
        """The entry's position in the run (the index of its saved result)."""
        return self.entry.index if self.entry is not None else self.result.index

    @property
    def result(self) -> EntryResult:
        """Its saved result, built on first use."""
        if self._result is None:
            assert self.entry is not None
            self._result = entry_result(
                self.entry,
                evaluations=self.evaluations,
                error=self.error,
                evaluable=self.evaluable,
                run=self.run,
                roots=self.roots,
                threshold=self.threshold,
                judge_usage=self.judge_usage,
                usage=self.usage,
                status=self._status,
            )
        return self._result

    @result.setter
    def result(self, value: EntryResult) -> None:
        self._result = value
        self._status = None
        self.evaluations = value.evaluations
        self.error = value.error
        self.judge_usage = value.judge_usage
        self.usage = value.usage

    @property
    def duration_s(self) -> float:
        """The app's wall time (0 when it did not run), without building the saved result."""
        if self._result is not None:
            return self._result.duration_s
        if self.run is not None:
            return self.run.duration_s
        if self._duration_s is not None:
            return self._duration_s
        return (_duration(self.entry) or 0.0) if self.entry is not None else 0.0

    @property
    def status(self) -> CompletionStatus:
        """How the entry ended (without building its saved result), worked out once."""
        if self._result is not None:
            return self._result.status
        if self._status is None:
            self._status = entry_status(self.evaluations, self.error, threshold=self.threshold)
        return self._status

    def spans(self) -> Iterator[SpanRecord | str]:
        """Its spans, as records or as lines already encoded.

        None of a stored trace whose parent links loop: the run's ``traces.jsonl`` must read
        back as a sound trace file (the entry says why it was not scored).
        """
        if self.lines is not None:
            yield from self.lines
            return
        stored = self.entry.trace if self.entry is not None else None
        if stored is not None and stored.cycles:
            return
        for node in walk_trace(self.roots):  # the tree holds each span as a record already
            yield node.span.record

    def release(self) -> None:
        """Drop the run's capture (its spans), once they are written."""
        if self.run is not None:
            self.run.handler.clear()
        for run in self.others:
            run.handler.clear()


_NO_JUDGE_USAGE: Final[Mapping[str, JudgeUsage]] = types.MappingProxyType({})
_NO_USAGE: Final[Mapping[str, ModelUsage]] = types.MappingProxyType({})


@dataclass(frozen=True, kw_only=True, slots=True)
class Scoring:
    """What every entry of a run shares when it is scored."""

    runnable: EntryPoint | None
    """The app (``None`` when no entry runs)."""
    from_trace: TraceSelector | None
    """The selector; ``None`` for :func:`evaltrace.root`."""
    timeout: float | None
    """Seconds allowed for each run and each evaluation."""
    threshold: float
    """The score that passes."""
    run_id: str
    """The run's id, given to evaluators."""
    attributes: Mapping[str, Any]
    """The run's attributes, given to evaluators."""
    epochs: int = 1
    """How many times each entry that runs is run."""
    reducer: BaseJudgeAggregator | None = None
    """How an entry's runs are reduced (with ``epochs`` above 1)."""
    prices: PriceTable | None = None
    """The run's price table, for the checks that price the app's calls (``max-cost``)."""


@contextlib.contextmanager
def scoring_run(scoring: Scoring) -> Iterator[None]:
    """What the evaluators of every entry read of their run, set around a worker's entries.

    An evaluator that stops once its verdict is settled reads the run's threshold
    (:func:`~evaltrace.evals.pass_threshold`); a check that prices the app's calls, its
    price table (:func:`~evaltrace.llm.current_prices`). Both are the run's, the same for
    every entry: set once per worker, not around each entry (bench_runner.py: the two
    context managers were about 6% of an entry's CPU, bench/README.md).
    """
    with passing_at(scoring.threshold), using_prices(scoring.prices):
        yield


async def score(entry: Entry, scoring: Scoring) -> Scored:
    """Run (or read) ``entry`` and score it; never raises but for a cancellation of the run.

    Called inside :func:`scoring_run` of ``scoring``.
    """
    try:
        if scoring.epochs > 1 and entry.trace is None:
            return await _score_epochs(entry, scoring)
        return await _score(entry, scoring)
    except Exception as exc:  # a failure outside any evaluator still errors only its entry
        error = EvaluationError.from_exception(exc, where="runner")
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        stray = StrayCancellationError(f"scoring {entry.label}")
        stray.__cause__ = exc
        error = EvaluationError.from_exception(stray, where="runner")
    return Scored(entry=entry, result=failed_entry(entry, error, threshold=scoring.threshold))


async def _score(entry: Entry, scoring: Scoring) -> Scored:
    case = entry.case
    run: RunOutcome | None = None
    roots: Sequence[ObservationNode] = ()
    error: EvaluationError | None = None
    evaluable: Evaluable | None = None
    if entry.trace is not None:
        roots = entry.trace.roots
        if not entry.trace.complete:
            error = trace_file_error(entry.trace.problems)
    elif case is not None and case.eval_output is not None:
        evaluable = case  # carries its output: scored as it is, nothing runs
    else:
        assert scoring.runnable is not None, "a source of entries to run names its runnable"
        inputs = entry.inputs()
        run = await run_captured(
            scoring.runnable,
            entry.input,
            inputs=inputs,
            entry=entry.label if inputs is not None else None,  # quoted about missing inputs
            timeout=scoring.timeout,
        )
        roots = run.trace
        if run.error is not None:
            error = EvaluationError.from_exception(run.error, where="runnable")
    prepared = entry.evaluators.prepared
    if error is None and evaluable is None and prepared:
        try:
            evaluable = with_case((scoring.from_trace or root)(roots), case)
        except Exception as exc:  # a selector that finds nothing is reported per entry
            error = EvaluationError.from_exception(exc, where="from_trace")
    judge_usage: dict[str, JudgeUsage] | None = None
    duration: float | None = None  # a stored trace's, read once
    if error is not None:
        evaluations = [Evaluation.errored(error, evaluator=n) for n in entry.evaluators.names]
    elif evaluable is None:
        evaluations = []  # nothing scores it (a pipeline's input): saved as it ran
    else:
        if run is None:
            duration = _duration(entry)
        ctx = EvaluatorContext(
            evaluable=evaluable,
            trace=roots if roots or run is not None else None,
            entry_name=entry.name,
            entry_index=entry.index,
            run_id=scoring.run_id,
            attributes=scoring.attributes,
            duration_s=run.duration_s if run is not None else duration,
        )
        # The entry's judge calls are counted apart from every other entry's.
        with collect_judge_usage() as judges:
            evaluations = await evaluate_all(
                prepared, ctx, scoring.timeout, label=entry, names=entry.evaluators.names
            )
        judge_usage = judges.usage()
    if roots:
        export_evaluations(evaluations, roots, threshold=scoring.threshold)
    return Scored(
        usage=app_model_usage(roots) if roots else None,
        entry=entry,
        evaluations=evaluations,
        error=error,
        evaluable=evaluable,
        run=run,
        roots=roots,
        threshold=scoring.threshold,
        judge_usage=judge_usage,
        duration_s=duration,
    )


async def _score_epochs(entry: Entry, scoring: Scoring) -> Scored:
    """Run ``entry`` ``scoring.epochs`` times, each run scored on its own, then reduce.

    Each evaluator's evaluations of the runs are reduced to one by the run's reducer (the
    strategies of repeated judging); the runs are kept in the saved entry's ``epochs``.
    Each run's judge calls are that epoch's samples (:func:`~evaltrace.llm.judge_epoch`):
    the judge cache keeps them apart, so K epochs judge K times on every run of a suite.
    """
    runs = []
    for number in range(scoring.epochs):
        # The k-th run's judge calls are the k-th samples: a judge cache answers each run
        # with its own response, not the first run's again.
        with judge_epoch(number):
            runs.append(await _score(entry, scoring))
    reducer = scoring.reducer or build_aggregation_strategy("mean")
    reduced = [
        _reduce([run.evaluations[position] for run in runs], name, reducer)
        for position, name in enumerate(entry.evaluators.names)
    ]
    first = runs[0].result
    judge_usage: dict[str, JudgeUsage] = {}
    usage: dict[str, ModelUsage] = {}
    for run in runs:  # every run's model and judge calls were made, and spent
        judge_usage = add_judge_usage(judge_usage, run.judge_usage)
        usage = add_model_usage(usage, run.usage)
    errors = [run.error for run in runs]
    error = errors[0] if all(item is not None for item in errors) else None
    epochs = [
        EpochResult(
            epoch=number,
            output=run.result.output,
            evaluations=run.evaluations,
            error=run.error,
            status=run.status,
            duration_s=run.result.duration_s,
            trace_ids=run.result.trace_ids,
        )
        for number, run in enumerate(runs)
    ]
    result = first.model_copy(
        update={
            "evaluations": reduced,
            "error": error,
            "status": entry_status(reduced, error, threshold=scoring.threshold),
            "duration_s": sum(epoch.duration_s for epoch in epochs) / len(epochs),
            "trace_ids": [trace_id for epoch in epochs for trace_id in epoch.trace_ids],
            "epochs": epochs,
            "judge_usage": judge_usage,
            "usage": usage,
        }
    )
    scored = Scored(
        entry=entry,
        result=result,
        evaluable=runs[0].evaluable,
        run=runs[0].run,
        roots=[root for run in runs for root in run.roots],
        threshold=scoring.threshold,
    )
    scored.others = [run.run for run in runs[1:] if run.run is not None]
    return scored


def _reduce(evaluations: list[Evaluation], name: str, reducer: BaseJudgeAggregator) -> Evaluation:
    """One evaluator's evaluations of an entry's runs, reduced to one."""
    try:
        reduced = reducer.aggregate(evaluations, len(evaluations))
    except NoValidJudgeResultsError:  # every run errored: the first one's error stands
        return evaluations[0].model_copy(update={"evaluator": name})
    return reduced.model_copy(update={"evaluator": name})


def _duration(entry: Entry) -> float | None:
    if entry.trace is None or not entry.trace.roots:
        return None
    return entry.trace.roots[0].span.duration_ms / 1000


def entry_result(
    entry: Entry,
    *,
    evaluations: list[Evaluation],
    error: EvaluationError | None,
    evaluable: Evaluable | None = None,
    run: RunOutcome | None = None,
    roots: Sequence[ObservationNode] = (),
    threshold: float,
    judge_usage: Mapping[str, JudgeUsage] | None = None,
    usage: Mapping[str, ModelUsage] | None = None,
    status: CompletionStatus | None = None,
) -> EntryResult:
    """The saved result of ``entry``: what it was given, what it produced, how it scored.

    Args:
        entry: The entry.
        evaluations: One evaluation per evaluator, in their order.
        error: What failed before the evaluators ran (the runnable, the selector, the stored
            trace, the runnable's ``setup``), if anything.
        evaluable: What the evaluators scored.
        run: The run of the app, if it ran here.
        roots: The trace scored.
        threshold: The score that passes, for the status.
        judge_usage: What its evaluators' judge calls spent, by model.
        usage: The app's model calls (read from ``roots``), by model.
        status: Its status, when worked out already (from ``evaluations``, ``error`` and
            ``threshold``).
    """
    case = evaluable if evaluable is not None else entry.case
    fields: dict[str, Any] = {
        "index": entry.index,
        "name": entry.name if entry.name is not None else str(entry.index),
        "evaluations": evaluations,
        "error": error,
        "status": (
            status if status is not None else entry_status(evaluations, error, threshold=threshold)
        ),
    }
    if judge_usage:
        fields["judge_usage"] = dict(judge_usage)
    if usage:
        fields["usage"] = dict(usage)
    if run is not None:
        span = _run_span(roots)
        fields.update(
            # The run's root span holds its input and output encoded already: each is
            # encoded once, by the capture codec, on its way to the saved result.
            input=span.input if span is not None else saved_value(entry.input),
            output=span.output if span is not None else saved_value(run.output),
            started_at=run.started_at,
            duration_s=run.duration_s,
            trace_ids=[f"{trace_id:032x}" for trace_id in run.handler.trace_ids],
        )
    elif entry.trace is not None:
        if roots:
            top = roots[0].span
            fields.update(
                description=top.name,
                input=top.input,
                output=top.output,
                started_at=top.started_at,
                duration_s=top.duration_ms / 1000,
                trace_ids=_trace_ids(roots),
            )
        elif entry.trace.trace_id:
            fields["trace_ids"] = [entry.trace.trace_id]
    elif entry.input is not None:
        fields["input"] = saved_value(entry.input)
    if case is not None:
        fields.update(
            eval_input=case.eval_input,
            expectation=case.expectation,
            eval_metadata=case.eval_metadata,
        )
        if case.description is not None or "description" not in fields:
            fields["description"] = case.description
        if evaluable is not None:
            fields["eval_output"] = evaluable.eval_output
    if run is None and entry.trace is not None and _checked(fields):
        # A stored trace's values are JSON data decoded from its file: validating them again
        # was a quarter of scoring one (bench_stored.py, bench/README.md).
        for name in ("eval_input", "eval_output"):  # lists of the entry's own, as validated
            if fields.get(name) is not None:
                fields[name] = list(fields[name])
        return EntryResult.from_checked(**fields)
    return EntryResult(**fields)


def _trace_ids(roots: Sequence[ObservationNode]) -> list[str]:
    """The ids of the traces of ``roots``, once each, in order (as 32 hex digits)."""
    if len(roots) == 1:  # a trace of one root, the usual one, without a generator
        return [f"{roots[0].span.trace_id:032x}"]
    return list(dict.fromkeys(f"{node.span.trace_id:032x}" for node in roots))


_JSON_TYPES: Final = (str, int, float, bool, dict, list, type(None))


def _checked(fields: Mapping[str, Any]) -> bool:
    """Whether a stored trace's entry holds only values validation would keep as they are.

    Its input and output are decoded JSON (unless a trace made in memory put something else
    on a span); metadata, which a selector makes, is validated with the entry.
    """
    return (
        fields.get("eval_metadata") is None
        and isinstance(fields.get("input"), _JSON_TYPES)
        and isinstance(fields.get("output"), _JSON_TYPES)
    )


def _run_span(roots: Sequence[ObservationNode]) -> SpanView | None:
    """The root span :func:`~evaltrace.engine.run_captured` made around the run, if found."""
    for node in roots:
        if node.span.attributes.get(conv.RUN_SPAN_ATTRIBUTE) is True:
            return node.span
    return None


def failed_entry(entry: Entry, error: EvaluationError, *, threshold: float) -> EntryResult:
    """The result of an entry that failed before it was scored: every evaluation errored.

    For a runnable whose ``setup`` raised, and a failure outside any evaluator.
    """
    evaluations = [Evaluation.errored(error, evaluator=name) for name in entry.evaluators.names]
    return entry_result(entry, evaluations=evaluations, error=error, threshold=threshold)


def trace_file_error(problems: Sequence[TraceFileProblem]) -> EvaluationError:
    """The error of an entry whose stored trace could not be read (``LOG_FILE_ERROR``)."""
    shown = "; ".join(str(problem) for problem in problems[:_PROBLEMS_QUOTED])
    more = len(problems) - _PROBLEMS_QUOTED
    if more > 0:
        shown += f"; and {more} more"
    return EvaluationError(type="TraceFormatError", message=shown, where="trace_file")


def with_case(
    selected: Evaluable, base: Evaluable | None, expected_output: Any = UNSET
) -> Evaluable:
    """What a selector picked, with the test case's inputs, expectation and metadata.

    Args:
        selected: The evaluable a selector built from the trace.
        base: The test case (a dataset entry's), whose named inputs, expectation, metadata and
            description are kept; ``None`` for none.
        expected_output: An expectation that replaces the case's.

    The case's metadata is added to the selector's (a model call's, for instance); where a key
    is in both, the case's value is kept.
    """
    updates: dict[str, Any] = {}
    if base is not None:
        if base.eval_input:
            updates["eval_input"] = list(base.eval_input)
        if base.has_expectation:
            updates["expectation"] = base.expectation
        if base.eval_metadata is not None:
            updates["eval_metadata"] = {**(selected.eval_metadata or {}), **base.eval_metadata}
        if base.description is not None:
            updates["description"] = base.description
    if not isinstance(expected_output, Unset):
        updates["expectation"] = json_value(expected_output)
    return selected.model_copy(update=updates) if updates else selected


async def evaluate_all(
    evaluators: Sequence[PreparedEvaluator],
    ctx: EvaluatorContext,
    timeout: float | None,
    *,
    label: str | Entry,
    names: Sequence[str] | None = None,
) -> list[Evaluation]:
    """Score one entry with each evaluator, concurrently; the results in evaluator order.

    The row never ends short: a failure outside any evaluator (or a cancellation that is not
    one of the caller) errors the evaluations that did not come back, and only a cancellation
    of the caller is raised. ``label`` names the entry in that error (or is the entry, whose
    label is then made only for it). ``names`` are the evaluators' names when known already
    (an entry's plan holds them), else read from ``evaluators``.
    """
    if names is None:
        names = [prepared.name for prepared in evaluators]
    try:
        evaluations = await _evaluate_concurrently(evaluators, ctx, timeout)
    except Exception as exc:  # a failure outside any evaluator still errors only its row
        return _errored_row(exc, names)
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        stray = StrayCancellationError(
            f"scoring {label if isinstance(label, str) else label.label}"
        )
        stray.__cause__ = exc
        return _errored_row(stray, names)
    if len(evaluations) < len(names):
        evaluations += [_missing(name) for name in names[len(evaluations) :]]
    return evaluations


async def _evaluate_concurrently(
    evaluators: Sequence[PreparedEvaluator], ctx: EvaluatorContext, timeout: float | None
) -> list[Evaluation]:
    """The evaluations, each evaluator started concurrently; in evaluator order.

    On asyncio each evaluator starts in this task, in its own copy of the context, so one
    that finishes without waiting (a pure scorer) costs no task: the runner's overhead figure
    of bench/README.md (``bench_runner.py``, 0.43x pydantic-evals) depends on it. The first
    one that has to wait is driven on in this task, so a cancel scope it entered stays in the
    task that entered it, while the evaluators after it start as tasks and wait alongside it.
    Other event loops (trio) get a task per evaluator, in a task group.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another anyio backend (trio)
        return await _evaluate_in_task_group(evaluators, ctx, timeout)
    results: list[Evaluation] = []
    for position, prepared in enumerate(evaluators):
        context = contextvars.copy_context()
        coroutine = evaluate_prepared(prepared, ctx, timeout)
        try:
            awaited = context.run(coroutine.send, None)
        except StopIteration as finished:
            results.append(finished.value)
            continue
        rest = [
            loop.create_task(evaluate_prepared(later, ctx, timeout))
            for later in evaluators[position + 1 :]
        ]
        try:
            results.append(await _drive(coroutine, awaited, context))
            for task in rest:
                results.append(await task)
        except BaseException:  # cancelled: the others must not run on, orphaned
            for task in rest:
                task.cancel()
            raise
        break
    return results


@types.coroutine
def _drive(
    coroutine: Coroutine[Any, Any, Evaluation],
    awaited: Any,
    context: contextvars.Context,
) -> Generator[Any, Any, Evaluation]:
    """Await ``coroutine``, which already ran up to its first wait (on ``awaited``).

    It goes on in the task awaiting this, in ``context``: what the task's event loop sends
    or throws (a cancellation) is passed to it, as ``await`` itself would.
    """
    while True:
        try:
            sent = yield awaited
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # thrown in by the task: a cancellation
            try:
                awaited = context.run(coroutine.throw, exc)
            except StopIteration as finished:
                result: Evaluation = finished.value
                return result
        else:
            try:
                awaited = context.run(coroutine.send, sent)
            except StopIteration as finished:
                result = finished.value
                return result


async def _evaluate_in_task_group(
    evaluators: Sequence[PreparedEvaluator], ctx: EvaluatorContext, timeout: float | None
) -> list[Evaluation]:
    slots: list[Evaluation | None] = [None] * len(evaluators)

    async def one(position: int) -> None:
        slots[position] = await evaluate_prepared(evaluators[position], ctx, timeout)

    async with anyio.create_task_group() as group:
        for position in range(len(evaluators)):
            group.start_soon(one, position)
    return [slot if slot is not None else _missing(None) for slot in slots]


def _missing(name: str | None) -> Evaluation:
    """The result standing in for an evaluation that never came back (never a pass)."""
    return Evaluation.errored(
        EvaluationError(
            type="MissingEvaluation",
            message="no result came back for this evaluator; the input counts as failed",
            where="runner",
        ),
        evaluator=name,
    )


def _errored_row(error: BaseException, names: Sequence[str]) -> list[Evaluation]:
    """One errored evaluation per evaluator, for a failure outside any evaluator."""
    errored = Evaluation.errored(error, where="runner")
    return [errored.model_copy(update={"evaluator": name}) for name in names]
