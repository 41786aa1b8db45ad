"""Saving traces as JSON lines and loading them back, or from OTLP-JSON exports.

The JSONL format holds one span per line::

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | null,
     "name": "answer", "kind": "INTERNAL", "start_time_ns": 1700000000000000000,
     "end_time_ns": 1700000000012000000, "status": {"code": "OK", "description": null},
     "attributes": {...}, "events": [{"name": ..., "timestamp_ns": ..., "attributes": {...}}],
     "resource": {...}, "named_values": [...]}

``named_values`` is optional: it is written only when the values ``wrap`` recorded differ from
what the span's own ``evaltrace.wrap`` events say (for instance when a value was truncated on
the span but kept whole in memory). Files are read as data only: JSON, never pickle.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from evaltrace.capture.values import Purpose, WrapRecord
from evaltrace.errors import TraceFormatError
from evaltrace.trace.spans import SpanEventRecord, SpanRecord, StatusCode, parse_named_values
from evaltrace.trace.tree import ObservationNode, build_trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["load_traces", "save_traces", "span_to_json"]

_HEX = re.compile(r"[0-9a-fA-F]+")
_STATUS_CODES: Mapping[str, StatusCode] = {"UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}
_PURPOSES: Mapping[str, Purpose] = {"input": "input", "output": "output", "state": "state"}
_OTLP_SPAN_KINDS = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_OTLP_STATUS_CODES: tuple[StatusCode, ...] = ("UNSET", "OK", "ERROR")
_JSONL_HINT = (
    "Each line must be one JSON object describing a span (as save_traces writes) "
    'or an OTLP-JSON object with "resourceSpans".'
)


class _Invalid(ValueError):
    """A problem in one span object; the caller adds the file and line."""


def save_traces(
    trace_or_spans: Iterable[ObservationNode | ReadableSpan | SpanRecord],
    path: str | os.PathLike[str],
) -> int:
    """Write a trace (its roots) or finished spans to a JSON-lines file, one span per line.

    Args:
        trace_or_spans: The roots of a trace (every node below them is written), or SDK spans
            or records.
        path: The file to write; it is replaced.

    Returns:
        The number of spans written.

    Example:
        >>> save_traces(trace, "run.jsonl")  # doctest: +SKIP
        3
    """
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        for item in trace_or_spans:
            if isinstance(item, ObservationNode):
                for node in item.walk():
                    record = node.span.record
                    values = node.span.named_values
                    written = values if values != parse_named_values(record) else ()
                    file.write(_line(_record_json(record, written)))
                    count += 1
            else:
                record = item if isinstance(item, SpanRecord) else SpanRecord.from_readable(item)
                file.write(_line(_record_json(record, ())))
                count += 1
    return count


def span_to_json(span: ReadableSpan | SpanRecord) -> str:
    """Return one finished span as a line of the JSONL trace format (without the newline).

    Useful to exporters that append spans to a file :func:`load_traces` can read.
    """
    record = span if isinstance(span, SpanRecord) else SpanRecord.from_readable(span)
    return _line(_record_json(record, ())).rstrip("\n")


def load_traces(path: str | os.PathLike[str]) -> list[ObservationNode]:
    """Read a trace file into a trace tree.

    Reads the JSONL format of :func:`save_traces`, an OTLP-JSON export (a document with
    ``resourceSpans``, pretty-printed or not) or JSON lines of such documents (the
    OpenTelemetry Collector's file exporter). Named values come from the spans'
    ``evaltrace.wrap`` events, or from ``named_values`` where :func:`save_traces` wrote them.

    Args:
        path: The file.

    Returns:
        The roots, as :func:`~evaltrace.trace.build_trace` returns them.

    Raises:
        TraceFormatError: The file is not UTF-8 JSON of one of those shapes; the message names
            the file, the line and what is wrong.
        OSError: The file cannot be read.

    Example:
        >>> trace = load_traces("run.jsonl")  # doctest: +SKIP
    """
    name = os.fspath(path)
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"{name}: not UTF-8 text (invalid byte at offset {exc.start}). Trace files are "
            "UTF-8 JSON lines or OTLP-JSON."
        ) from None
    records: list[SpanRecord] = []
    values: list[WrapRecord] = []
    for where, document in _documents(name, text):
        try:
            if isinstance(document, dict) and "resourceSpans" in document:
                records.extend(_otlp_records(document))
            else:
                record, named = _record_from_json(document)
                records.append(record)
                values.extend(named)
        except _Invalid as exc:
            raise TraceFormatError(f"{where}: {exc}") from None
    return build_trace(records, values)


# --- writing ------------------------------------------------------------------------------------


def _line(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as escapes
        text = json.dumps(data, separators=(",", ":"), default=str)
    return text + "\n"


def _record_json(record: SpanRecord, named_values: Iterable[WrapRecord]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "trace_id": f"{record.trace_id:032x}",
        "span_id": f"{record.span_id:016x}",
        "parent_span_id": (
            None if record.parent_span_id is None else f"{record.parent_span_id:016x}"
        ),
        "name": record.name,
        "kind": record.kind,
        "start_time_ns": record.start_time_ns,
        "end_time_ns": record.end_time_ns,
        "status": {"code": record.status_code, "description": record.status_description},
        "attributes": _attributes_json(record.attributes),
        "events": [
            {
                "name": event.name,
                "timestamp_ns": event.timestamp_ns,
                "attributes": _attributes_json(event.attributes),
            }
            for event in record.events
        ],
        "resource": _attributes_json(record.resource_attributes),
    }
    values = [
        {
            "name": value.name,
            "purpose": value.purpose,
            "value": value.value,
            "description": value.description,
            "many": value.many,
            "span_id": None if value.span_id is None else f"{value.span_id:016x}",
            "trace_id": None if value.trace_id is None else f"{value.trace_id:032x}",
            "timestamp_ns": value.timestamp_ns,
        }
        for value in named_values
    ]
    if values:
        data["named_values"] = values
    return data


def _attributes_json(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()
    }


# --- reading: documents -------------------------------------------------------------------------


def _documents(name: str, text: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(where, parsed JSON)`` for a whole-file document or for each line."""
    if not text.strip():
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        # A pretty-printed document opens with a lone bracket; anything else is read as lines,
        # so that an error is reported on the line that holds it.
        first_line = text.lstrip().partition("\n")[0].strip()
        if exc.msg != "Extra data" and first_line in ("{", "["):
            raise TraceFormatError(
                f"{name}, line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}). "
                + _JSONL_HINT
            ) from None
    else:
        yield f"{name}, line {_first_content_line(text)}", document
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"{name}, line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(
                f"{name}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}). "
                + _JSONL_HINT
            ) from None


