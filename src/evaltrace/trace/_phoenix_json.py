"""Reading Arize Phoenix's span JSON, as ``GET /v1/projects/{project}/spans`` returns it.

A page is ``{"data": [span, ...], "next_cursor": ...}``; a span is::

    {"id": "U3Bhbjox", "name": "answer", "span_kind": "AGENT",
     "context": {"trace_id": "<32 hex>", "span_id": "<16 hex>"}, "parent_id": "<16 hex>" | null,
     "start_time": "2025-01-01T12:00:00.000001+00:00", "end_time": "...",
     "status_code": "OK" | "ERROR" | "UNSET", "status_message": "",
     "attributes": {"input.value": "...", ...},
     "events": [{"name": "...", "timestamp": "<ISO 8601>", "attributes": {...}}]}

Phoenix moves the OpenInference kind out of the attributes into ``span_kind`` (``UNKNOWN`` when
there was none); it is put back. Attributes may also come nested (``{"llm": {"model_name": ...,
"input_messages": [{"message": {...}}]}}``); they are flattened to the dotted names the
instrumentors write, lists of objects by index, as Phoenix itself flattens them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaltrace.capture import conventions as conv
from evaltrace.trace._fields import (
    Invalid,
    hex_id,
    iso_time_ns,
    json_type,
    list_field,
    optional_str,
    str_field,
)
from evaltrace.trace.spans.records import STATUS_CODES, SpanEventRecord, SpanRecord

__all__ = ["is_phoenix_page", "is_phoenix_span", "phoenix_span"]

_NO_KIND = "UNKNOWN"


def is_phoenix_page(data: Any) -> bool:
    """Whether ``data`` is a page of a Phoenix span listing (``{"data": [...]}``)."""
    return isinstance(data, dict) and isinstance(data.get("data"), list)


def is_phoenix_span(data: Mapping[str, Any]) -> bool:
    """Whether a span object is Phoenix's (its ids are under ``context``)."""
    return "context" in data


def phoenix_span(data: Mapping[str, Any]) -> SpanRecord:
    """Read one span of Phoenix's span JSON."""
    context = data.get("context")
    if not isinstance(context, dict):
        raise Invalid(f'field "context" must be an object, found {json_type(context)}')
    parent = data.get("parent_id")
    start = iso_time_ns(data.get("start_time"), "start_time")
    end = data.get("end_time")
    code = STATUS_CODES.get(str(data.get("status_code") or "UNSET").upper())
    if code is None:
        raise Invalid(
            f'field "status_code" must be "UNSET", "OK" or "ERROR", found {data["status_code"]!r}'
        )
    attributes = _attributes(data.get("attributes"), "attributes")
    kind = data.get("span_kind")
    if isinstance(kind, str) and kind and kind.upper() != _NO_KIND:
        attributes.setdefault(conv.SPAN_KIND, kind)
    events = []
    for index, event in enumerate(list_field(data, "events")):
        where = f"events[{index}]"
        if not isinstance(event, dict):
            raise Invalid(f'field "{where}" must be an object, found {json_type(event)}')
        time = event.get("timestamp")
        events.append(
            SpanEventRecord(
                name=str_field(event, "name", where=where),
                timestamp_ns=iso_time_ns(time, f"{where}.timestamp") if time else 0,
                attributes=_attributes(event.get("attributes"), f"{where}.attributes"),
            )
        )
    return SpanRecord(
        trace_id=hex_id(context.get("trace_id"), 32, "context.trace_id"),
        span_id=hex_id(context.get("span_id"), 16, "context.span_id"),
        parent_span_id=hex_id(parent, 16, "parent_id") if parent else None,
        name=str_field(data, "name"),
        start_time_ns=start,
        end_time_ns=iso_time_ns(end, "end_time") if end else start,
        attributes=attributes,
        events=tuple(events),
        status_code=code,
        status_description=optional_str(data.get("status_message"), "status_message") or None,
    )


def _attributes(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f'field "{field}" must be an object, found {json_type(value)}')
    flat: dict[str, Any] = {}
    pending: list[tuple[str, Any]] = list(reversed(value.items()))
    while pending:
        key, item = pending.pop()
        if isinstance(item, dict):
            pending.extend((f"{key}.{name}", inner) for name, inner in reversed(item.items()))
        elif isinstance(item, list) and any(isinstance(element, dict) for element in item):
            pending.extend(
                (f"{key}.{index}", inner) for index, inner in reversed(list(enumerate(item)))
            )
        elif isinstance(item, list):
            flat[key] = tuple(item)
        elif item is not None:
            flat[key] = item
    return flat
