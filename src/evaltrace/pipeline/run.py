"""Running a pipeline over many inputs under capture: ``evaluate_runnable``.

How inputs are given (the rule):

* The runnable receives each input **exactly as given**: a flat mapping
  ``{"query": "..."}``, a component-qualified one
  ``{"retrieve": {"query": "..."}, "generate": {"query": "..."}}``, or any other value.
* When an input is a mapping, its entries are also served to
  ``wrap(value, purpose="input", name=...)`` during the run (unless ``serve_inputs=False``): a
  flat entry under its key (``"query"``), an entry of a component-qualified one under
  ``"component.argument"`` (``"retrieve.query"``). As with every evaluation run, a
  ``wrap(..., purpose="input")`` name that the input does not provide is then an error of that
  run.
* After each run, the input is checked against the components its trace shows (the spans
  other than the run's own root span, with their argument names). A key that names a
  component and holds a mapping is component-qualified; any other key is flat. A flat key that
  is an argument name of **two or more components** is ambiguous (which component is it for?),
  and :class:`AmbiguousInputError` asks for the component-qualified form.

Expected outputs follow the same shape: ``expected_outputs[i]`` is the pipeline's final output,
or a component-qualified mapping ``{"retrieve": {"documents": [...]}, "<runnable>": "..."}``;
``None`` (for one input, or for all with ``expected_outputs=None``) means blind evaluation.
"""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from evaltrace.capture import conventions as conv
from evaltrace.constants import DEFAULT_CONCURRENCY
from evaltrace.engine import (
    Entry,
    EntryPoint,
    EntrySource,
    Evaluators,
    RunConfig,
    Scored,
    SourceInfo,
    execute,
)
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluable import UNSET, Evaluable
from evaltrace.pipeline.result import EvaluationResult
from evaltrace.results.model import ComponentRecord, EntryResult
from evaltrace.trace.tree import ObservationNode, walk_trace
from evaltrace.trace.values import span_documents

__all__ = [
    "AmbiguousInputError",
    "ProgressCallback",
    "ProgressUpdate",
    "evaluate_runnable",
    "iter_evaluate_runnable",
]

_NOT_SCORED = Evaluators((), ())
"""A pipeline's inputs are run, not scored: metrics are computed afterwards."""


class AmbiguousInputError(EvaltraceError, ValueError):
    """A flat input key is an argument of several components; the input must name them."""


@dataclass(kw_only=True, frozen=True)
class ProgressUpdate:
    """How far a pipeline evaluation has got; sent after each input finishes.

    Example:
        >>> def show(update: ProgressUpdate) -> None:
        ...     print(f"{update.done}/{update.total}")
    """

    done: int
    """How many inputs have finished (in any order)."""
    total: int
    """How many inputs there are."""
    latest: EntryResult
    """The entry of the input that just finished."""


ProgressCallback: TypeAlias = Callable[[ProgressUpdate], Any]
"""Called with each :class:`ProgressUpdate`; may be sync or return an awaitable."""


class PipelineInputs(EntrySource):
    """A pipeline's inputs as a run's entries: each run once, kept with every component's calls."""

    scored = False

    def __init__(
        self,
        runnable: Callable[..., Any],
        items: Sequence[Any],
        expected: Sequence[Any],
        *,
        serve_inputs: bool,
    ) -> None:
        self.runnable = EntryPoint.of(runnable)
        self._items = items
        self._expected = expected
        self._serve_inputs = serve_inputs

    @property
    def name(self) -> str:
        """The runnable's name; its root span is also a component of that name."""
        assert self.runnable is not None
        return self.runnable.name

    def __len__(self) -> int:
        return len(self._items)

    def info(self) -> SourceInfo:
        """Whether mapping inputs are served to ``wrap(purpose="input")``."""
        return SourceInfo(settings={"serve_inputs": self._serve_inputs})

    def entries(self) -> Iterator[Entry]:
        """One entry per input, its expected output as the expectation."""
        for index, item in enumerate(self._items):
            expected = self._expected[index]
            yield Entry(
                index=index,
                evaluators=_NOT_SCORED,
                input=item,
                case=Evaluable(expectation=UNSET if expected is None else expected),
                served=_served(item) if self._serve_inputs else None,
            )

    def finish(self, scored: Scored) -> EntryResult:
        """The entry with every component's calls; an ambiguous input ends the evaluation."""
        entry = scored.entry
        assert entry is not None
        _check_ambiguity(entry.index, entry.input, scored.roots)
        return scored.result.model_copy(update={"components": _component_calls(scored.roots)})