def _first_content_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return number
    return 1


# --- reading: our JSONL span objects ------------------------------------------------------------


def _record_from_json(data: Any) -> tuple[SpanRecord, list[WrapRecord]]:
    if not isinstance(data, dict):
        raise _Invalid(
            f"expected a JSON object describing a span, found {_json_type(data)}. " + _JSONL_HINT
        )
    trace_id = _hex_id(data.get("trace_id"), 32, "trace_id")
    span_id = _hex_id(data.get("span_id"), 16, "span_id")
    parent = data.get("parent_span_id")
    start = _int_field(data, "start_time_ns")
    status = data.get("status") or {}
    if not isinstance(status, dict):
        raise _Invalid(f'field "status" must be an object, found {_json_type(status)}')
    code = _STATUS_CODES.get(str(status.get("code", "UNSET")).upper())
    if code is None:
        raise _Invalid(
            f'field "status.code" must be "UNSET", "OK" or "ERROR", found {status.get("code")!r}'
        )
    events = _list_field(data, "events")
    record = SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_hex_id(parent, 16, "parent_span_id") if parent else None,
        name=_str_field(data, "name"),
        start_time_ns=start,
        end_time_ns=_int_field(data, "end_time_ns", default=start),
        attributes=_attributes_field(data, "attributes"),
        events=tuple(_event_from_json(event, index) for index, event in enumerate(events)),
        status_code=code,
        status_description=_optional_str(status.get("description"), "status.description"),
        kind=_str_field(data, "kind", default="INTERNAL"),
        resource_attributes=_attributes_field(data, "resource"),
    )
    named = [
        _named_value_from_json(item, index)
        for index, item in enumerate(_list_field(data, "named_values"))
    ]
    return record, named


