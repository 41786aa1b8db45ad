"""Bounded hand-off from the app's threads to handlers and exporters, with counted results.

Each handler registered with :func:`~evaltrace.trace.add_handler` and each exporter given to
:func:`~evaltrace.init` gets a queue of its own and one daemon thread that empties it. The
app's thread only appends to the queue; when the queue is full the span is dropped and
counted, so a slow consumer never slows the app down or makes memory grow without bound.
Flushing waits for the queues against one deadline and reports anything that was not
delivered.
"""

from __future__ import annotations

import collections
import inspect
import logging
import os
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeAlias, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from evaltrace._safe_text import exception_text, safe_str, type_name
from evaltrace.capture.environment import BatchSettings
from evaltrace.capture.values import WrapRecord

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "DEFAULT_HANDLER_QUEUE_SIZE",
    "Deliver",
    "ExportQueue",
    "ExportStats",
    "HandlerQueue",
    "HandlerStats",
    "export_stats",
]

logger = logging.getLogger("evaltrace")

DEFAULT_HANDLER_QUEUE_SIZE = 2048
"""Spans and values a handler's queue holds before new ones are dropped."""

T = TypeVar("T")

Deliver: TypeAlias = Callable[[ReadableSpan | WrapRecord], Awaitable[None] | None]
"""Gives one finished span or ``wrap`` value to a handler (see :class:`HandlerQueue`)."""


@dataclass(kw_only=True, frozen=True)
class HandlerStats:
    """What one handler was given, as counted by :func:`~evaltrace.trace.handler_stats`."""

    delivered: int
    """Spans and values the handler was given (including those it raised on)."""
    failed: int
    """Of those, how many the handler raised on."""
    dropped: int
    """Spans and values never given to it because its queue was full."""
    queued: int
    """Spans and values waiting in its queue now."""


@dataclass(kw_only=True, frozen=True)
class ExportStats:
    """What the exporters given to :func:`~evaltrace.init` did, counted per exporter.

    A span sent to two exporters counts twice. The counts cover every exporter of the
    process since it started, including ones already shut down.
    """

    exported: int
    """Spans an exporter accepted (its ``export`` reported success)."""
    failed: int
    """Spans in batches an exporter reported as failed or raised on."""
    dropped: int
    """Spans never given to an exporter: its queue was full, or shutdown came first."""
    queued: int
    """Spans waiting to be exported now."""
    exporting: int = 0
    """Spans in the export calls under way now (every span given to an exporter is in
    exactly one of the five counts)."""

    @property
    def in_flight(self) -> int:
        """Spans not yet exported nor lost: queued or being exported."""
        return self.queued + self.exporting

    def __str__(self) -> str:
        """The counts in words; spans in flight are not lost: flush or exit exports them.

        Example:
            >>> print(ExportStats(exported=2, failed=0, dropped=0, queued=0))
            2 spans exported, 0 failed, 0 dropped, 0 in flight
        """
        text = (
            f"{self.exported} spans exported, {self.failed} failed, {self.dropped} dropped, "
            f"{self.in_flight} in flight"
        )
        if self.in_flight:
            text += (
                " (queued or being exported: evaltrace.flush() waits for them; exit exports "
                "them within the shutdown timeout)"
            )
        return text

    def since(self, earlier: ExportStats) -> ExportStats:
        """What happened since ``earlier``.

        The exported, failed and dropped counts are those added since; ``queued`` and
        ``exporting`` are as now.

        Example:
            >>> before = ExportStats(exported=5, failed=1, dropped=0, queued=2)
            >>> ExportStats(exported=9, failed=1, dropped=3, queued=0).since(before)
            ExportStats(exported=4, failed=0, dropped=3, queued=0, exporting=0)
        """
        return ExportStats(
            exported=self.exported - earlier.exported,
            failed=self.failed - earlier.failed,
            dropped=self.dropped - earlier.dropped,
            queued=self.queued,
            exporting=self.exporting,
        )


