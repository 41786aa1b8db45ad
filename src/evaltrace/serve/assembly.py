"""Spans grouped into traces as they arrive, until each trace is complete: :class:`Assembler`.

OTLP sends each span once it has ended, traces in pieces, across requests and processes. A
trace is complete when its root span (the one without a parent) has arrived and no span of it
arrived for the quiet period; one whose root never arrives is taken as it is after the trace
timeout. What waits is bounded by a count of traces and a count of bytes (each span as it
was received): past either, the trace that waited longest since its last span is evicted,
and counted. Its spans were forwarded all the same: only its scoring is lost.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from evaltrace.serve.metrics import Metrics
from evaltrace.serve.otlp import STATUS_ERROR

__all__ = ["Assembler", "PendingTrace"]

_SPAN_OVERHEAD = 120
"""Bytes one held span costs beyond its encoding (the tuple, the list slot, the bytes object)."""


@dataclass(slots=True, kw_only=True)
class PendingTrace:
    """A trace being assembled: its spans so far, as received."""

    trace_id: bytes
    """The 16-byte trace id."""
    first_seen: float
    """When its first span arrived (monotonic seconds)."""
    last_seen: float
    """When its latest span arrived."""
    spans: list[tuple[bytes, bytes]] = field(default_factory=list)
    """Each span as ``(its resource's encoding, its own encoding)``."""
    size: int = 0
    """The bytes it holds."""
    root: bytes | None = None
    """The root span's encoding, once it arrived."""
    root_resource: bytes = b""
    """The root span's resource's encoding."""
    error: bool = False
    """Whether a span of it has the error status."""


class Assembler:
    """Holds spans by trace until each trace is complete, within bounds.

    Args:
        quiet_period: Seconds without a new span after which a trace with its root is done.
        trace_timeout: Seconds after its first span after which a trace without a root is
            taken as it is.
        max_traces: Most traces held.
        max_bytes: Most bytes of spans held.
        metrics: Where evictions are counted.
    """

    def __init__(
        self,
        *,
        quiet_period: float,
        trace_timeout: float,
        max_traces: int,
        max_bytes: int,
        metrics: Metrics,
    ) -> None:
        self.quiet_period = quiet_period
        self.trace_timeout = trace_timeout
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self.metrics = metrics
        self.size = 0
        """The bytes held."""
        # Least recently added to first: the front is both what may be done and what to evict.
        self._traces: OrderedDict[bytes, PendingTrace] = OrderedDict()

    def __len__(self) -> int:
        return len(self._traces)

    def add(self, resource: bytes, span: Span, now: float) -> None:
        """Hold ``span`` (under ``resource``, an encoded resource) with its trace's other spans."""
        trace_id = span.trace_id
        encoded = span.SerializeToString()
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = PendingTrace(
                trace_id=trace_id, first_seen=now, last_seen=now
            )
        else:
            self._traces.move_to_end(trace_id)
            trace.last_seen = now
        trace.spans.append((resource, encoded))
        cost = len(encoded) + _SPAN_OVERHEAD
        trace.size += cost
        self.size += cost
        if not span.parent_span_id:
            trace.root = encoded
            trace.root_resource = resource
        if span.status.code == STATUS_ERROR:
            trace.error = True
        while self._traces and (len(self._traces) > self.max_traces or self.size > self.max_bytes):
            _, evicted = self._traces.popitem(last=False)
            self.size -= evicted.size
            self.metrics.traces_evicted.add()

    def ready(self, now: float) -> list[PendingTrace]:
        """Take the traces that are complete at ``now``: root arrived then quiet, or timed out."""
        done: list[PendingTrace] = []
        for trace in self._traces.values():
            if now - trace.last_seen < self.quiet_period:
                break  # the rest had a span more recently
            if trace.root is not None or now - trace.first_seen >= self.trace_timeout:
                done.append(trace)
        for trace in done:
            del self._traces[trace.trace_id]
            self.size -= trace.size
        self.metrics.traces_assembled.add(len(done))
        return done

    def drain(self) -> list[PendingTrace]:
        """Take every trace held, complete or not (the gateway is stopping)."""
        done = list(self._traces.values())
        self._traces.clear()
        self.size = 0
        self.metrics.traces_assembled.add(len(done))
        return done
