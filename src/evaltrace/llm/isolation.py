"""Judge calls kept apart from the app's trace, paced by the rate limiter, cached.

A judge evaluates a run that was captured; its own model calls must not appear in that
capture, nor in the app's exported trace. :func:`isolated_judge_call` detaches a block from
the OpenTelemetry context (with instrumentation suppressed) and from every evaltrace capture;
:func:`run_judge_call` and :func:`run_judge_call_in_thread` run one judge call that way, each
in its own copy of the context, with its turn at the configured rate limiter and the judge
cache: the requests the call makes through
:attr:`JudgeClient.caching <evaltrace.llm.JudgeClient.caching>` are answered from the cache
when it holds them, and the complete responses it received are stored when the call
succeeds (a call that raises, because the judge's answer did not parse for instance, stores
nothing).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import anyio
from opentelemetry import context as otel_context

from evaltrace.capture.context import outside_captures
from evaltrace.concurrency.cancellation import StrayCancellationError, is_stray_cancellation
from evaltrace.concurrency.threads import run_in_worker_thread
from evaltrace.llm.cached_client import JudgeCallScope, judge_call_scope
from evaltrace.llm.config import JudgeConfig

__all__ = [
    "estimate_tokens",
    "isolated_judge_call",
    "run_judge_call",
    "run_judge_call_in_thread",
]

T = TypeVar("T")


@contextmanager
def isolated_judge_call(config: JudgeConfig) -> Iterator[None]:
    """Run the block as a judge call: detached from the trace of the code that runs it.

    Inside the block the OpenTelemetry context is empty, with instrumentation suppressed (so
    instrumentors such as OpenInference's make no spans), and no evaltrace capture is
    current (so any span started anyway is not filed under the run being judged). With
    ``trace_judge_calls`` configured the block runs unchanged.

    Args:
        config: The resolved judge configuration.

    Example:
        >>> from evaltrace.llm import judge_config
        >>> with isolated_judge_call(judge_config()):
        ...     pass
    """
    if config.trace_judge_calls:
        yield
        return
    detached = otel_context.set_value(
        otel_context._SUPPRESS_INSTRUMENTATION_KEY, True, otel_context.Context()
    )
    detached = otel_context.set_value(
        otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, detached
    )
    token = otel_context.attach(detached)
    try:
        with outside_captures():
            yield
    finally:
        otel_context.detach(token)


def estimate_tokens(*texts: object) -> int:
    """A rough prompt size for rate limiting: characters / 4 (at least 1)."""
    return max(1, sum(len(text if isinstance(text, str) else repr(text)) for text in texts) // 4)


async def _pace(config: JudgeConfig, tokens: int) -> None:
    if config.rate_limiter is not None:
        await config.rate_limiter.acquire(tokens)


async def run_judge_call(
    config: JudgeConfig, call: Callable[[], Awaitable[T]], *, tokens: int = 1
) -> T:
    """Await ``call()`` as an isolated judge call, in its own copy of the context.

    The copy means that whatever the call sets in context variables (autoevals keeps its
    client and default models there) never leaks into the caller. With a rate limiter
    configured, the call waits for its turn before its first request that the judge cache
    does not answer (a call answered from the cache never waits; one whose requests do not
    go through evaltrace's client waits after them). When the call returns, the responses
    it received are stored in the judge cache.

    Args:
        config: The resolved judge configuration.
        call: Starts the judge call.
        tokens: The call's estimated prompt tokens, for the rate limiter.

    Returns:
        What the call returned; its exception is raised unchanged.
    """

    async def pace() -> None:
        await _pace(config, tokens)

    scope = JudgeCallScope(config.cache, pace if config.rate_limiter is not None else None)
    results: list[T] = []
    failures: list[Exception] = []

    async def child() -> None:
        with isolated_judge_call(config), judge_call_scope(scope):
            try:
                results.append(await call())
            except Exception as exc:  # handed back to the caller below
                failures.append(exc)
            except BaseException as exc:
                if not is_stray_cancellation(exc):
                    raise
                # A task group would swallow it as a cancellation, leaving no result at all.
                stray = StrayCancellationError("the judge call")
                stray.__cause__ = exc
                failures.append(stray)

    async with anyio.create_task_group() as group:
        group.start_soon(child)
    if not scope.requested:
        await scope.wait_turn()
    if failures:
        raise failures[0]
    scope.commit()
    return results[0]


async def run_judge_call_in_thread(
    config: JudgeConfig, call: Callable[[], T], *, tokens: int = 1
) -> T:
    """Run the synchronous ``call()`` as an isolated judge call in a worker thread.

    The thread gets a copy of the caller's context; on asyncio it is one of evaltrace's
    daemon worker threads, so a call abandoned after a timeout never delays interpreter exit.

    Args:
        config: The resolved judge configuration.
        call: Makes the judge call.
        tokens: The call's estimated prompt tokens, for the rate limiter.

    Returns:
        What the call returned; its exception is raised unchanged.
    """
    await _pace(config, tokens)  # a sync client cannot wait for an async limiter mid-call
    scope = JudgeCallScope(config.cache)

    def isolated() -> T:
        with isolated_judge_call(config), judge_call_scope(scope):
            return call()

    result = await run_in_worker_thread(isolated)
    scope.commit()
    return result
