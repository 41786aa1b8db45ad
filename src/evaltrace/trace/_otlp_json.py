"""Reading OTLP-JSON: spans as the OpenTelemetry protocol's JSON mapping writes them.

Both spellings of the field names are read: the lowerCamelCase of the OTLP/HTTP JSON encoding
(``traceId``, ``startTimeUnixNano``, ``stringValue``) and the protobuf field names in snake_case
(``trace_id``, ``start_time_unix_nano``, ``string_value``), which protobuf's own JSON printer
can write and Arize Phoenix's ``/spans/otlpv1`` endpoint returns. A value object may list every
kind of value with all but one null, as Phoenix writes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from evaltrace.trace._fields import Invalid, hex_id, integer, json_type, str_field
from evaltrace.trace.spans import SpanEventRecord, SpanRecord, StatusCode

__all__ = ["is_otlp_document", "is_otlp_span", "otlp_records", "otlp_span"]

_SPAN_KINDS = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_CODES: tuple[StatusCode, ...] = ("UNSET", "OK", "ERROR")
_VALUE_KINDS = (
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
)
_CAPITAL = re.compile(r"(?=[A-Z])")


def _snake(name: str) -> str:
    return _CAPITAL.sub("_", name).lower()


def _key(data: Mapping[str, Any], name: str) -> str:
    """``name`` as ``data`` spells it: lowerCamelCase, else snake_case when only that is there."""
    if data.get(name) is None:
        snake = _snake(name)
        if data.get(snake) is not None:
            return snake
    return name


def _get(data: Mapping[str, Any], name: str) -> Any:
    return data.get(_key(data, name))


def is_otlp_document(data: Any) -> bool:
    """Whether ``data`` is an OTLP-JSON export (an object with ``resourceSpans``)."""
    return isinstance(data, dict) and _get(data, "resourceSpans") is not None


def is_otlp_span(data: Mapping[str, Any]) -> bool:
    """Whether a span object is written in OTLP-JSON (rather than evaltrace's JSONL).

    Both write ``trace_id`` in snake_case; the OTLP times are ``startTimeUnixNano``.
    """
    return "traceId" in data or _get(data, "startTimeUnixNano") is not None


def otlp_records(document: Mapping[str, Any]) -> Iterator[tuple[str, SpanRecord]]:
    """The spans of an OTLP-JSON export, with their resource's attributes and their places."""
    for i, resource_spans in enumerate(_list(document, "resourceSpans", "")):
        where = f"{_key(document, 'resourceSpans')}[{i}]"
        resource = _object(resource_spans, "resource", where)
        resource_attributes = _attributes(
            _get(resource, "attributes"), f"{where}.{_key(resource_spans, 'resource')}"
        )
        scopes_key = "scopeSpans"
        if _get(resource_spans, scopes_key) is None:  # the name before OTLP 0.19
            scopes_key = "instrumentationLibrarySpans"
        for j, scope_spans in enumerate(_list(resource_spans, scopes_key, where)):
            scope_where = f"{where}.{_key(resource_spans, scopes_key)}[{j}]"
            for k, span in enumerate(_list(scope_spans, "spans", scope_where)):
                span_where = f"{scope_where}.spans[{k}]"
                yield span_where, otlp_span(span, span_where, resource_attributes)


def otlp_span(span: Any, where: str, resource: Mapping[str, Any]) -> SpanRecord:
    """Read one OTLP-JSON span object; ``where`` is its place, for messages."""
    if not isinstance(span, dict):
        raise Invalid(f"{where} must be an object, found {json_type(span)}")
    prefix = f"{where}." if where else ""
    parent = _get(span, "parentSpanId")
    start = integer(_get(span, "startTimeUnixNano"), prefix + _key(span, "startTimeUnixNano"))
    end = _get(span, "endTimeUnixNano")
    status = _object(span, "status", where)
    events = []
    for index, event in enumerate(_list(span, "events", where)):
        event_where = f"{prefix}events[{index}]"
        if not isinstance(event, dict):
            raise Invalid(f"{event_where} must be an object, found {json_type(event)}")
        time = _get(event, "timeUnixNano")
        events.append(
            SpanEventRecord(
                name=str_field(event, "name", where=event_where),
                timestamp_ns=(
                    integer(time, f"{event_where}.{_key(event, 'timeUnixNano')}") if time else 0
                ),
                attributes=_attributes(_get(event, "attributes"), event_where),
            )
        )
    message = status.get("message")
    return SpanRecord(
        trace_id=hex_id(_get(span, "traceId"), 32, prefix + _key(span, "traceId")),
        span_id=hex_id(_get(span, "spanId"), 16, prefix + _key(span, "spanId")),
        parent_span_id=(
            hex_id(parent, 16, prefix + _key(span, "parentSpanId")) if parent else None
        ),
        name=str_field(span, "name", where=where),
        start_time_ns=start,
        end_time_ns=integer(end, prefix + _key(span, "endTimeUnixNano")) if end else start,
        attributes=_attributes(span.get("attributes"), where),
        events=tuple(events),
        status_code=_enum(status.get("code"), _STATUS_CODES, "STATUS_CODE_", "UNSET"),
        status_description=message if isinstance(message, str) and message else None,
        kind=_enum(span.get("kind"), _SPAN_KINDS, "SPAN_KIND_", "INTERNAL"),
        resource_attributes=resource,
    )


def _attributes(items: Any, where: str) -> dict[str, Any]:
    place = f"{where}.attributes" if where else "attributes"
    if items is None:
        return {}
    if not isinstance(items, list):
        raise Invalid(f"{place} must be a list, found {json_type(items)}")
    attributes: dict[str, Any] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise Invalid(f'{place}[{index}] must be an object with a "key" string and a "value"')
        value = _value(item.get("value"), f"{place}[{index}].value")
        if value is not None:
            attributes[item["key"]] = value
    return attributes


def _value(value: Any, where: str) -> Any:
    """Decode an OTLP ``AnyValue``; an empty value gives ``None``."""
    if not isinstance(value, dict):
        return None
    present = [
        (kind, value[key])
        for kind in _VALUE_KINDS
        if (key := _key(value, kind)) in value and value[key] is not None
    ]
    if not present:
        if any(item is not None for item in value.values()):
            raise Invalid(
                f"{where} has no known value type ({', '.join(_VALUE_KINDS)}): "
                f"found keys {sorted(value)}"
            )
        return None
    kind, item = present[0]
    if kind == "stringValue":
        return str(item)
    if kind == "boolValue":
        return item is True or item == "true"
    if kind == "intValue":
        return integer(item, f"{where}.{_key(value, kind)}")
    if kind == "doubleValue":
        try:
            return float(item)
        except (TypeError, ValueError):
            raise Invalid(f"{where}.{_key(value, kind)} must be a number") from None
    if kind == "arrayValue":
        values = (_get(item, "values") if isinstance(item, dict) else None) or []
        return tuple(
            _value(element, f"{where}.arrayValue[{i}]") for i, element in enumerate(values)
        )
    if kind == "kvlistValue":
        values = (_get(item, "values") if isinstance(item, dict) else None) or []
        return _attributes(values, where)
    return str(item)  # bytesValue: kept as the text the file holds


def _enum(value: Any, names: tuple[Any, ...], prefix: str, default: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str):
        name = value.removeprefix(prefix)
        if name in names:
            return name
    return default


def _list(data: Any, name: str, where: str) -> list[Any]:
    key = _key(data, name) if isinstance(data, dict) else name
    value = data.get(key) if isinstance(data, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        location = f"{where}.{key}" if where else key
        raise Invalid(f"{location} must be a list, found {json_type(value)}")
    return value


def _object(data: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    key = _key(data, name)
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        location = f"{where}.{key}" if where else key
        raise Invalid(f"{location} must be an object, found {json_type(value)}")
    return value
