"""Running an app under capture and scoring it: ``run_and_evaluate``, ``evaluate_inputs``."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import time
import types
import uuid
from collections.abc import (
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import anyio
import anyio.lowlevel

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.capture import conventions as conv
from evaltrace.capture.context import eval_inputs as _eval_inputs_scope
from evaltrace.capture.wrap import start_span_call
from evaltrace.checks import check_count, check_threshold, check_timeout
from evaltrace.errors import RunnableTimeoutError
from evaltrace.evals.cancellation import StrayCancellationError, is_stray_cancellation
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.evaluable import UNSET, Evaluable, Unset, json_value, saved_value
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import (
    EvaluatorFunction,
    PreparedEvaluator,
    evaluate_prepared,
    is_async_callable,
    prepare_evaluator,
)
from evaltrace.evals.result import EntryResult, entry_status
from evaltrace.evals.selectors import TraceSelector, root
from evaltrace.evals.telemetry import export_evaluations
from evaltrace.evals.worker_threads import run_in_worker_thread
from evaltrace.trace import MemoryTraceHandler, ObservationNode, capture_traces

__all__ = [
    "INPUTS_BETWEEN_CHECKPOINTS",
    "InputResult",
    "RunInput",
    "RunOutcome",
    "checkpoint_now_and_then",
    "evaluate_each",
    "evaluate_inputs",
    "run_and_evaluate",
    "run_captured",
    "score_entry",
    "with_case",
]

logger = logging.getLogger("evaltrace")

_NO_INPUTS: Final = contextlib.nullcontext()
"""The scope of a run given no inputs to serve (one reusable, stateless instance)."""

_NO_ATTRIBUTES: Final[Mapping[str, Any]] = types.MappingProxyType({})


@dataclass(kw_only=True)
class RunOutcome:
    """One run of the runnable under its own capture."""

    output: Any = None
    """What the runnable returned (``None`` if it raised)."""
    error: BaseException | None = None
    """What the runnable raised, if it did (a timeout included)."""
    handler: MemoryTraceHandler
    """The capture of the run: its spans and ``wrap`` values, kept even when it raised."""
    duration_s: float = 0.0
    """Wall time of the run."""
    started_at: datetime | None = None
    """When the run started (UTC)."""

    @property
    def trace(self) -> list[ObservationNode]:
        """The captured trace tree."""
        return self.handler.trace


@dataclass(kw_only=True)
class InputResult:
    """Everything about one input of :func:`assert_pass`: the run, what was scored, results."""

    index: int
    """Position of the input."""
    eval_input: Any
    """The input given to the runnable."""
    evaluable: Evaluable | None
    """What the evaluators scored (``None`` when it could not be built)."""
    evaluations: list[Evaluation] = field(default_factory=list)
    """One result per evaluator, in evaluator order."""
    run: RunOutcome | None = None
    """The run, or ``None`` when the evaluable already carried its output."""

    def to_entry(self, *, name: str | None = None, threshold: float = 0.5) -> EntryResult:
        """This input as saved data: no live capture, only what a report or a diff needs.

        Args:
            name: The entry's name (a dataset entry's ``name``); its position by default.
            threshold: The score an evaluation must reach to pass (for the status).

        Returns:
            The entry, with its status derived from the evaluations and the run's error.
        """
        case = self.evaluable
        run = self.run
        error: EvaluationError | None = None
        if run is not None and run.error is not None:
            error = EvaluationError.from_exception(run.error, where="runnable")
        elif case is None and self.evaluations and self.evaluations[0].error is not None:
            error = self.evaluations[0].error  # the selector found nothing to score
        fields: dict[str, Any] = {
            "index": self.index,
            "name": name if name is not None else str(self.index),
            "input": saved_value(self.eval_input),
            "evaluations": self.evaluations,
            "error": error,
            "status": entry_status(self.evaluations, error, threshold=threshold),
        }
        if case is not None:
            fields.update(
                description=case.description,
                eval_input=case.eval_input,
                eval_output=case.eval_output,
                expectation=case.expectation,
                eval_metadata=case.eval_metadata,
            )
        if run is not None:
            fields.update(
                output=saved_value(run.output),
                started_at=run.started_at,
                duration_s=run.duration_s,
                trace_ids=[f"{trace_id:032x}" for trace_id in run.handler.trace_ids],
            )
        return EntryResult(**fields)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInput:
    """One input of :func:`evaluate_each`: what to run, how to score it, and its name."""

    index: int
    """Its position, kept in the result (:attr:`InputResult.index`)."""
    eval_input: Any
    """The argument given to the runnable."""
    evaluators: Sequence[EvaluatorFunction]
    """Its evaluators. Inputs sharing one list object share its preparation."""
    evaluable: Evaluable | None = None
    """A test case whose named inputs are served during the run and whose expectation and
    metadata are kept."""
    name: str | None = None
    """Its name, given to evaluators (:attr:`EvaluatorContext.entry_name`) and quoted in
    errors; by default the evaluable's ``description``."""


