"""Where finished spans go: per-run in-memory captures and global handlers."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.capture.context import _CURRENT, RunScope
from evaltrace.capture.delivery import (
    DEFAULT_HANDLER_QUEUE_SIZE,
    HandlerQueue,
    HandlerStats,
)
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import CaptureBlockError, ConfigurationError

if TYPE_CHECKING:
    from contextvars import Token

    from evaltrace.capture.processor import ScopeSpanProcessor
    from evaltrace.trace import LLMSpan, ObservationNode, ObserveSpan, SpanRecord

__all__ = [
    "InstrumentationHandler",
    "MemoryTraceHandler",
    "add_handler",
    "capture_traces",
    "handler_stats",
    "remove_handler",
]


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


class MemoryTraceHandler(InstrumentationHandler):
    """Keeps the spans and ``wrap`` values of one capture in memory.

    :func:`capture_traces` yields one that receives only the runs started inside its block.
    The views (:attr:`spans`, :attr:`trace`) are built when first asked for, so capturing stays
    cheap.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Appends happen on the hot path without the lock (list.append is atomic); the cached
        # views remember how many spans and values they were built from instead of being
        # invalidated on every append.
        self._raw: list[ReadableSpan | SpanRecord] = []
        self._values: list[WrapRecord] = []
        self._views: tuple[int, int, list[ObserveSpan | LLMSpan]] | None = None
        self._tree: tuple[int, int, list[ObservationNode]] | None = None
        # Inputs and outputs of decorated calls kept off the spans (content capture off).
        self._content: dict[int, dict[str, Any]] = {}

    def _collect_span(self, span: ReadableSpan | SpanRecord) -> None:
        self._raw.append(span)

    def _collect_content(self, span_id: int, key: str, value: Any) -> None:
        self._content.setdefault(span_id, {})[key] = value

    def _with_content(self, view: ObserveSpan | LLMSpan) -> ObserveSpan | LLMSpan:
        private = self._content.get(view.span_id)
        return dataclasses.replace(view, **private) if private else view

    def on_span(self, span: ObserveSpan | LLMSpan) -> None:
        """Keep ``span`` (when this handler is registered with :func:`add_handler`)."""
        self._collect_span(span.record)

    def on_value(self, record: WrapRecord) -> None:
        """Keep ``record``."""
        self._values.append(record)

    @property
    def raw_spans(self) -> list[ReadableSpan | SpanRecord]:
        """The finished spans as delivered, in the order they ended."""
        with self._lock:
            return list(self._raw)

    @property
    def spans(self) -> list[ObserveSpan | LLMSpan]:
        """The finished spans as views, in the order they ended."""
        from evaltrace.trace import SpanRecord, span_view

        with self._lock:
            raws, values = list(self._raw), list(self._values)
            if self._views is None or self._views[:2] != (len(raws), len(values)):
                by_span: dict[int, list[WrapRecord]] = {}
                for value in values:
                    if value.span_id is not None:
                        by_span.setdefault(value.span_id, []).append(value)
                records = [
                    raw if isinstance(raw, SpanRecord) else SpanRecord.from_readable(raw)
                    for raw in raws
                ]
                views = [
                    self._with_content(span_view(r, tuple(by_span.get(r.span_id, ()))))
                    for r in records
                ]
                self._views = (len(raws), len(values), views)
            return list(self._views[2])

    @property
    def named_values(self) -> list[WrapRecord]:
        """The ``wrap(value, purpose=..., name=...)`` records, in the order they were made."""
        with self._lock:
            return list(self._values)

    @property
    def trace(self) -> list[ObservationNode]:
        """The captured spans as a tree: root nodes, children ordered by start time."""
        with self._lock:
            raws, values = list(self._raw), list(self._values)
            if self._tree is None or self._tree[:2] != (len(raws), len(values)):
                self._tree = (len(raws), len(values), self._build(raws, values))
            return self._tree[2]

    @property
    def trace_ids(self) -> list[int]:
        """The distinct trace ids captured, in the order their first span ended."""
        seen: dict[int, None] = {}
        with self._lock:
            for raw in self._raw:
                seen.setdefault(_trace_id(raw), None)
        return list(seen)

    def get_trace(self, trace_id: int | str) -> list[ObservationNode]:
        """The tree of one trace (id as an int or as 32 hex digits)."""
        wanted = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        with self._lock:
            raws = [raw for raw in self._raw if _trace_id(raw) == wanted]
            values = [v for v in self._values if v.trace_id == wanted]
        return self._build(raws, values)

    def _build(
        self, raws: list[ReadableSpan | SpanRecord], values: list[WrapRecord]
    ) -> list[ObservationNode]:
        from evaltrace.trace import build_trace, walk_trace

        trace = build_trace(raws, values)
        if self._content:
            for node in walk_trace(trace):
                node.span = self._with_content(node.span)
        return trace

    def clear(self) -> None:
        """Forget everything captured so far."""
        with self._lock:
            self._raw = []
            self._values = []
            self._content = {}
            self._views = None
            self._tree = None

    def __len__(self) -> int:
        return len(self._raw)


