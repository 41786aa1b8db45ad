"""Where the capture floor hands finished spans and ``wrap`` values to the floors above.

The capture floor makes spans and records; reading them (span views, trees, the handlers
that receive views) is the trace floor's work. Two small protocols keep that direction:

* a :class:`SpanSink` is what one ``capture_traces()`` block delivers to (its in-memory
  handler): the run scope holds it, and the span processor fills it on the app's thread;
* a :class:`SpanListener` sees every finished span and every ``wrap`` value across runs (the
  registry of handlers added with ``add_handler``); it is registered in :data:`LISTENERS`.

Example:
    >>> class Count:
    ...     spans = 0
    ...     def on_span_end(self, span): Count.spans += 1
    ...     def on_value(self, record): pass
    ...     def flush(self, deadline): return True
    >>> listener = Count()
    >>> LISTENERS.add(listener)
    >>> LISTENERS.remove(listener)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from evaltrace.capture.values import WrapRecord

__all__ = ["LISTENERS", "Listeners", "SpanListener", "SpanSink"]


@runtime_checkable
class SpanSink(Protocol):
    """What one capture delivers to; every method runs on the app's thread and must be cheap."""

    def collect_span(self, span: ReadableSpan) -> None:
        """Keep a finished span of the capture."""

    def collect_value(self, record: WrapRecord) -> None:
        """Keep a value ``wrap`` recorded in the capture."""

    def collect_content(self, span_id: int, key: str, value: Any) -> None:
        """Keep a decorated call's ``input`` or ``output`` that is not put on the span."""


class SpanListener(Protocol):
    """What sees every finished span and ``wrap`` value, whichever capture it belongs to."""

    def on_span_end(self, span: ReadableSpan) -> None:
        """Take a finished span (on the app's thread: hand slow work to another thread)."""

    def on_value(self, record: WrapRecord) -> None:
        """Take a recorded ``wrap`` value (on the app's thread)."""

    def flush(self, deadline: float) -> bool:
        """Wait until what was taken so far is processed, at most until ``deadline``.

        Args:
            deadline: A :func:`time.monotonic` time.

        Returns:
            Whether everything was processed, and nothing was dropped, in time.
        """


class Listeners:
    """The registered :class:`SpanListener` objects; reading them takes no lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: tuple[SpanListener, ...] = ()
        """The listeners now registered (a new tuple on every change, so it reads safely)."""

    def add(self, listener: SpanListener) -> None:
        """Register ``listener``; registering it again changes nothing."""
        with self._lock:
            if all(known is not listener for known in self.current):
                self.current = (*self.current, listener)

    def remove(self, listener: SpanListener) -> None:
        """Unregister ``listener``; an unknown one is ignored."""
        with self._lock:
            self.current = tuple(known for known in self.current if known is not listener)


LISTENERS = Listeners()
"""The process-wide listeners the span processor and ``wrap`` deliver to."""