def _event_from_json(data: Any, index: int) -> SpanEventRecord:
    where = f"events[{index}]"
    if not isinstance(data, dict):
        raise _Invalid(f'field "{where}" must be an object, found {_json_type(data)}')
    return SpanEventRecord(
        name=_str_field(data, "name", where=where),
        timestamp_ns=_int_field(data, "timestamp_ns", where=where, default=0),
        attributes=_attributes_field(data, "attributes", where=where),
    )


def _named_value_from_json(data: Any, index: int) -> WrapRecord:
    where = f"named_values[{index}]"
    if not isinstance(data, dict):
        raise _Invalid(f'field "{where}" must be an object, found {_json_type(data)}')
    purpose = _PURPOSES.get(str(data.get("purpose")))
    if purpose is None:
        raise _Invalid(
            f'field "{where}.purpose" must be "input", "output" or "state", '
            f"found {data.get('purpose')!r}"
        )
    span_id, trace_id = data.get("span_id"), data.get("trace_id")
    return WrapRecord(
        name=_str_field(data, "name", where=where),
        purpose=purpose,
        value=data.get("value"),
        description=_optional_str(data.get("description"), f"{where}.description"),
        many=data.get("many") is True,
        span_id=_hex_id(span_id, 16, f"{where}.span_id") if span_id else None,
        trace_id=_hex_id(trace_id, 32, f"{where}.trace_id") if trace_id else None,
        timestamp_ns=_int_field(data, "timestamp_ns", where=where, default=0),
    )


# --- reading: OTLP-JSON ------------------------------------------------------------------------


def _otlp_records(document: Mapping[str, Any]) -> Iterator[SpanRecord]:
    for i, resource_spans in enumerate(_otlp_list(document, "resourceSpans", "")):
        where = f"resourceSpans[{i}]"
        resource = _otlp_object(resource_spans, "resource", where)
        resource_attributes = _otlp_attributes(resource.get("attributes"), f"{where}.resource")
        scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans"))
        for j, scope_spans in enumerate(_otlp_list({"scopeSpans": scopes}, "scopeSpans", where)):
            scope_where = f"{where}.scopeSpans[{j}]"
            for k, span in enumerate(_otlp_list(scope_spans, "spans", scope_where)):
                yield _otlp_span(span, f"{scope_where}.spans[{k}]", resource_attributes)