def _trace_id(raw: ReadableSpan | SpanRecord) -> int:
    if isinstance(raw, ReadableSpan):
        context = raw.get_span_context()
        return context.trace_id if context is not None else 0
    return raw.trace_id


class _CaptureBlock:
    """The context manager returned by :func:`capture_traces`."""

    def __init__(self) -> None:
        self.handler = MemoryTraceHandler()
        self._scope: RunScope | None = None
        self._token: Token[RunScope | None] | None = None
        self._processor: ScopeSpanProcessor | None = None

    def __enter__(self) -> MemoryTraceHandler:
        from evaltrace.capture.config import runtime

        if self._scope is not None:
            raise CaptureBlockError(
                "this capture_traces() block is already open; open a new block with "
                "capture_traces() for a nested capture"
            )
        self._processor = runtime().processor
        self._scope = RunScope(self.handler, _CURRENT.get())
        self._token = _CURRENT.set(self._scope)
        return self.handler

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        scope, token, processor = self._scope, self._token, self._processor
        self._scope = self._token = self._processor = None
        problem: str | None
        if scope is None or token is None:
            problem = _NEVER_ENTERED
        else:
            problem = _restore_context(scope, token)
            scope.close()
            if processor is not None:
                processor.release_scope(scope)
        if problem is None:
            return
        if exc is not None:  # the app's own exception goes on; it carries the explanation
            exc.add_note(f"evaltrace: {problem}")
            return
        raise CaptureBlockError(problem)

    async def __aenter__(self) -> MemoryTraceHandler:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


_NEVER_ENTERED = (
    "this capture_traces() block was exited but never entered (or exited twice); use it as "
    "`with capture_traces() as handler:`"
)
_OUT_OF_ORDER = (
    "a capture_traces() block was exited while a block entered inside it (capture_traces() "
    "or eval_inputs()) is still open; blocks must exit in the reverse order they were "
    "entered, so nest them with `with`. The capture has closed and receives nothing more; "
    "the inner block is unaffected"
)
_OTHER_CONTEXT = (
    "a capture_traces() block was exited in another task or thread than the one that "
    "entered it; enter and exit a block in the same task (one `with` or `async with` "
    "statement, not split across tasks, callbacks or fixture set-up and teardown). The "
    "capture has closed and receives nothing more"
)


def _restore_context(scope: RunScope, token: Token[RunScope | None]) -> str | None:
    """Make the scope that enclosed ``scope`` current again; the problem, if that is wrong."""
    current = _CURRENT.get()
    if _live(current) is not scope:
        # Either a block nested in this one is still open here, or this is another context.
        outer = current
        while outer is not None and outer is not scope:
            outer = outer.parent
        return _OUT_OF_ORDER if outer is scope else _OTHER_CONTEXT
    try:
        _CURRENT.reset(token)
    except ValueError:  # the token belongs to another context (a task started in the block)
        return _OTHER_CONTEXT
    restored = _CURRENT.get()
    if restored is not None and restored.closed:
        # An enclosing block was exited out of order earlier: skip its closed capture.
        _CURRENT.set(_live(restored))
    return None


def _live(scope: RunScope | None) -> RunScope | None:
    """``scope`` or its innermost enclosing scope whose block has not exited."""
    while scope is not None and scope.closed:
        scope = scope.parent
    return scope