async def evaluate_runnable(
    runnable: Callable[..., Any],
    inputs: Sequence[Any],
    expected_outputs: Sequence[Any] | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = True,
    timeout: float | None = None,
    on_progress: ProgressCallback | None = None,
    serve_inputs: bool = True,
) -> EvaluationResult:
    """Run the runnable once per input under capture and keep everything metrics need.

    Each input runs in its own capture (at most ``concurrency`` at once); the result is a
    :class:`~evaltrace.results.RunResult` with one entry per input: the input, the final
    output, the expected output (the entry's ``expectation``) and every span's input and output
    by component (span) name. Compute metrics afterwards with
    :meth:`EvaluationResult.calculate_metrics`. A runnable that raises or times out is recorded
    (the entry's ``error`` and status), not raised. See the module documentation for the input
    rule.

    Args:
        runnable: The pipeline entry point, sync or async, called with one input.
        inputs: One input per run (a list).
        expected_outputs: One expected output per input, or ``None`` for a blind evaluation.
        concurrency: Most runs in flight at once.
        progress: Draw a progress bar on standard error when it is a terminal.
        timeout: Seconds allowed for each run.
        on_progress: Called with a :class:`ProgressUpdate` after each input (sync, or
            returning an awaitable); an exception it raises stops the evaluation.
        serve_inputs: Serve mapping inputs to ``wrap(..., purpose="input")``.

    Returns:
        The result; its entries are in input order.

    Raises:
        AmbiguousInputError: A flat input key is an argument of several components.
        TypeError: ``inputs`` or ``expected_outputs`` is not a list, or a callable is not one.
        ValueError: Lengths differ, or ``concurrency`` / ``timeout`` is invalid.

    Example:
        >>> result = await evaluate_runnable(rag, [{"query": "Who wrote Emma?"}],
        ...                                  [{"rag": "Jane Austen"}])  # doctest: +SKIP
        >>> result.calculate_metrics(Metric.F1).score  # doctest: +SKIP
        1.0
    """
    config = RunConfig(concurrency=concurrency, timeout=timeout)
    items, expected = _validated(runnable, inputs, expected_outputs)
    if on_progress is not None and not callable(on_progress):
        raise TypeError(f"on_progress must be callable, got {on_progress!r}")
    source = PipelineInputs(runnable, items, expected, serve_inputs=serve_inputs)
    callback = on_progress

    def observe(scored: Scored, done: int, total: int) -> object:
        assert callback is not None
        return callback(ProgressUpdate(done=done, total=total, latest=scored.result))

    run = await execute(
        source,
        config,
        observers=[observe] if callback is not None else [],
        progress=progress and _is_terminal(sys.stderr),
    )
    return EvaluationResult(run)


async def iter_evaluate_runnable(
    runnable: Callable[..., Any],
    inputs: Sequence[Any],
    expected_outputs: Sequence[Any] | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
    timeout: float | None = None,
    serve_inputs: bool = True,
) -> AsyncIterator[ProgressUpdate | EvaluationResult]:
    """Like :func:`evaluate_runnable`, as an async iterator of progress, then the result.

    Yields one :class:`ProgressUpdate` per input as it finishes, then the
    :class:`EvaluationResult`. Errors (an :class:`AmbiguousInputError`, invalid arguments) are
    raised from the iteration. Close the iterator when leaving early, e.g. with
    ``contextlib.aclosing``, so that the remaining runs are cancelled at once.

    Example:
        >>> async with contextlib.aclosing(iter_evaluate_runnable(rag, inputs)) as steps:
        ...     async for step in steps:  # doctest: +SKIP
        ...         if isinstance(step, ProgressUpdate):
        ...             print(f"{step.done}/{step.total}")
        ...         else:
        ...             result = step
    """
    _validated(runnable, inputs, expected_outputs)
    RunConfig(concurrency=concurrency, timeout=timeout)
    send, receive = anyio.create_memory_object_stream[
        "ProgressUpdate | EvaluationResult | _Failure"
    ](max_buffer_size=math.inf)

    async def produce() -> None:
        async with send:
            try:
                result = await evaluate_runnable(
                    runnable,
                    inputs,
                    expected_outputs,
                    concurrency=concurrency,
                    progress=progress,
                    timeout=timeout,
                    on_progress=send.send,
                    serve_inputs=serve_inputs,
                )
            except Exception as exc:  # handed to the consumer, which raises it
                await send.send(_Failure(error=exc))
            else:
                await send.send(result)

    failure: Exception | None = None
    closed = False
    async with anyio.create_task_group() as group, receive:
        group.start_soon(produce)
        async for item in receive:
            if isinstance(item, _Failure):
                failure = item.error
                break
            try:
                yield item
            except GeneratorExit:  # closed early: stop the runs, then end quietly
                closed = True
                group.cancel_scope.cancel()
                break
    if failure is not None and not closed:
        raise failure