class _BoundedQueue(Generic[T]):
    """A bounded FIFO filled by the app's threads and emptied by one worker thread."""

    def __init__(self, max_queue_size: int) -> None:
        self._max = max_queue_size
        self._items: collections.deque[T] = collections.deque()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._accepted = 0
        self._finished = 0
        """Items taken off the queue and dealt with (delivered, failed or abandoned)."""
        self._failed = 0
        self._dropped = 0
        self._lost_reported = 0
        self._closed = False
        self._warned_full = False
        self._thread: threading.Thread | None = None

    def _start(self, name: str) -> None:
        """Start the worker thread, and again in a child process after ``fork``."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        if hasattr(os, "register_at_fork"):
            # Threads do not survive fork: the child starts its own worker. A weak reference
            # keeps the hook from holding the queue alive.
            restart = weakref.WeakMethod(self._restart_in_child)

            def after_in_child() -> None:
                method = restart()
                if method is not None:
                    method(name)

            os.register_at_fork(after_in_child=after_in_child)

    def _restart_in_child(self, name: str) -> None:
        # The parent delivers what was queued before the fork; the child starts empty.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._items.clear()
        self._finished = self._accepted
        self._reset_worker_state()
        if not self._closed:
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()

    def _reset_worker_state(self) -> None:
        """Forget what belonged to the parent's worker thread (after ``fork``)."""

    def _run(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _push(self, item: T) -> bool:
        """Append ``item`` (lock held); ``False`` when it was dropped."""
        if self._closed or len(self._items) >= self._max:
            self._dropped += 1
            return False
        self._items.append(item)
        self._accepted += 1
        return True

    def _warn_full(self, what: str) -> None:
        with self._lock:
            if self._warned_full:
                return
            self._warned_full = True
        logger.warning(
            "evaltrace: the queue of %s is full (%d items); spans are dropped and counted "
            "until it catches up (the app is unaffected)",
            what,
            self._max,
        )

    def _lost(self) -> int:
        """What counts against a flush: items dropped or failed (lock held)."""
        return self._failed + self._dropped

    def wait(self, deadline: float) -> bool:
        """Wait until everything accepted so far is dealt with, at most until ``deadline``.

        Returns:
            ``False`` on timeout, or when anything was dropped or failed since the previous
            wait that caught up.
        """
        with self._changed:
            target = self._accepted
            while self._finished < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            lost = self._lost()
            delivered = lost == self._lost_reported
            self._lost_reported = lost
            return delivered


# Handlers --------------------------------------------------------------------------------


class HandlerQueue(_BoundedQueue[ReadableSpan | WrapRecord]):
    """One handler's queue, thread and event loop (see ``evaltrace.InstrumentationHandler``).

    Args:
        deliver: Gives one span or value to the handler, on the queue's thread; may return
            an awaitable, which is awaited before the next item.
        label: Names the handler in the thread's name and in log messages.
        max_queue_size: Items that may wait; beyond that new ones are dropped and counted.
    """

    def __init__(self, deliver: Deliver, label: str, max_queue_size: int) -> None:
        super().__init__(max_queue_size)
        self._deliver_item = deliver
        self.label = label
        """Names the handler in the thread's name and in log messages."""
        self._raised = 0
        self._idle = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._start(f"evaltrace-handler-{label}")

    def _reset_worker_state(self) -> None:
        self._idle = False
        self._loop = None
        self._wakeup = None

    def offer(self, item: ReadableSpan | WrapRecord) -> None:
        """Queue ``item`` for the handler, or drop and count it when the queue is full."""
        with self._lock:
            accepted = self._push(item)
            wake = accepted and self._idle
            if wake:
                self._idle = False
        if wake:
            self._wake()
        elif not accepted and not self._closed:
            self._warn_full(f"handler {self.label}")

    @property
    def closing(self) -> bool:
        """Whether the handler was removed (what is queued is still delivered)."""
        return self._closed

    @property
    def finished(self) -> bool:
        """Whether the handler was removed and everything queued was delivered."""
        return self._closed and not self.running

    def _wake(self) -> None:
        loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None:
            loop.call_soon_threadsafe(wakeup.set)

    def close(self) -> None:
        """Stop taking items; the thread ends once it has delivered what is queued."""
        with self._lock:
            self._closed = True
            wake = self._idle
            self._idle = False
        if wake:
            self._wake()

    def stats(self) -> HandlerStats:
        """The counts so far."""
        with self._lock:
            return HandlerStats(
                delivered=self._finished,
                failed=self._raised,
                dropped=self._dropped,
                queued=len(self._items),
            )

    def _run(self) -> None:
        import asyncio

        asyncio.run(self._main())

    async def _main(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        while True:
            with self._lock:
                if self._items:
                    item: ReadableSpan | WrapRecord | None = self._items.popleft()
                elif self._closed:
                    return
                else:
                    item = None
                    self._idle = True
            if item is None:
                await self._wakeup.wait()
                self._wakeup.clear()
                continue
            raised = False
            try:
                await self._deliver(item)
            except (Exception, asyncio.CancelledError) as exc:  # never breaks the app
                raised = True
                self._report_failure(exc)
            with self._lock:
                self._finished += 1
                self._raised += raised
                self._changed.notify_all()

    async def _deliver(self, item: ReadableSpan | WrapRecord) -> None:
        result = self._deliver_item(item)
        if inspect.isawaitable(result):
            await result

    def _report_failure(self, exc: BaseException) -> None:
        """Log the handler's failure: a warning the first time, at debug level afterwards."""
        if self._raised:
            logger.debug("evaltrace: handler %s failed again: %s", self.label, exception_text(exc))
            return
        logger.warning(
            "evaltrace: handler %s raised %s; the app is unaffected and the handler stays "
            "registered (further failures are logged at debug level)",
            self.label,
            exception_text(exc),
        )


# Exporters -------------------------------------------------------------------------------

_EXPORT_QUEUES: list[ExportQueue] = []
_EXPORT_QUEUES_LOCK = threading.Lock()


class _ExporterLogs(logging.Filter):
    """Keeps what an exporter logs while evaltrace runs it out of the app's log.

    The SDK's exporters log every failed batch (and every retry); a collector that is down
    would fill the app's log. On an export thread of ours, their records go to the queue,
    which logs one warning naming the first reason, and the rest at debug level.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        queue: ExportQueue | None = getattr(_EXPORTING, "queue", None)
        if queue is None:
            return True
        try:
            queue.heard(record.getMessage())
        except (TypeError, ValueError):  # a record whose arguments do not fit its format
            queue.heard(safe_str(record.msg))
        return False


_EXPORTING = threading.local()
"""``queue``: the export queue whose exporter this thread is running, if any."""
_EXPORTER_LOGS = _ExporterLogs()


def _quiet_exporter_logs(exporter: SpanExporter) -> None:
    """Route the log records of ``exporter``'s modules through :class:`_ExporterLogs`."""
    for cls in type(exporter).__mro__:
        if cls.__module__ not in ("builtins", "abc", "typing"):
            logging.getLogger(cls.__module__).addFilter(_EXPORTER_LOGS)


class ExportQueue(_BoundedQueue[ReadableSpan]):
    """One exporter's queue and thread: spans are exported in batches, results counted.

    Sizes follow the OpenTelemetry batch processor's variables (``OTEL_BSP_*``), which
    :func:`~evaltrace.capture.environment.read_batching` reads when an exporter is added.

    A failing exporter is reported once, as a warning that quotes the reason it gave (what
    it logged, or what it raised); later failures are logged at debug level, and a recovery
    at info level. The exporter's own log records on this thread are kept out of the app's
    log (see :class:`_ExporterLogs`).
    """

    def __init__(self, exporter: SpanExporter, batching: BatchSettings) -> None:
        super().__init__(batching.max_queue_size)
        self.exporter = exporter
        self._batch_size = min(batching.max_export_batch_size, self._max)
        self._delay = batching.schedule_delay_millis / 1000
        self._exported = 0
        self._exporting = 0
        self._abandoned = False
        self._due = 0.0
        self._urgent = False
        self._warned_failure = False
        self._failing = False
        self._failed_since_success = 0
        self._said: str | None = None
        _quiet_exporter_logs(exporter)
        self._start(f"evaltrace-export-{type_name(exporter)}")
        with _EXPORT_QUEUES_LOCK:
            _EXPORT_QUEUES.append(self)

    def _reset_worker_state(self) -> None:
        self._exporting = 0
        self._abandoned = False

    def offer(self, span: ReadableSpan) -> None:
        """Queue ``span`` for export, or drop and count it when the queue is full."""
        with self._lock:
            was_empty = not self._items
            accepted = self._push(span)
            if accepted and was_empty:
                self._due = time.monotonic() + self._delay
            if accepted and (was_empty or len(self._items) == self._batch_size):
                self._changed.notify_all()
        if not accepted and not self._closed:
            self._warn_full(f"exporter {type_name(self.exporter)}")

    def request_flush(self) -> None:
        """Export what is queued now, without waiting for a full batch."""
        with self._lock:
            self._urgent = True
            self._changed.notify_all()

    def counts(self) -> ExportStats:
        """The spans exported, failed, dropped, queued and being exported so far."""
        with self._lock:
            return ExportStats(
                exported=self._exported,
                failed=self._failed,
                dropped=self._dropped,
                queued=len(self._items),
                exporting=self._exporting,
            )

    def heard(self, message: str) -> None:
        """Keep what the exporter logged during the export under way (its last word)."""
        self._said = message

    def shutdown(self, deadline: float) -> bool:
        """Export what can be exported before ``deadline``, then stop the exporter.

        Spans still queued at the deadline, and those of an export still under way, are
        dropped (counted, and logged as a warning); an export that returns later is not
        counted again.

        Returns:
            Whether every span given to this exporter since the last flush was exported.
        """
        self.request_flush()
        delivered = self.wait(deadline)
        with self._lock:
            self._closed = True
            abandoned = len(self._items) + self._exporting
            self._items.clear()
            self._dropped += abandoned
            self._finished += abandoned
            self._abandoned = self._exporting > 0
            self._exporting = 0
            self._changed.notify_all()
        if abandoned:
            logger.warning(
                "evaltrace: %d spans were not exported by %s before the shutdown timeout (the "
                "collector may be down or slow); raise init(shutdown_timeout_millis=...) or "
                "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS to wait longer",
                abandoned,
                type_name(self.exporter),
            )
        # The exporter's shutdown may block too (and interrupts an export stuck in retries):
        # it runs on a thread of its own, waited for until the deadline only.
        stopper = threading.Thread(
            target=self._stop_exporter, name="evaltrace-export-shutdown", daemon=True
        )
        stopper.start()
        stopper.join(max(0.0, deadline - time.monotonic()))
        return delivered and not abandoned

    def _stop_exporter(self) -> None:
        try:
            self.exporter.shutdown()
        except Exception as exc:  # a failing exporter never breaks the app
            logger.warning(
                "evaltrace: exporter %s raised on shutdown: %s",
                type_name(self.exporter),
                exception_text(exc),
            )

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    queued = len(self._items)
                    if queued and (
                        queued >= self._batch_size
                        or self._urgent
                        or self._closed
                        or time.monotonic() >= self._due
                    ):
                        break
                    if self._closed:
                        return
                    self._changed.wait(max(0.0, self._due - time.monotonic()) if queued else None)
                batch = [self._items.popleft() for _ in range(min(queued, self._batch_size))]
                if not self._items:
                    self._urgent = False
                self._exporting = len(batch)
            exported = self._export(batch)
            count = len(batch)
            # A failed export leaves reference cycles (exception, traceback, frames) that keep
            # the list passed to the exporter alive until a full garbage collection; emptied,
            # it no longer holds the spans.
            batch.clear()
            with self._changed:
                if self._abandoned:  # shutdown counted this batch as dropped already
                    self._abandoned = False
                    continue
                self._exporting = 0
                if exported:
                    self._exported += count
                else:
                    self._failed += count
                self._finished += count
                self._changed.notify_all()

    def _export(self, batch: list[ReadableSpan]) -> bool:
        # Instrumented HTTP clients must not trace the export requests themselves.
        token = otel_context.attach(
            otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
        )
        self._said = None
        _EXPORTING.queue = self
        try:
            result = self.exporter.export(batch)
        except Exception as exc:  # a failing exporter never breaks the app
            self._report_failure(len(batch), f"raised {exception_text(exc)}")
            return False
        finally:
            _EXPORTING.queue = None
            otel_context.detach(token)
        if result != SpanExportResult.SUCCESS:
            said = f": {self._said}" if self._said else ""
            self._report_failure(len(batch), f"reported {safe_str(result)}{said}")
            return False
        if self._failing:
            self._failing = False
            logger.info(
                "evaltrace: exporter %s exports again (%d spans failed meanwhile)",
                type_name(self.exporter),
                self._failed_since_success,
            )
        self._failed_since_success = 0
        return True

    def _report_failure(self, count: int, what: str) -> None:
        if self._abandoned:  # shutdown gave up on this batch and reported it as dropped
            return
        first = not self._warned_failure
        self._warned_failure = True
        self._failing = True
        self._failed_since_success += count
        logger.log(
            logging.WARNING if first else logging.DEBUG,
            "evaltrace: exporter %s failed to export %d spans (it %s); the app is unaffected "
            "and evaltrace.export_stats() counts the failed spans%s",
            type_name(self.exporter),
            count,
            what,
            " (further failures are logged at debug level)" if first else "",
        )


def export_stats() -> ExportStats:
    """Counts of what the exporters given to :func:`~evaltrace.init` did, since start-up.

    A snapshot: spans wait in a queue for a batch (``OTEL_BSP_SCHEDULE_DELAY``, 5 s), so
    right after the app's calls most are in flight, not exported. Call
    :func:`~evaltrace.flush` first to count them as exported or failed; at exit, evaltrace
    exports them without being asked.

    Example:
        >>> stats = export_stats()
        >>> stats.failed + stats.dropped >= 0
        True
    """
    with _EXPORT_QUEUES_LOCK:
        queues = list(_EXPORT_QUEUES)
    counts = [queue.counts() for queue in queues]
    return ExportStats(
        exported=sum(c.exported for c in counts),
        failed=sum(c.failed for c in counts),
        dropped=sum(c.dropped for c in counts),
        queued=sum(c.queued for c in counts),
        exporting=sum(c.exporting for c in counts),
    )