def capture_traces() -> _CaptureBlock:
    """Capture the spans and ``wrap`` values of the runs started inside the block.

    Usable with ``with`` and ``async with``; yields a :class:`MemoryTraceHandler`. Only spans
    started inside the block (in its task, or in threads that carried its context) are
    captured, so concurrent captures never see each other's runs. Blocks nest: an outer
    capture also receives what inner ones capture.

    When the block exits, the capture closes: it receives nothing more and holds nothing.
    A task started inside the block that is still running afterwards files its later spans
    and values only into the enclosing captures that are still open (or nowhere), and
    dropping the handler frees everything it captured.

    A block is entered and exited once per ``with`` statement, in the task or thread that
    entered it. Misuse raises :class:`~evaltrace.errors.CaptureBlockError` and never
    leaves the capture open: entering a block that is open; exiting one that was never
    entered (or exiting it twice); exiting a block while a block nested in it is still open
    (the outer capture closes, the inner one carries on); exiting it in another task or
    thread (the capture closes; the task that entered it keeps running with a closed
    capture, which records nothing). When the block is already ending with the app's own
    exception, that exception propagates with the explanation added as a note instead.
    Entering a block again after it exited is allowed: the same handler collects again.

    Example:
        >>> from evaltrace import wrap
        >>> @wrap
        ... def answer(question: str) -> str:
        ...     return "4"
        >>> with capture_traces() as handler:
        ...     _ = answer("What is 2+2?")
        >>> [span.name for span in handler.spans]
        ['answer']
    """
    return _CaptureBlock()


# Global handlers -------------------------------------------------------------------------

_HANDLERS: tuple[InstrumentationHandler, ...] = ()
_MEMORY: tuple[MemoryTraceHandler, ...] = ()
"""Registered in-memory handlers: filled on the app's thread (an append costs nothing)."""
_QUEUES: tuple[HandlerQueue, ...] = ()
"""The queues of the other registered handlers, and of removed ones still draining."""
_HANDLERS_LOCK = threading.Lock()


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
    global _HANDLERS, _MEMORY, _QUEUES
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
    from evaltrace.capture.config import runtime

    runtime().spans_now_leave_process()
    with _HANDLERS_LOCK:
        if any(h is handler for h in _HANDLERS):
            return
        _HANDLERS = (*_HANDLERS, handler)
        if isinstance(handler, MemoryTraceHandler):
            _MEMORY = (*_MEMORY, handler)
            return
        queue = HandlerQueue(handler, max_queue_size)
        object.__setattr__(handler, "_evaltrace_queue", queue)
        _QUEUES = (*(q for q in _QUEUES if not q.finished), queue)


def remove_handler(handler: InstrumentationHandler) -> None:
    """Unregister a handler; unknown handlers are ignored.

    Spans already in the handler's queue are still delivered (:func:`evaltrace.flush`
    waits for them).
    """
    global _HANDLERS, _MEMORY
    with _HANDLERS_LOCK:
        _HANDLERS = tuple(h for h in _HANDLERS if h is not handler)
        _MEMORY = tuple(h for h in _MEMORY if h is not handler)
        queue = handler._evaltrace_queue
    if queue is not None:
        queue.close()


def handler_stats(handler: InstrumentationHandler) -> HandlerStats:
    """How many spans and values ``handler`` was given, raised on, had dropped, has waiting.

    The counts cover the handler's latest registration with :func:`add_handler` (and stay
    readable after :func:`remove_handler`); a handler never added has all counts zero, as
    has a :class:`MemoryTraceHandler`, which is filled directly.

    Example:
        >>> handler_stats(InstrumentationHandler())
        HandlerStats(delivered=0, failed=0, dropped=0, queued=0)
    """
    queue = handler._evaltrace_queue
    if queue is None:
        return HandlerStats(delivered=0, failed=0, dropped=0, queued=0)
    return queue.stats()


def dispatch_span(span: ReadableSpan) -> None:
    """Give a finished span to every global handler."""
    for memory in _MEMORY:
        memory._collect_span(span)
    for queue in _QUEUES:
        if not queue.closing:
            queue.offer(span)


def dispatch_value(record: WrapRecord) -> None:
    """Give a ``wrap`` record to every global handler."""
    for memory in _MEMORY:
        memory.on_value(record)
    for queue in _QUEUES:
        if not queue.closing:
            queue.offer(record)


def flush_handlers(deadline: float) -> bool:
    """Wait until the handlers have seen everything given so far, at most until ``deadline``.

    Args:
        deadline: A :func:`time.monotonic` time.

    Returns:
        ``False`` on timeout, or when spans or values were dropped since the last flush.
    """
    delivered = True
    for queue in _QUEUES:
        delivered = queue.wait(deadline) and delivered
    return delivered
