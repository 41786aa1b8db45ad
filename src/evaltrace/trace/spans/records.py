"""Finished spans as neutral records, whatever produced them.

A :class:`SpanRecord` is a plain copy of one finished OpenTelemetry span: from the SDK
(:meth:`SpanRecord.from_readable`), a JSONL file, an OTLP-JSON or a Phoenix export. The views
of :mod:`evaltrace.trace.spans.views` are read from records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["STATUS_CODES", "SpanEventRecord", "SpanRecord", "StatusCode"]

StatusCode: TypeAlias = Literal["UNSET", "OK", "ERROR"]
"""The OpenTelemetry status code of a span, by name."""

STATUS_CODES: Mapping[str, StatusCode] = {"OK": "OK", "ERROR": "ERROR", "UNSET": "UNSET"}
"""Each status code by its name, for readers of spans from any source."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanEventRecord:
    """One event of a finished span."""

    name: str
    """The event name (``exception``, ``evaltrace.wrap``, ``gen_ai.choice``, ...)."""
    timestamp_ns: int
    """When the event happened, in nanoseconds since the Unix epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """The event attributes as recorded."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanRecord:
    """A neutral copy of one finished span, independent of the OpenTelemetry SDK classes.

    Example:
        >>> record = SpanRecord(trace_id=1, span_id=2, name="answer",
        ...                     start_time_ns=0, end_time_ns=1_000_000)
        >>> record.status_code
        'UNSET'
    """

    trace_id: int
    """The 128-bit trace id."""
    span_id: int
    """The 64-bit span id."""
    parent_span_id: int | None = None
    """The parent's span id, or ``None`` for a span started without a parent."""
    name: str
    """The span name."""
    start_time_ns: int
    """Start, in nanoseconds since the Unix epoch."""
    end_time_ns: int
    """End, in nanoseconds since the Unix epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """The span attributes as recorded (sequences are tuples)."""
    events: tuple[SpanEventRecord, ...] = ()
    """The span events, in the order they were added."""
    status_code: StatusCode = "UNSET"
    """``"UNSET"``, ``"OK"`` or ``"ERROR"``."""
    status_description: str | None = None
    """The status description (set with ``"ERROR"``), if any."""
    kind: str = "INTERNAL"
    """The OpenTelemetry span kind name: ``INTERNAL``, ``SERVER``, ``CLIENT``, ..."""
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    """The attributes of the resource that produced the span (``service.name``, ...); shared
    with the resource, which is immutable, not copied per span."""

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> SpanRecord:
        """Copy a finished SDK span.

        Args:
            span: A span handed to a span processor or exporter.

        Returns:
            The record.
        """
        context = span.context
        parent = span.parent
        start = span.start_time or 0
        return cls(
            trace_id=context.trace_id if context is not None else 0,
            span_id=context.span_id if context is not None else 0,
            parent_span_id=parent.span_id if parent is not None else None,
            name=span.name,
            start_time_ns=start,
            end_time_ns=span.end_time or start,
            attributes=dict(span.attributes or {}),
            events=tuple(
                SpanEventRecord(
                    name=event.name,
                    timestamp_ns=event.timestamp,
                    attributes=dict(event.attributes or {}),
                )
                for event in span.events
            ),
            status_code=STATUS_CODES.get(span.status.status_code.name, "UNSET"),
            status_description=span.status.description,
            kind=span.kind.name,
            resource_attributes=span.resource.attributes,
        )
