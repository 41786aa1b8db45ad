"""Finished spans as neutral records, whatever produced them.

A :class:`SpanRecord` is a plain copy of one finished OpenTelemetry span: from the SDK
(:meth:`SpanRecord.from_readable`), a JSONL file, an OTLP-JSON or a Phoenix export. The views
of :mod:`evaltrace.trace.spans.views` are read from records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanKind
from opentelemetry.trace import StatusCode as OtelStatusCode

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
        if type(span) in _LAID_OUT:
            return _from_fields(span)
        context = span.context
        parent = span.parent
        start = span.start_time or 0
        stored = getattr(span, "_attributes", None)
        store = getattr(stored, "_dict", None) if type(stored) is BoundedAttributes else None
        span_events = span.events
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
            _event_records(span_events) if span_events else (),
            STATUS_CODES.get(span.status.status_code.name, "UNSET"),
            span.status.description,
            span.kind.name,
            span.resource.attributes,
        )
        return record


_new_record = object.__new__

(
    _SET_TRACE_ID,
    _SET_SPAN_ID,
    _SET_PARENT_SPAN_ID,
    _SET_NAME,
    _SET_START_TIME_NS,
    _SET_END_TIME_NS,
    _SET_ATTRIBUTES,
    _SET_EVENTS,
    _SET_STATUS_CODE,
    _SET_STATUS_DESCRIPTION,
    _SET_KIND,
    _SET_RESOURCE_ATTRIBUTES,
) = (SpanRecord.__dict__[field_.name].__set__ for field_ in dataclasses.fields(SpanRecord))
"""The slot setters of a record's fields, in the order they are declared."""


def _set_fields(
    record: SpanRecord,
    trace_id: int,
    span_id: int,
    parent_span_id: int | None,
    name: str,
    start_time_ns: int,
    end_time_ns: int,
    attributes: dict[str, Any],
    events: tuple[SpanEventRecord, ...],
    status_code: StatusCode,
    status_description: str | None,
    kind: str,
    resource_attributes: Mapping[str, Any],
) -> None:
    """Fill the fields of a record made with ``object.__new__``.

    The dataclass's ``__init__`` sets each field of the frozen record through
    ``object.__setattr__``, and a loop over the setters costs half again as much as these
    calls written out: together about half of copying a span, once per entry in a run
    (bench_runner.py's c=50 figure, bench/README.md).
    """
    _SET_TRACE_ID(record, trace_id)
    _SET_SPAN_ID(record, span_id)
    _SET_PARENT_SPAN_ID(record, parent_span_id)
    _SET_NAME(record, name)
    _SET_START_TIME_NS(record, start_time_ns)
    _SET_END_TIME_NS(record, end_time_ns)
    _SET_ATTRIBUTES(record, attributes)
    _SET_EVENTS(record, events)
    _SET_STATUS_CODE(record, status_code)
    _SET_STATUS_DESCRIPTION(record, status_description)
    _SET_KIND(record, kind)
    _SET_RESOURCE_ATTRIBUTES(record, resource_attributes)


def _event_records(events: Iterable[Event]) -> tuple[SpanEventRecord, ...]:
    return tuple(
        SpanEventRecord(
            name=event.name, timestamp_ns=event.timestamp, attributes=dict(event.attributes or {})
        )
        for event in events
    )


_SDK_FIELDS: Final = frozenset(
    {"_context", "_parent", "_name", "_start_time", "_end_time", "_attributes", "_events"}
    | {"_status", "_kind", "_resource"}
)
"""The fields of an SDK span that :func:`_from_fields` reads."""


def _laid_out() -> frozenset[type]:
    """The SDK span classes whose fields are laid out as :func:`_from_fields` reads them."""
    probe = ReadableSpan(
        name="", resource=Resource.get_empty(), attributes=BoundedAttributes(immutable=True)
    )
    if _SDK_FIELDS <= vars(probe).keys() and type(probe.status.status_code) is OtelStatusCode:
        return frozenset({ReadableSpan})
    return frozenset()


_LAID_OUT: Final = _laid_out()

_KIND_NAMES: Final = {kind: kind.name for kind in SpanKind}
_STATUS_NAMES: Final[Mapping[OtelStatusCode, StatusCode]] = {
    code: STATUS_CODES.get(code.name, "UNSET") for code in OtelStatusCode
}


def _from_fields(span: ReadableSpan) -> SpanRecord:
    """A record of an SDK span laid out as :data:`_LAID_OUT` says.

    What the span's properties return, read from the fields behind them: a finished span
    no longer changes. The properties (one call each, the kind and status names through the
    enum's ``name``) were a third of copying the span, once per entry in a run
    (bench_runner.py's c=50 figure, bench/README.md). The fields are read one by one, not
    through the span's ``__dict__``, which would make the dict the interpreter otherwise
    keeps the span without: one more object the garbage collector tracks per row.
    """
    context = span._context
    parent = span._parent
    start = span._start_time or 0
    stored = span._attributes
    store = stored._dict if type(stored) is BoundedAttributes else None
    events = span._events
    status = span._status
    kind = span._kind
    record = _new_record(SpanRecord)
    _set_fields(
        record,
        context.trace_id if context is not None else 0,
        context.span_id if context is not None else 0,
        parent.span_id if parent is not None else None,
        span._name,
        start,
        span._end_time or start,
        # A finished span's attributes no longer change: the SDK's own dict is copied at
        # once, not read back key by key through the read-only view.
        store.copy() if type(store) is dict else dict(stored or {}),
        _event_records(events) if events else (),
        _STATUS_NAMES.get(status.status_code, "UNSET"),
        status.description,
        _KIND_NAMES.get(kind) or kind.name,
        span._resource.attributes,
    )
    return record