def _otlp_span(span: Any, where: str, resource: dict[str, Any]) -> SpanRecord:
    if not isinstance(span, dict):
        raise _Invalid(f"{where} must be an object, found {_json_type(span)}")
    parent = span.get("parentSpanId")
    start = _otlp_int(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")
    end = span.get("endTimeUnixNano")
    status = _otlp_object(span, "status", where)
    events = []
    for index, event in enumerate(_otlp_list(span, "events", where)):
        event_where = f"{where}.events[{index}]"
        if not isinstance(event, dict):
            raise _Invalid(f"{event_where} must be an object, found {_json_type(event)}")
        time = event.get("timeUnixNano")
        events.append(
            SpanEventRecord(
                name=_str_field(event, "name", where=event_where),
                timestamp_ns=_otlp_int(time, f"{event_where}.timeUnixNano") if time else 0,
                attributes=_otlp_attributes(event.get("attributes"), event_where),
            )
        )
    message = status.get("message")
    return SpanRecord(
        trace_id=_hex_id(span.get("traceId"), 32, f"{where}.traceId"),
        span_id=_hex_id(span.get("spanId"), 16, f"{where}.spanId"),
        parent_span_id=_hex_id(parent, 16, f"{where}.parentSpanId") if parent else None,
        name=_str_field(span, "name", where=where),
        start_time_ns=start,
        end_time_ns=_otlp_int(end, f"{where}.endTimeUnixNano") if end else start,
        attributes=_otlp_attributes(span.get("attributes"), where),
        events=tuple(events),
        status_code=_otlp_enum(status.get("code"), _OTLP_STATUS_CODES, "STATUS_CODE_", "UNSET"),
        status_description=message if isinstance(message, str) and message else None,
        kind=_otlp_enum(span.get("kind"), _OTLP_SPAN_KINDS, "SPAN_KIND_", "INTERNAL"),
        resource_attributes=resource,
    )


def _otlp_attributes(items: Any, where: str) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _Invalid(f"{where}.attributes must be a list, found {_json_type(items)}")
    attributes: dict[str, Any] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise _Invalid(
                f'{where}.attributes[{index}] must be an object with a "key" string and a "value"'
            )
        value = _otlp_value(item.get("value"), f"{where}.attributes[{index}].value")
        if value is not None:
            attributes[item["key"]] = value
    return attributes


def _otlp_value(value: Any, where: str) -> Any:
    """Decode an OTLP ``AnyValue``; an empty value gives ``None``."""
    if not isinstance(value, dict) or not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return value["boolValue"] is True or value["boolValue"] == "true"
    if "intValue" in value:
        return _otlp_int(value["intValue"], where)
    if "doubleValue" in value:
        try:
            return float(value["doubleValue"])
        except (TypeError, ValueError):
            raise _Invalid(f"{where}.doubleValue must be a number") from None
    if "arrayValue" in value:
        array = value["arrayValue"] if isinstance(value["arrayValue"], dict) else {}
        items = array.get("values") or []
        return tuple(_otlp_value(item, f"{where}.arrayValue[{i}]") for i, item in enumerate(items))
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"] if isinstance(value["kvlistValue"], dict) else {}
        return _otlp_attributes(kvlist.get("values") or [], where)
    if "bytesValue" in value:
        return str(value["bytesValue"])
    raise _Invalid(
        f"{where} has no known value type (stringValue, intValue, doubleValue, boolValue, "
        f"arrayValue, kvlistValue, bytesValue): found keys {sorted(value)}"
    )


def _otlp_int(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise _Invalid(f"{where} must be an integer (or a string of digits), found {value!r}")


def _otlp_enum(value: Any, names: tuple[Any, ...], prefix: str, default: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str):
        name = value.removeprefix(prefix)
        if name in names:
            return name
    return default


def _otlp_list(data: Any, key: str, where: str) -> list[Any]:
    value = data.get(key) if isinstance(data, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        location = f"{where}.{key}" if where else key
        raise _Invalid(f"{location} must be a list, found {_json_type(value)}")
    return value


def _otlp_object(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Invalid(f"{where}.{key} must be an object, found {_json_type(value)}")
    return value


# --- reading: fields ----------------------------------------------------------------------------


def _hex_id(value: Any, digits: int, field: str) -> int:
    if isinstance(value, str) and len(value) == digits and _HEX.fullmatch(value):
        return int(value, 16)
    # Some OTLP-JSON writers use base64 for ids, as protobuf's JSON mapping does for bytes.
    if isinstance(value, str) and value:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == digits // 2:
            return int.from_bytes(raw, "big")
    raise _Invalid(f'field "{field}" must be a {digits}-character hex string, found {value!r}')


def _int_field(
    data: Mapping[str, Any], key: str, *, where: str = "", default: int | None = None
) -> int:
    value = data.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Invalid(f'field "{_join(where, key)}" must be an integer, found {value!r}')


def _str_field(
    data: Mapping[str, Any], key: str, *, where: str = "", default: str | None = None
) -> str:
    value = data.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, str):
        return value
    raise _Invalid(f'field "{_join(where, key)}" must be a string, found {value!r}')


def _optional_str(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _Invalid(f'field "{field}" must be a string or null, found {value!r}')


def _list_field(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Invalid(f'field "{key}" must be a list, found {_json_type(value)}')
    return value


def _attributes_field(data: Mapping[str, Any], key: str, *, where: str = "") -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Invalid(f'field "{_join(where, key)}" must be an object, found {_json_type(value)}')
    # OpenTelemetry keeps sequence attributes as tuples; so do records read from files.
    return {name: tuple(item) if isinstance(item, list) else item for name, item in value.items()}


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)
