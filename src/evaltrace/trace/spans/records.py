"""Finished spans as neutral records, whatever produced them.

A :class:`SpanRecord` is a plain copy of one finished OpenTelemetry span: from the SDK
(:meth:`SpanRecord.from_readable`), a JSONL file, an OTLP-JSON or a Phoenix export. The views
of :mod:`evaltrace.trace.spans.views` are read from records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from opentelemetry.attributes import BoundedAttributes

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
        stored = getattr(span, "_attributes", None)
        # A finished span's attributes no longer change: the SDK's own dict is copied at once,
        # not read back key by key through the read-only view (half of this copy; the runner
        # builds one per entry, bench_runner.py's c=50 figure, bench/README.md).
        store = getattr(stored, "_dict", None) if type(stored) is BoundedAttributes else None
        span_events = span.events
        status = span.status
        record = _new_record(cls)
        _set_fields(
            record,
            context.trace_id if context is not None else 0,
            context.span_id if context is not None else 0,
            parent.span_id if parent is not None else None,
            span.name,
            start,
            span.end_time or start,
            store.copy() if type(store) is dict else dict(span.attributes or {}),
            tuple(
                SpanEventRecord(
                    name=event.name,
                    timestamp_ns=event.timestamp,
                    attributes=dict(event.attributes or {}),
                )
                for event in span_events
            )
            if span_events
            else (),
            STATUS_CODES.get(status.status_code.name, "UNSET"),
            status.description,
            span.kind.name,
            span.resource.attributes,
        )
        return record


_new_record = object.__new__

_FIELD_SETTERS: Final = tuple(
    SpanRecord.__dict__[field_.name].__set__ for field_ in dataclasses.fields(SpanRecord)
)
"""The slot setters of a record's fields, in the order they are declared."""


def _set_fields(record: SpanRecord, *values: Any) -> None:
    """Fill the fields of a record made with ``object.__new__``, in declaration order.

    The dataclass's ``__init__`` sets each field of the frozen record through
    ``object.__setattr__``: half of copying a span, once per entry in a run
    (bench_runner.py's c=50 figure, bench/README.md).
    """
    for setter, value in zip(_FIELD_SETTERS, values, strict=True):
        setter(record, value)
