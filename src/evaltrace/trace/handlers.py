"""Handlers: code of yours that receives every finished span and ``wrap`` value, as views.

Register an :class:`InstrumentationHandler` with :func:`add_handler`; each one gets a bounded
queue and a thread of its own (see the class), so a slow handler never slows the app down.
The registry is the capture floor's :class:`~evaltrace.capture.listeners.SpanListener`: the
span processor gives it finished spans on the app's thread, it queues them, and each
handler's thread turns them into views.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.capture.config import runtime
from evaltrace.capture.delivery import (
    DEFAULT_HANDLER_QUEUE_SIZE,
    Deliver,
    HandlerQueue,
    HandlerStats,
)
from evaltrace.capture.listeners import LISTENERS, SpanSink
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import ConfigurationError
from evaltrace.trace.spans import LLMSpan, ObserveSpan, SpanRecord, span_view

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["InstrumentationHandler", "add_handler", "handler_stats", "remove_handler"]


class InstrumentationHandler:
    """A listener for every finished span and every ``wrap`` value, across all runs.

    Override :meth:`on_span` and optionally :meth:`on_value` (each plain or ``async def``),
    then register the handler with :func:`add_handler`.

    Which thread runs it: never the app's. Each registered handler gets a thread of its own
    (named ``evaltrace-handler-<class name>``) running an asyncio event loop; both sync and
    async methods run there, one span or value at a time, in the order spans ended (an async
    method is awaited before the next item). The app's thread only puts the finished span
    in the handler's queue, so a slow handler never slows the app down. The queue is bounded
    (``add_handler(handler, max_queue_size=...)``, 2048 by default): when it is full, new
    spans and values are dropped and counted (:func:`handler_stats`), and
    :func:`evaltrace.flush` returns ``False``. :func:`evaltrace.flush` waits until the
    handlers have seen everything delivered so far; at process exit they get at most the
    shutdown timeout (``init(shutdown_timeout_millis=...)``). A handler that raises is
    logged once and keeps receiving spans; it never affects the app or the other handlers.

    Example:
        >>> class PrintNames(InstrumentationHandler):
        ...     def on_span(self, span: ObserveSpan | LLMSpan) -> None:
        ...         print(span.name)
    """

    _evaltrace_queue: HandlerQueue | None = None

    def on_span(self, span: ObserveSpan | LLMSpan) -> Awaitable[None] | None:
        """Receive one finished span."""
        return None

    def on_value(self, record: WrapRecord) -> Awaitable[None] | None:
        """Receive one value recorded by ``wrap(value, purpose=..., name=...)``."""
        return None


def _deliverer(handler: InstrumentationHandler) -> Deliver:
    """What the handler's thread calls for each item: spans become views there."""

    def deliver(item: ReadableSpan | WrapRecord) -> Awaitable[None] | None:
        if isinstance(item, WrapRecord):
            return handler.on_value(item)
        return handler.on_span(span_view(SpanRecord.from_readable(item)))

    return deliver


class _Registry:
    """The registered handlers, as one listener of the span processor and of ``wrap``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.handlers: tuple[InstrumentationHandler, ...] = ()
        """Every registered handler."""
        self.sinks: tuple[SpanSink, ...] = ()
        """The same handlers as sinks: filled on the app's thread (an append is free)."""
        self.queues: tuple[HandlerQueue, ...] = ()
        """The queues of the other handlers, and of removed ones still draining."""

    def add(self, handler: InstrumentationHandler, max_queue_size: int) -> None:
        with self._lock:
            if any(known is handler for known in self.handlers):
                return
            self.handlers = (*self.handlers, handler)
            if isinstance(handler, SpanSink):
                self.sinks = (*self.sinks, handler)
                return
            queue = HandlerQueue(_deliverer(handler), type_name(handler), max_queue_size)
            object.__setattr__(handler, "_evaltrace_queue", queue)
            self.queues = (*(q for q in self.queues if not q.finished), queue)

    def remove(self, handler: InstrumentationHandler) -> None:
        with self._lock:
            self.handlers = tuple(known for known in self.handlers if known is not handler)
            removed: object = handler
            self.sinks = tuple(sink for sink in self.sinks if sink is not removed)
        queue = handler._evaltrace_queue
        if queue is not None:
            queue.close()

    def on_span_end(self, span: ReadableSpan) -> None:
        for sink in self.sinks:
            sink.collect_span(span)
        for queue in self.queues:
            if not queue.closing:
                queue.offer(span)

    def on_value(self, record: WrapRecord) -> None:
        for sink in self.sinks:
            sink.collect_value(record)
        for queue in self.queues:
            if not queue.closing:
                queue.offer(record)

    def flush(self, deadline: float) -> bool:
        delivered = True
        for queue in self.queues:
            delivered = queue.wait(deadline) and delivered
        return delivered


_REGISTRY = _Registry()


def add_handler(
    handler: InstrumentationHandler, *, max_queue_size: int = DEFAULT_HANDLER_QUEUE_SIZE
) -> None:
    """Register a handler for every finished span and ``wrap`` value, across all runs.

    The handler runs on a thread of its own, fed by a bounded queue (see
    :class:`InstrumentationHandler`); adding a registered handler again changes nothing.

    Args:
        handler: The handler.
        max_queue_size: How many spans and values may wait for the handler; beyond that,
            new ones are dropped and counted in :func:`handler_stats`.

    Raises:
        TypeError: ``handler`` is not an :class:`InstrumentationHandler`.
        ConfigurationError: ``max_queue_size`` is not a whole number of at least 1.
    """
    if not isinstance(handler, InstrumentationHandler):
        raise TypeError(
            f"add_handler() takes an InstrumentationHandler, got {type_name(handler)}; "
            "subclass evaltrace.InstrumentationHandler and override on_span"
        )
    if type(max_queue_size) is not int or max_queue_size < 1:
        raise ConfigurationError(
            f"add_handler(max_queue_size=...) expects a whole number of at least 1; got the "
            f"{type_name(max_queue_size)} {safe_repr(max_queue_size)}"
        )
    runtime().spans_now_leave_process()
    _REGISTRY.add(handler, max_queue_size)
    LISTENERS.add(_REGISTRY)


def remove_handler(handler: InstrumentationHandler) -> None:
    """Unregister a handler; unknown handlers are ignored.

    Spans already in the handler's queue are still delivered (:func:`evaltrace.flush`
    waits for them).
    """
    _REGISTRY.remove(handler)


def handler_stats(handler: InstrumentationHandler) -> HandlerStats:
    """How many spans and values ``handler`` was given, raised on, had dropped, has waiting.

    The counts cover the handler's latest registration with :func:`add_handler` (and stay
    readable after :func:`remove_handler`); a handler never added has all counts zero, as
    has a :class:`~evaltrace.MemoryTraceHandler`, which is filled directly.

    Example:
        >>> handler_stats(InstrumentationHandler())
        HandlerStats(delivered=0, failed=0, dropped=0, queued=0)
    """
    queue = handler._evaltrace_queue
    if queue is None:
        return HandlerStats(delivered=0, failed=0, dropped=0, queued=0)
    return queue.stats()