@dataclass(kw_only=True, frozen=True)
class _Failure:
    error: Exception


def _validated(
    runnable: Callable[..., Any],
    inputs: Sequence[Any],
    expected_outputs: Sequence[Any] | None,
) -> tuple[list[Any], list[Any]]:
    if not callable(runnable):
        raise TypeError(f"runnable must be callable, got {type(runnable).__name__}")
    if isinstance(inputs, Mapping):
        raise TypeError(
            "inputs must be a list with one input per run, got a single mapping; wrap it in "
            "a list: inputs=[{...}]"
        )
    if not isinstance(inputs, list | tuple):
        raise TypeError(
            f"inputs must be a list with one input per run, got {type(inputs).__name__}"
        )
    items = list(inputs)
    if expected_outputs is None:
        return items, [None] * len(items)
    if not isinstance(expected_outputs, list | tuple):
        raise TypeError(
            "expected_outputs must be a list with one expected output per input (or None "
            f"for a blind evaluation), got {type(expected_outputs).__name__}"
        )
    expected = list(expected_outputs)
    if len(expected) != len(items):
        raise ValueError(
            f"expected_outputs has {len(expected)} items but inputs has {len(items)}; give "
            "one expected output per input (None for an input without one), or pass "
            "expected_outputs=None for a blind evaluation"
        )
    return items, expected


def _served(item: Any) -> dict[str, Any] | None:
    """The names a mapping input serves to ``wrap(..., purpose="input")``."""
    if not isinstance(item, Mapping):
        return None
    served: dict[str, Any] = {}
    for key, value in item.items():
        if not isinstance(key, str):
            continue
        served[key] = value
        if isinstance(value, Mapping):
            for argument, inner in value.items():
                if isinstance(argument, str):
                    served[f"{key}.{argument}"] = inner
    return served


def _components(trace: Sequence[ObservationNode]) -> dict[str, set[str]]:
    """The argument names of each component (span) of a run, the run's own root span excluded."""
    arguments: dict[str, set[str]] = {}
    for node in walk_trace(trace):
        span = node.span
        if span.attributes.get(conv.RUN_SPAN_ATTRIBUTE) is True:
            continue
        names = arguments.setdefault(span.name, set())
        if isinstance(span.input, dict):
            names.update(key for key in span.input if isinstance(key, str))
    return arguments


def _check_ambiguity(index: int, item: Any, trace: Sequence[ObservationNode]) -> None:
    if not isinstance(item, Mapping):
        return
    components = _components(trace)
    for key, value in item.items():
        if key in components and isinstance(value, Mapping):
            continue  # component-qualified
        takers = [name for name, arguments in components.items() if key in arguments]
        if len(takers) < 2:
            continue
        shown = ", ".join(repr(name) for name in takers)
        qualified = ", ".join(f'"{name}": {{"{key}": ...}}' for name in takers)
        raise AmbiguousInputError(
            f"input #{index}: the key {key!r} is an argument of {len(takers)} components "
            f"({shown}), so it is ambiguous which one it is for. Give it per component: "
            f"{{{qualified}}}. The runnable receives the input as given and reads each "
            "component's values from it."
        )


def _component_calls(trace: Sequence[ObservationNode]) -> dict[str, list[ComponentRecord]]:
    nodes = sorted(walk_trace(trace), key=lambda node: node.span.record.start_time_ns)
    components: dict[str, list[ComponentRecord]] = {}
    for node in nodes:
        span = node.span
        output = span.output
        if output is None:
            output = span_documents(span)
        error = None
        if span.error is not None:
            kind, message = span.error.type, span.error.message
            error = f"{kind}: {message}" if kind else message
        components.setdefault(span.name, []).append(
            ComponentRecord(
                name=span.name,
                kind=span.kind,
                input=span.input,
                output=output,
                status=span.status,
                error=error,
                duration_ms=span.duration_ms,
            )
        )
    return components


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False