def _runnable_name(runnable: Callable[..., Any]) -> str:
    try:
        name = getattr(runnable, "__name__", None)
    except Exception:  # a hostile __getattr__: the type still names it
        name = None
    return name if isinstance(name, str) and name != "<lambda>" else type_name(runnable)


@dataclass(frozen=True, slots=True)
class _Runnable:
    """The app entry point, with its name and kind worked out once per run."""

    function: Callable[..., Any]
    """The entry point as given."""
    name: str
    """The name of its root span."""
    is_async: bool
    """Whether calling it gives a coroutine (else it runs in a worker thread)."""

    @classmethod
    def of(cls, function: Callable[..., Any]) -> _Runnable:
        return cls(function, _runnable_name(function), is_async_callable(function))

    async def __call__(self, eval_input: Any) -> Any:
        if self.is_async:
            return await self.function(eval_input)
        result = await run_in_worker_thread(functools.partial(self.function, eval_input))
        if inspect.isawaitable(result):
            result = await result
        return result


class _FailableCall(Protocol):
    def fail(self, exc: BaseException) -> None: ...


def _record_failure(call: _FailableCall, error: BaseException) -> None:
    try:
        call.fail(error)
    except Exception:  # recording the error on the span must never replace the error itself
        logger.warning(
            "evaltrace: could not record the runnable's error on its span", exc_info=True
        )


async def run_captured(
    runnable: Callable[..., Any],
    eval_input: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    entry: str | None = None,
    timeout: float | None = None,
) -> RunOutcome:
    """Run ``runnable(eval_input)`` once, under its own capture, inside a root span.

    The root span (named after the runnable) records ``eval_input`` as its input and the
    return value as its output, so an undecorated function is captured too. Sync runnables
    run in a worker thread with the context carried over.

    Args:
        runnable: The app entry point, sync or async, called with one argument.
        eval_input: The argument.
        inputs: Values that ``wrap(..., purpose="input", name=...)`` returns during the run.
        entry: A label of the entry, quoted in errors about missing inputs.
        timeout: Seconds after which the run is stopped and reported as timed out.

    Returns:
        The outcome; the runnable's exception is kept in it, never raised.
    """
    check_timeout(timeout)
    return await _run_captured(
        _Runnable.of(runnable), eval_input, inputs=inputs, entry=entry, timeout=timeout
    )


async def _run_captured(
    runnable: _Runnable,
    eval_input: Any,
    *,
    inputs: Mapping[str, Any] | None,
    entry: str | None,
    timeout: float | None,
) -> RunOutcome:
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    output: Any = None
    error: BaseException | None = None
    name = runnable.name
    scope = _eval_inputs_scope(inputs, entry=entry) if inputs is not None else _NO_INPUTS
    with capture_traces() as handler, scope:
        call = start_span_call(name, "chain", eval_input, {conv.RUN_SPAN_ATTRIBUTE: True})
        call.attach()
        try:
            if timeout is None:
                output = await runnable(eval_input)
            else:
                with anyio.fail_after(timeout):
                    output = await runnable(eval_input)
        except TimeoutError:
            error = RunnableTimeoutError(f"runnable {name!r} did not finish within {timeout:g} s")
            _record_failure(call, error)
        except Exception as exc:  # the app's failure is reported as data
            error = exc
            _record_failure(call, exc)
        except BaseException as exc:
            if not is_stray_cancellation(exc):
                raise
            error = StrayCancellationError(f"runnable {name!r}")
            error.__cause__ = exc
            _record_failure(call, error)
        else:
            call.output(output)
        finally:
            call.detach()
            call.end()
    return RunOutcome(
        output=output,
        error=error,
        handler=handler,
        duration_s=time.perf_counter() - started,
        started_at=started_at,
    )


