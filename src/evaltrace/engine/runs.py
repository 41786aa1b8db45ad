"""Running the app once, under its own capture, inside a root span: :func:`run_captured`."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final, Protocol

import anyio

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.capture import conventions as conv
from evaltrace.capture.context import eval_inputs as eval_inputs_scope
from evaltrace.capture.wrap import start_span_call
from evaltrace.checks import check_timeout
from evaltrace.concurrency import (
    StrayCancellationError,
    is_async_callable,
    is_stray_cancellation,
    run_in_worker_thread,
)
from evaltrace.errors import RunnableTimeoutError
from evaltrace.trace import MemoryTraceHandler, ObservationNode, capture_traces

__all__ = ["RunOutcome", "EntryPoint", "run_captured"]

logger = logging.getLogger("evaltrace")

_RUN_ATTRIBUTES: Final = MappingProxyType({conv.RUN_SPAN_ATTRIBUTE: True})
"""What marks the root span of a run, besides its kind, input and output."""

_NO_INPUTS: Final = contextlib.nullcontext()
"""The scope of a run given no inputs to serve (one reusable, stateless instance)."""


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


def _runnable_name(function: Callable[..., Any]) -> str:
    try:
        name = getattr(function, "__name__", None)
    except Exception:  # a hostile __getattr__: the type still names it
        name = None
    return name if isinstance(name, str) and name != "<lambda>" else type_name(function)


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """The app entry point, called with one argument, its name and kind worked out once.

    Example:
        >>> EntryPoint.of(str.upper).name
        'upper'
    """

    function: Callable[..., Any]
    """The entry point as given."""
    name: str
    """The name of its root span."""
    is_async: bool
    """Whether calling it gives a coroutine (else it runs in a worker thread)."""

    @classmethod
    def of(cls, function: Callable[..., Any], name: str | None = None) -> EntryPoint:
        """The runnable of ``function`` (named ``name``, or after the function).

        Raises:
            TypeError: ``function`` is not callable.
        """
        if not callable(function):
            raise TypeError(
                f"runnable must be a callable (the app entry point), got {type_name(function)} "
                f"{safe_repr(function)[:60]}"
            )
        return cls(function, name or _runnable_name(function), is_async_callable(function))

    async def __call__(self, argument: Any) -> Any:
        """Call the entry point with ``argument`` (a sync one in a worker thread)."""
        if self.is_async:
            return await self.function(argument)
        result = await run_in_worker_thread(functools.partial(self.function, argument))
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
    runnable: Callable[..., Any] | EntryPoint,
    argument: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    entry: str | None = None,
    timeout: float | None = None,
) -> RunOutcome:
    """Run ``runnable(argument)`` once, under its own capture, inside a root span.

    The root span (named after the runnable) records ``argument`` as its input and the
    return value as its output, so an undecorated function is captured too. Sync runnables
    run in a worker thread with the context carried over.

    Args:
        runnable: The app entry point, sync or async, called with one argument.
        argument: The argument.
        inputs: Values that ``wrap(..., purpose="input", name=...)`` returns during the run.
        entry: A label of the entry, quoted in errors about missing inputs.
        timeout: Seconds after which the run is stopped and reported as timed out.

    Returns:
        The outcome; the runnable's exception is kept in it, never raised.

    Example:
        >>> import anyio
        >>> anyio.run(run_captured, str.upper, "paris").output
        'PARIS'
    """
    check_timeout(timeout)
    app = runnable if isinstance(runnable, EntryPoint) else EntryPoint.of(runnable)
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    output: Any = None
    error: BaseException | None = None
    name = app.name
    # An async entry point is awaited directly, not through EntryPoint.__call__'s own
    # coroutine (bench_runner.py's c=50 figure, bench/README.md).
    call_app: Callable[[Any], Any] = app.function if app.is_async else app
    scope = eval_inputs_scope(inputs, entry=entry) if inputs is not None else _NO_INPUTS
    with capture_traces() as handler, scope:
        call = start_span_call(name, "chain", argument, _RUN_ATTRIBUTES)
        call.attach()
        try:
            if timeout is None:
                output = await call_app(argument)
            else:
                with anyio.fail_after(timeout):
                    output = await call_app(argument)
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
