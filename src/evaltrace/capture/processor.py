"""The span processor that files each finished span under the capture it belongs to."""

from __future__ import annotations

import logging
import time

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import SpanContext

from evaltrace.capture.context import RunScope, captures_open, current_scope
from evaltrace.capture.delivery import ExportQueue
from evaltrace.capture.environment import BatchSettings
from evaltrace.capture.listeners import LISTENERS

__all__ = ["ScopeSpanProcessor"]

logger = logging.getLogger("evaltrace")


class ScopeSpanProcessor(SpanProcessor):
    """Routes spans to the capture that was current when they started, then onwards.

    A span started while a run scope is current belongs to the innermost capture of that
    scope that is still open; a span started with no scope current belongs to the open
    capture whose run started its trace (spans started with an explicit parent context, e.g.
    by callbacks of third-party instrumentors). Any other span belongs to no capture. Every
    finished span then goes to the global handlers and to the exporters given to ``init``.

    What it remembers is bounded by the captures open now: a span is forgotten when it
    ends, a trace when the capture its run started in exits.
    """

    def __init__(self, shutdown_timeout_millis: int) -> None:
        self._by_span: dict[int, RunScope] = {}
        self._by_trace: dict[int, RunScope] = {}
        self.unattributed_spans = 0
        """Spans that started outside every capture while a capture was open."""
        self.warned_unattributed = False
        """Whether the one warning about :attr:`unattributed_spans` was logged."""
        self.detached = False
        """Set by :func:`~evaltrace.shutdown`: the processor ignores every span from then on."""
        self.exports: tuple[ExportQueue, ...] = ()
        """The queues of the exporters given to ``init``."""
        self.shutdown_timeout_millis = shutdown_timeout_millis
        """How long :meth:`shutdown` (called by the provider at exit) may take."""
        self._shut_down = False

    def add_exporter(self, exporter: SpanExporter, batching: BatchSettings) -> None:
        """Send every sampled finished span to ``exporter`` too, through a queue of its own.

        The queue batches spans as ``batching`` says.
        """
        self.exports = (*self.exports, ExportQueue(exporter, batching))

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Remember the capture of ``span``."""
        if self.detached:
            return
        current = current_scope()
        span_context = span.context
        if current is None:
            if not captures_open():
                return
            scope = self._by_trace.get(span_context.trace_id)
            if scope is None:
                self._report_unattributed(span)
                return
        elif current.handler is not None:  # the capture itself (an open one has a handler)
            scope = current
        else:
            # None for an inputs-only scope outside captures, or a capture that has closed.
            scope = current.open_capture()
            if scope is None:
                return
        self._by_span[span_context.span_id] = scope
        parent = span.parent
        if parent is None or not parent.is_valid:
            # One dict assignment is atomic; trace ids are unique, so no lock is needed here.
            trace_id = span_context.trace_id
            self._by_trace[trace_id] = scope
            scope.trace_ids.append(trace_id)
            if scope.closed:  # it closed meanwhile, maybe before release_scope saw this trace
                self._by_trace.pop(trace_id, None)

    def _report_unattributed(self, span: Span) -> None:
        self.unattributed_spans += 1
        if not self.warned_unattributed:
            self.warned_unattributed = True
            logger.warning(
                "evaltrace: span %r started outside any capture_traces() block while a "
                "capture was open, so no capture receives it. If it runs in a thread you "
                "started, start the thread with evaltrace.capture.propagate(fn) (or use "
                "evaltrace.capture.ContextThreadPoolExecutor) to carry the capture into it.",
                span.name,
            )

    def on_end(self, span: ReadableSpan) -> None:
        """Deliver ``span`` to its capture's handlers, the global handlers and exporters."""
        if self.detached:
            return
        span_context = span.context
        if span_context is None:
            return
        scope = self._by_span.pop(span_context.span_id, None)
        if scope is not None:
            for sink in scope.chain:  # empty once the capture has closed
                sink.collect_span(span)
        for listener in LISTENERS.current:
            listener.on_span_end(span)
        if self.exports and span_context.trace_flags.sampled:
            for queue in self.exports:
                queue.offer(span)

    def delivers(self, span_context: SpanContext) -> bool:
        """Whether the open span ``span_context`` will reach a capture that is still open."""
        scope = self._by_span.get(span_context.span_id)
        return scope is not None and bool(scope.chain)

    def captures_trace(self, trace_id: int) -> bool:
        """Whether the trace ``trace_id`` was started inside a capture that is still open."""
        return trace_id in self._by_trace

    @property
    def capturing(self) -> bool:
        """Whether a capture block is open (a span of another thread is then counted)."""
        # The count the capture scopes keep, not one of the processor's own under a second
        # lock: an empty capture block 3.5-4.4 us instead of 4.6-5.0 (bench_runner.py c=50 figure).
        return captures_open()

    def release_scope(self, scope: RunScope) -> None:
        """Forget the traces started in ``scope`` (called when its capture block exits).

        The scope has closed: a trace that starts in it from now on is forgotten by
        :meth:`on_start` itself, so no lock is needed against it.
        """
        for trace_id in scope.trace_ids:
            if self._by_trace.get(trace_id) is scope:
                self._by_trace.pop(trace_id, None)
        scope.trace_ids.clear()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until handlers and exporters have taken every span delivered so far.

        One deadline covers everything: the exporters start sending at once, then the
        handlers and the exporters are waited for, each only until the deadline.

        Returns:
            ``False`` when the deadline passed first, or when a span was dropped or failed to
            export since the previous flush.
        """
        deadline = time.monotonic() + timeout_millis / 1000
        for queue in self.exports:
            queue.request_flush()
        delivered = _flush_listeners(deadline)
        for queue in self.exports:
            delivered = queue.wait(deadline) and delivered
        return delivered

    def shutdown(self) -> None:
        """Deliver what can be delivered within the shutdown timeout, then stop the exporters.

        The tracer provider calls this at process exit; it never takes longer than
        :attr:`shutdown_timeout_millis`, whatever the collector or the handlers do.
        """
        self.shutdown_within(self.shutdown_timeout_millis)

    def shutdown_within(self, timeout_millis: float) -> bool:
        """:meth:`shutdown` with a given timeout; whether everything was delivered."""
        if self._shut_down:
            return True
        self._shut_down = True
        deadline = time.monotonic() + timeout_millis / 1000
        for queue in self.exports:
            queue.request_flush()
        delivered = _flush_listeners(deadline)
        for queue in self.exports:
            delivered = queue.shutdown(deadline) and delivered
        return delivered


def _flush_listeners(deadline: float) -> bool:
    """Flush every listener (each until ``deadline``); whether all of them finished."""
    flushed = True
    for listener in LISTENERS.current:
        flushed = listener.flush(deadline) and flushed
    return flushed