async def _evaluate_entry(
    evaluators: Sequence[PreparedEvaluator], ctx: EvaluatorContext, timeout: float | None
) -> list[Evaluation]:
    """Score one entry with each evaluator, concurrently; the results in evaluator order.

    The evaluations never raise (failures are data), only a cancellation of the run does.
    On asyncio each evaluator starts in this task, in its own copy of the context, so one
    that finishes without waiting (a pure scorer) costs no task. The first one that has to
    wait is driven on in this task, so a cancel scope it entered stays in the task that
    entered it, while the evaluators after it start as tasks and wait alongside it. Other
    event loops (trio) get a task per evaluator, in a task group.
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


def _complete(outcome: InputResult, names: Sequence[str]) -> None:
    """Make the row hold one evaluation per evaluator, whatever happened to its task."""
    outcome.evaluations = _completed(outcome.evaluations, names)


def _completed(have: list[Evaluation], names: Sequence[str]) -> list[Evaluation]:
    if len(have) < len(names):
        return [*have, *(_missing(name) for name in names[len(have) :])]
    return have


def _errored_row(error: BaseException, names: Sequence[str]) -> list[Evaluation]:
    """One errored evaluation per evaluator, for a failure outside any evaluator."""
    errored = Evaluation.errored(error, where="runner")
    return [errored.model_copy(update={"evaluator": name}) for name in names]


def _stray(exc: BaseException, what: str) -> StrayCancellationError:
    stray = StrayCancellationError(what)
    stray.__cause__ = exc
    return stray


async def score_entry(
    evaluators: Sequence[PreparedEvaluator],
    ctx: EvaluatorContext,
    timeout: float | None,
    *,
    label: str,
) -> list[Evaluation]:
    """Score one entry with each evaluator, as :func:`evaluate_inputs` scores each input.

    The evaluators run concurrently; the row never ends short: a failure outside any
    evaluator (or a cancellation that is not one of the caller) errors the evaluations that
    did not come back, and only a cancellation of the caller is raised.

    Args:
        evaluators: The prepared evaluators (:func:`~evaltrace.evals.evaluator.prepare_evaluator`).
        ctx: What they are given.
        timeout: Seconds allowed for each evaluation.
        label: How a stray cancellation names the entry (``"scoring trace 5b8e..."``).

    Returns:
        One evaluation per evaluator, in their order.
    """
    names = [prepared.name for prepared in evaluators]
    try:
        evaluations = await _evaluate_entry(evaluators, ctx, timeout)
    except Exception as exc:  # a failure outside any evaluator still errors only its row
        return _errored_row(exc, names)
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        return _errored_row(_stray(exc, label), names)
    return _completed(evaluations, names)


def _injected_inputs(evaluable: Evaluable | None) -> dict[str, Any] | None:
    if evaluable is None or not evaluable.eval_input:
        return None
    return {item.name: item.value for item in evaluable.eval_input}


def _evaluable_from_run(
    run: RunOutcome,
    from_trace: TraceSelector | None,
    base: Evaluable | None,
    expected_output: Any,
) -> Evaluable:
    return with_case((from_trace or root)(run.trace), base, expected_output)


def with_case(
    selected: Evaluable, base: Evaluable | None, expected_output: Any = UNSET
) -> Evaluable:
    """What a selector picked, with the test case's inputs, expectation and metadata.

    The case's metadata is added to the selector's (a model call's, for instance); where a key
    is in both, the case's value is kept.

    Args:
        selected: The evaluable a selector built from the trace.
        base: The test case (a dataset entry's), whose named inputs, expectation, metadata and
            description are kept; ``None`` for none.
        expected_output: An expectation that replaces the case's.
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


async def _prepare(
    runnable: _Runnable,
    eval_input: Any,
    *,
    base: Evaluable | None,
    expected_output: Any,
    from_trace: TraceSelector | None,
    timeout: float | None,
    entry: str | None,
) -> tuple[Evaluable | None, RunOutcome | None, Evaluation | None]:
    """Run (unless ``base`` has its output) and build the evaluable; or say why not."""
    if base is not None and base.eval_output is not None:
        if isinstance(expected_output, Unset):
            return base, None, None
        return base.model_copy(update={"expectation": json_value(expected_output)}), None, None
    run = await _run_captured(
        runnable, eval_input, inputs=_injected_inputs(base), entry=entry, timeout=timeout
    )
    if run.error is not None:
        return None, run, Evaluation.errored(run.error, where="runnable")
    try:
        evaluable = _evaluable_from_run(run, from_trace, base, expected_output)
    except Exception as exc:  # a selector that finds nothing is reported per input
        return None, run, Evaluation.errored(exc, where="from_trace")
    return evaluable, run, None


async def run_and_evaluate(
    evaluator: EvaluatorFunction,
    runnable: Callable[..., Any],
    eval_input: Any,
    *,
    expected_output: Any = UNSET,
    from_trace: TraceSelector | None = None,
    timeout: float | None = None,
    evaluable: Evaluable | None = None,
) -> Evaluation:
    """Run ``runnable(eval_input)`` once under capture, then score it with ``evaluator``.

    Args:
        evaluator: A sync or async evaluator.
        runnable: The app entry point (decorated or not), sync or async.
        eval_input: The single argument given to ``runnable``.
        expected_output: The expectation merged into the evaluable.
        from_trace: Selects what to score from the trace; default :func:`evaltrace.root`.
        timeout: Seconds allowed for the run, and again for the evaluator.
        evaluable: A test case whose named inputs are served to ``wrap(..., purpose="input")``
            during the run and whose expectation and metadata are kept.

    Returns:
        The evaluation. If the runnable raised or timed out, it is errored with that error.

    Example:
        >>> import anyio
        >>> def app(question: str) -> str:
        ...     return "4"
        >>> anyio.run(run_and_evaluate, lambda e: e.output_value() == "4", app, "2+2").score
        1.0
    """
    check_timeout(timeout)
    prepared = prepare_evaluator(evaluator)
    built, run, failure = await _prepare(
        _Runnable.of(runnable),
        eval_input,
        base=evaluable,
        expected_output=expected_output,
        from_trace=from_trace,
        timeout=timeout,
        entry=None,
    )
    if failure is not None or built is None:
        assert failure is not None
        return failure.model_copy(update={"evaluator": prepared.name})
    ctx = _context(built, run, entry_name=built.description, entry_index=None, run_id=None)
    evaluation = await evaluate_prepared(prepared, ctx, timeout)
    if run is not None:
        export_evaluations([evaluation], run.trace)
    return evaluation


def _context(
    evaluable: Evaluable,
    run: RunOutcome | None,
    *,
    entry_name: str | None,
    entry_index: int | None,
    run_id: str | None,
    attributes: Mapping[str, Any] = _NO_ATTRIBUTES,
) -> EvaluatorContext:
    return EvaluatorContext(
        evaluable=evaluable,
        trace=run.trace if run is not None else None,
        entry_name=entry_name,
        entry_index=entry_index,
        run_id=run_id,
        attributes=attributes,
        duration_s=run.duration_s if run is not None else None,
    )


async def evaluate_inputs(
    runnable: Callable[..., Any],
    eval_inputs: Sequence[Any],
    evaluators: Sequence[EvaluatorFunction],
    *,
    evaluables: Sequence[Evaluable] | None = None,
    from_trace: TraceSelector | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    on_progress: Callable[[InputResult, int, int], object] | None = None,
    per_input_evaluators: Sequence[Sequence[EvaluatorFunction] | None] | None = None,
    entry_names: Sequence[str | None] | None = None,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    threshold: float = 0.5,
) -> list[InputResult]:
    """Run each input once and score it with every evaluator; never raises for failures.

    The same work as :func:`assert_pass` without the pass criteria: it returns, per input,
    the run (with its trace), what was scored, and one evaluation per evaluator.

    Args:
        runnable: The app entry point, sync or async, called with one input.
        eval_inputs: One argument per run.
        evaluators: Sync or async evaluators.
        evaluables: Optional test cases, one per input.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most inputs in flight at once.
        timeout: Seconds allowed for each run and for each evaluation.
        on_progress: Called as each input finishes, with its result, the number done and the
            total (in the event loop's thread; keep it quick). An exception it raises is
            logged, not propagated.
        per_input_evaluators: One list per input that replaces ``evaluators`` for that input
            (``None`` keeps ``evaluators``): dataset entries may each declare their own.
        entry_names: One name per input (or ``None``), given to evaluators as
            :attr:`EvaluatorContext.entry_name` and quoted in errors; by default the
            evaluable's ``description``.
        run_id: The run's id, given to evaluators as :attr:`EvaluatorContext.run_id`; a new
            random one by default.
        attributes: Attributes of the whole run (e.g. ``{"dataset": "qa"}``), given to
            evaluators as :attr:`EvaluatorContext.attributes`.
        threshold: The score that passes, for the ``pass``/``fail`` label of the evaluations
            emitted as telemetry (``init(export_evaluations=True)``).

    Raises:
        TypeError: ``eval_inputs`` is a string or not a sequence, or ``runnable``, an
            evaluator, an evaluable, an entry name or the attributes have the wrong type.
        ValueError: Mismatched lengths, no evaluators, or a bad ``concurrency``/``timeout``.
    """
    items, cases, checks = _checked_arguments(runnable, eval_inputs, evaluators, evaluables)
    check_count(concurrency, "concurrency")
    check_timeout(timeout)
    check_threshold(threshold)
    plans = _evaluator_plans(checks, per_input_evaluators, len(items))
    names = _entry_names(entry_names, cases, len(items))
    run_attributes = _run_attributes(attributes)
    results = [
        InputResult(index=i, eval_input=item, evaluable=None) for i, item in enumerate(items)
    ]
    done = 0

    def report(outcome: InputResult) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            _report_progress(on_progress, outcome, done, len(results))

    await _evaluate_all(
        _Runnable.of(runnable),
        (
            _Item(outcome, plans[i], cases[i] if cases is not None else None, names[i])
            for i, outcome in enumerate(results)
        ),
        on_result=report,
        from_trace=from_trace,
        concurrency=min(concurrency, len(results)),
        timeout=timeout,
        run_id=run_id if run_id is not None else uuid.uuid4().hex,
        attributes=run_attributes,
        threshold=threshold,
    )
    for outcome in results:  # whatever ended a worker early, no row is left short
        _complete(outcome, plans[outcome.index][1])
    return results


async def evaluate_each(
    runnable: Callable[..., Any],
    inputs: Iterable[RunInput],
    *,
    on_result: Callable[[InputResult], object],
    from_trace: TraceSelector | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    threshold: float = 0.5,
) -> None:
    """Run and score each input as :func:`evaluate_inputs` does, handing each result on.

    The streaming form of :func:`evaluate_inputs`, for inputs too many to hold: ``inputs`` is
    read lazily, as workers become free, and each finished input is given to ``on_result``
    and then dropped, so memory holds the inputs in flight, not the run. Release what
    ``on_result`` keeps (``result.run.handler.clear()`` once its spans are written).

    Args:
        runnable: The app entry point, sync or async, called with each input's
            ``eval_input``.
        inputs: The inputs, each with its own evaluators; an iterator is consumed as the run
            goes.
        on_result: Called with each finished input (in the event loop's thread), its row
            complete: one evaluation per evaluator. An exception it raises ends the run.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most inputs in flight at once.
        timeout: Seconds allowed for each run and for each evaluation.
        run_id: The run's id, given to evaluators; a new random one by default.
        attributes: Attributes of the whole run, given to evaluators.
        threshold: The score that passes, for the evaluations emitted as telemetry.

    Raises:
        TypeError: ``runnable`` is not callable, an input is not a :class:`RunInput`, or an
            input's evaluators are not callables.
        ValueError: An input without evaluators, or a bad ``concurrency``/``timeout``.

    Example:
        >>> import anyio
        >>> positive = [lambda evaluable: evaluable.output_value() > 0]
        >>> inputs = (RunInput(index=i, eval_input=i, evaluators=positive) for i in range(3))
        >>> scores = []
        >>> anyio.run(lambda: evaluate_each(
        ...     lambda x: x, inputs, on_result=lambda r: scores.append(r.evaluations[0].score)
        ... ))
        >>> sorted(scores)
        [0.0, 1.0, 1.0]
    """
    if not callable(runnable):
        raise TypeError(
            f"runnable must be a callable (the app entry point), got {type_name(runnable)} "
            f"{safe_repr(runnable)[:60]}"
        )
    check_count(concurrency, "concurrency")
    check_timeout(timeout)
    check_threshold(threshold)
    run_attributes = _run_attributes(attributes)
    plans: dict[int, tuple[Sequence[EvaluatorFunction], _Plan]] = {}
    prepared: dict[int, PreparedEvaluator] = {}

    def plan_of(listed: Sequence[EvaluatorFunction], index: int) -> _Plan:
        # Keyed by the list object, kept alive in the value: inputs sharing a list plan it once.
        known = plans.get(id(listed))
        if known is not None and known[0] is listed:
            return known[1]
        checks = _as_list(listed, f"inputs[{index}].evaluators", "e.g. [ExactMatch()]")
        if not checks:
            raise ValueError(f"input #{index} has no evaluators; give it one or more")
        for position, check in enumerate(checks):
            if not callable(check):
                raise TypeError(
                    f"input #{index}: evaluators[{position}] is {type_name(check)}, not callable"
                )
        plan = _plan_of(checks, prepared)
        plans[id(listed)] = (listed, plan)
        return plan

    def items() -> Iterator[_Item]:
        for given in inputs:
            if not isinstance(given, RunInput):
                raise TypeError(f"inputs must hold RunInput items, got {type_name(given)}")
            yield _Item(
                InputResult(index=given.index, eval_input=given.eval_input, evaluable=None),
                plan_of(given.evaluators, given.index),
                given.evaluable,
                given.name
                if given.name is not None or given.evaluable is None
                else given.evaluable.description,
            )

    await _evaluate_all(
        _Runnable.of(runnable),
        items(),
        on_result=on_result,
        from_trace=from_trace,
        concurrency=concurrency,
        timeout=timeout,
        run_id=run_id if run_id is not None else uuid.uuid4().hex,
        attributes=run_attributes,
        threshold=threshold,
    )


@dataclass(frozen=True, slots=True)
class _Item:
    """One input on its way to a worker: its row, its evaluators, its base case and name."""

    outcome: InputResult
    plan: _Plan
    case: Evaluable | None
    name: str | None


INPUTS_BETWEEN_CHECKPOINTS: Final = 16
"""How many inputs a worker of a run scores before it goes back to the event loop."""


async def checkpoint_now_and_then(done: int) -> None:
    """Go back to the event loop after every :data:`INPUTS_BETWEEN_CHECKPOINTS`-th input.

    For a worker that scores inputs one after the other, even when nothing in them waits (a
    runnable and evaluators that never await). Without it one worker would run every input
    in a single step of the loop, the others idle, and asyncio would never drop the timer of
    each finished timeout: cancelled, it stays scheduled, and its copy of the context holds
    the input's spans until the run ends. Not after every input: a step of the loop costs
    about a tenth of a no-I/O input.

    Args:
        done: How many inputs this worker has scored.
    """
    if done % INPUTS_BETWEEN_CHECKPOINTS == 0:
        await anyio.lowlevel.checkpoint()


async def _evaluate_all(
    app: _Runnable,
    items: Iterator[_Item],
    *,
    on_result: Callable[[InputResult], object],
    from_trace: TraceSelector | None,
    concurrency: int,
    timeout: float | None,
    run_id: str,
    attributes: Mapping[str, Any],
    threshold: float,
) -> None:
    """Workers share ``items`` (each input is taken once), score each, hand each row on."""

    async def score(item: _Item) -> None:
        outcome = item.outcome
        index = outcome.index
        evaluators, names = item.plan
        evaluable, run, failure = await _prepare(
            app,
            outcome.eval_input,
            base=item.case,
            expected_output=UNSET,
            from_trace=from_trace,
            timeout=timeout,
            entry=item.name or f"input #{index}",
        )
        outcome.evaluable, outcome.run = evaluable, run
        if failure is not None or evaluable is None:
            assert failure is not None
            outcome.evaluations = [failure.model_copy(update={"evaluator": n}) for n in names]
            return
        ctx = _context(
            evaluable,
            run,
            entry_name=item.name,
            entry_index=index,
            run_id=run_id,
            attributes=attributes,
        )
        outcome.evaluations = await _evaluate_entry(evaluators, ctx, timeout)

    async def score_never_losing_the_row(item: _Item) -> None:
        outcome = item.outcome
        names = item.plan[1]
        try:
            await score(item)
        except Exception as exc:  # a failure outside any evaluator still errors only its row
            outcome.evaluations = _errored_row(exc, names)
        except BaseException as exc:
            if not is_stray_cancellation(exc):
                raise
            outcome.evaluations = _errored_row(
                _stray(exc, f"scoring input #{outcome.index}"), names
            )
        _complete(outcome, names)

    async def worker() -> None:
        for done, item in enumerate(items, 1):  # workers share one iterator: each input once
            await score_never_losing_the_row(item)
            outcome = item.outcome
            if outcome.run is not None:
                export_evaluations(outcome.evaluations, outcome.run.trace, threshold=threshold)
            on_result(outcome)
            await checkpoint_now_and_then(done)

    try:
        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(worker)
    except ExceptionGroup as failed:  # on_result, or reading the inputs, raised: that error
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from failed
        raise


_Plan = tuple[list[PreparedEvaluator], list[str]]
"""The evaluators of an input, prepared, and their names."""


def _evaluator_plans(
    checks: list[EvaluatorFunction],
    per_input: Sequence[Sequence[EvaluatorFunction] | None] | None,
    count: int,
) -> list[_Plan]:
    """The evaluators of each input, each prepared once; inputs sharing a list share a plan."""
    prepared: dict[int, PreparedEvaluator] = {}  # the lists keep the evaluators alive

    def plan_of(listed: list[EvaluatorFunction]) -> _Plan:
        return _plan_of(listed, prepared)

    if per_input is None:
        if not checks:
            raise ValueError("at least one evaluator is needed")
        return [plan_of(checks)] * count
    given = _as_list(per_input, "per_input_evaluators", "one list of evaluators per input")
    if len(given) != count:
        raise ValueError(
            f"per_input_evaluators has {len(given)} items but eval_inputs has {count}; "
            "give one list (or None) per input"
        )
    shared = plan_of(checks)
    plans: dict[int, _Plan] = {}
    result: list[_Plan] = []
    for position, own in enumerate(given):
        if own is None:
            if not checks:
                raise ValueError(
                    f"per_input_evaluators[{position}] is None but no evaluators are given; "
                    "give evaluators, or a list for every input"
                )
            result.append(shared)
            continue
        plan = plans.get(id(own))
        if plan is None:
            listed = _as_list(own, f"per_input_evaluators[{position}]", "e.g. [ExactMatch()]")
            if not listed:
                raise ValueError(f"per_input_evaluators[{position}] is empty; give one or more")
            for index, check in enumerate(listed):
                if not callable(check):
                    raise TypeError(
                        f"per_input_evaluators[{position}][{index}] is {type_name(check)}, "
                        "not callable"
                    )
            plan = plans[id(own)] = plan_of(listed)
        result.append(plan)
    return result


def _plan_of(listed: Sequence[EvaluatorFunction], prepared: dict[int, PreparedEvaluator]) -> _Plan:
    """The evaluators of a list, each prepared once per run (``prepared``, by ``id``)."""
    evaluators = []
    for check in listed:
        one = prepared.get(id(check))
        if one is None:
            one = prepared[id(check)] = prepare_evaluator(check)
        evaluators.append(one)
    return evaluators, [one.name for one in evaluators]


def _entry_names(
    given: Sequence[str | None] | None, cases: list[Evaluable] | None, count: int
) -> list[str | None]:
    """Each input's name: the one given, else its evaluable's description, else ``None``."""
    if given is None:
        return [case.description for case in cases] if cases is not None else [None] * count
    names = _as_list(given, "entry_names", "one name (or None) per input")
    if len(names) != count:
        raise ValueError(
            f"entry_names has {len(names)} items but eval_inputs has {count}; "
            "give one name (or None) per input"
        )
    for position, name in enumerate(names):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"entry_names[{position}] is {type_name(name)}, not a str or None")
    if cases is not None:
        return [
            name if name is not None else case.description
            for name, case in zip(names, cases, strict=True)
        ]
    return names


def _run_attributes(attributes: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of the run's attributes, shared by every entry's context."""
    if attributes is None:
        return _NO_ATTRIBUTES
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"attributes must be a mapping of names to values (e.g. {{'dataset': 'qa'}}), got "
            f"{type_name(attributes)}"
        )
    for key in attributes:
        if not isinstance(key, str):
            raise TypeError(f"attributes keys must be str, got {type_name(key)} {safe_repr(key)}")
    return types.MappingProxyType(dict(attributes))


def _checked_arguments(
    runnable: object,
    eval_inputs: object,
    evaluators: object,
    evaluables: object,
) -> tuple[list[Any], list[Evaluable] | None, list[EvaluatorFunction]]:
    """The inputs, evaluables and evaluators as lists, or a clear error about the arguments."""
    if not callable(runnable):
        raise TypeError(
            f"runnable must be a callable (the app entry point), got {type_name(runnable)} "
            f"{safe_repr(runnable)[:60]}"
        )
    items = _as_list(eval_inputs, "eval_inputs", "one argument per run, e.g. ['q1', 'q2']")
    checks = _as_list(evaluators, "evaluators", "e.g. [ExactMatch()]")
    cases = None if evaluables is None else _as_list(evaluables, "evaluables", "one per input")
    if cases is not None and len(cases) != len(items):
        raise ValueError(
            f"evaluables has {len(cases)} items but eval_inputs has {len(items)}; "
            "give one evaluable per input"
        )
    for position, check in enumerate(checks):
        if not callable(check):
            raise TypeError(f"evaluators[{position}] is {type_name(check)}, not callable")
    for position, case in enumerate(cases or ()):
        if not isinstance(case, Evaluable):
            raise TypeError(
                f"evaluables[{position}] is {type_name(case)}, not an evaltrace.Evaluable"
            )
    return items, cases, checks


def _as_list(value: object, argument: str, example: str) -> list[Any]:
    if isinstance(value, str | bytes | bytearray) or callable(value):
        raise TypeError(
            f"{argument} must be a list ({example}), got {type_name(value)} "
            f"{safe_repr(value)[:60]}; to run a single item, wrap it in a list"
        )
    if not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be a list ({example}), got {type_name(value)}")
    return list(value)


def _report_progress(
    callback: Callable[[InputResult, int, int], object], item: InputResult, done: int, total: int
) -> None:
    try:
        callback(item, done, total)
    except Exception:  # a broken progress display must not lose the run
        logger.warning("evaltrace: the on_progress callback raised", exc_info=True)
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        logger.warning("evaltrace: the on_progress callback raised CancelledError", exc_info=True)
