"""Saving traces as JSON lines and loading them back, or from OTLP-JSON and Phoenix exports.

The JSONL format holds one span per line::

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | null,
     "name": "answer", "kind": "INTERNAL", "start_time_ns": 1700000000000000000,
     "end_time_ns": 1700000000012000000, "status": {"code": "OK", "description": null},
     "attributes": {...}, "events": [{"name": ..., "timestamp_ns": ..., "attributes": {...}}],
     "resource": {...}, "named_values": [...]}

``named_values`` is optional: it is written only when the values ``wrap`` recorded differ from
what the span's own ``evaltrace.wrap`` events say (for instance when a value was truncated on
the span but kept whole in memory). Files are read as data only: JSON, never pickle.

:func:`load_traces` also reads OTLP-JSON (``_otlp_json``) and Arize Phoenix's span JSON
(``_phoenix_json``), telling the shapes apart document by document.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from evaltrace.capture.values import Purpose, WrapRecord
from evaltrace.errors import TraceFormatError
from evaltrace.trace._fields import (
    Invalid,
    attributes_field,
    hex_id,
    int_field,
    json_type,
    list_field,
    optional_str,
    str_field,
)
from evaltrace.trace._otlp_json import is_otlp_document, is_otlp_span, otlp_records, otlp_span
from evaltrace.trace._phoenix_json import is_phoenix_page, is_phoenix_span, phoenix_span
from evaltrace.trace.spans import SpanEventRecord, SpanRecord, parse_named_values
from evaltrace.trace.spans.records import STATUS_CODES
from evaltrace.trace.tree import ObservationNode, build_trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["load_traces", "save_traces", "span_to_json"]

_PURPOSES: Mapping[str, Purpose] = {"input": "input", "output": "output", "state": "state"}
_JSONL_HINT = (
    "Each line must be one JSON object describing a span (as save_traces writes), "
    'an OTLP-JSON object with "resourceSpans", or a page of Phoenix spans ({"data": [...]}).'
)
_TOO_DEEP = (
    "nested too deeply to read (deeper than Python's recursion limit); a trace file holds "
    "spans, whose values are nested a few levels"
)

_Span: TypeAlias = tuple[SpanRecord, tuple[WrapRecord, ...]]


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

    Reads, telling them apart document by document:

    - the JSONL format of :func:`save_traces`;
    - an OTLP-JSON export (a document with ``resourceSpans``, pretty-printed or not, field
      names in lowerCamelCase or snake_case) or JSON lines of such documents (the OpenTelemetry
      Collector's file exporter);
    - Arize Phoenix's span JSON: pages of ``GET /v1/projects/{project}/spans`` or
      ``.../spans/otlpv1`` (``{"data": [...], "next_cursor": ...}``), one page or JSON lines of
      pages, or the ``data`` list alone.

    Named values come from the spans' ``evaltrace.wrap`` events, or from ``named_values`` where
    :func:`save_traces` wrote them. A span (trace id and span id) found twice is read once
    when both copies are the same, as when export batches overlap; two different spans under
    one id are an error. A file may hold several traces: see
    :func:`~evaltrace.trace.split_traces`.

    Args:
        path: The file.

    Returns:
        The roots, as :func:`~evaltrace.trace.build_trace` returns them.

    Raises:
        TraceFormatError: The file is not UTF-8 JSON of one of those shapes, is nested too
            deeply or holds numbers too long to read, or holds two different spans under one
            id; the message names the file, the line and what is wrong.
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
            "UTF-8 JSON lines, OTLP-JSON or Phoenix span JSON."
        ) from None
    spans: dict[tuple[int, int], tuple[_Span, str]] = {}
    for where, document in _documents(name, text):
        for place, item in _span_objects(document, where):
            try:
                read = _read(item, place)
            except Invalid as exc:
                raise TraceFormatError(f"{place}: {exc}") from None
            except RecursionError:
                raise TraceFormatError(f"{place}: the span is {_TOO_DEEP}.") from None
            for span, span_place in read:
                _add(spans, span, span_place)
    records = [record for (record, _), _ in spans.values()]
    values = [value for (_, named), _ in spans.values() for value in named]
    return build_trace(records, sorted(values, key=lambda value: value.timestamp_ns))


def _add(spans: dict[tuple[int, int], tuple[_Span, str]], span: _Span, place: str) -> None:
    record = span[0]
    key = (record.trace_id, record.span_id)
    first = spans.get(key)
    if first is None:
        spans[key] = (span, place)
    elif first[0] != span and repr(first[0]) != repr(span):  # repr: NaN equals itself
        raise TraceFormatError(
            f"{place}: span {record.span_id:016x} of trace {record.trace_id:032x} is also at "
            f"{first[1]}, with other content. A trace file holds each span once: remove one "
            "of the two, or load files whose span ids collide one by one."
        )


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
    first = _first_content_line(text)
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
    except (RecursionError, ValueError) as exc:
        # Only the first JSON value is parsed before "Extra data": the problem is in it.
        raise TraceFormatError(f"{name}, line {first}: {_unreadable(exc)}") from None
    else:
        yield f"{name}, line {first}", document
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
        except (RecursionError, ValueError) as exc:
            raise TraceFormatError(f"{name}, line {number}: {_unreadable(exc)}") from None


def _unreadable(exc: RecursionError | ValueError) -> str:
    if isinstance(exc, RecursionError):
        return f"the JSON is {_TOO_DEEP}."
    # Python refuses to convert integers of more than sys.get_int_max_str_digits() digits.
    return f"the JSON holds a number too long to read ({exc})."


def _first_content_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return number
    return 1


def _span_objects(document: Any, where: str) -> Iterator[tuple[str, Any]]:
    """The span objects (or OTLP documents) of a document.

    The items of a list or of a Phoenix page, else the document itself.
    """
    if is_phoenix_page(document):
        items, label = document["data"], "data"
    elif isinstance(document, list):
        items, label = document, ""
    else:
        yield where, document
        return
    for index, item in enumerate(items):
        yield f"{where}, {label}[{index}]", item


def _read(item: Any, place: str) -> list[tuple[_Span, str]]:
    """The spans of one span object or OTLP document, each with its place in the file."""
    if is_otlp_document(item):
        return [((record, ()), f"{place}, {inner}") for inner, record in otlp_records(item)]
    if not isinstance(item, dict):
        raise Invalid(
            f"expected a JSON object describing a span, found {json_type(item)}. " + _JSONL_HINT
        )
    if is_phoenix_span(item):
        return [((phoenix_span(item), ()), place)]
    if is_otlp_span(item):
        return [((otlp_span(item, "", {}), ()), place)]
    record, named = _record_from_json(item)
    return [((record, tuple(named)), place)]


# --- reading: our JSONL span objects ------------------------------------------------------------


def _record_from_json(data: dict[str, Any]) -> tuple[SpanRecord, list[WrapRecord]]:
    trace_id = hex_id(data.get("trace_id"), 32, "trace_id")
    span_id = hex_id(data.get("span_id"), 16, "span_id")
    parent = data.get("parent_span_id")
    start = int_field(data, "start_time_ns")
    status = data.get("status") or {}
    if not isinstance(status, dict):
        raise Invalid(f'field "status" must be an object, found {json_type(status)}')
    code = STATUS_CODES.get(str(status.get("code", "UNSET")).upper())
    if code is None:
        raise Invalid(
            f'field "status.code" must be "UNSET", "OK" or "ERROR", found {status.get("code")!r}'
        )
    events = list_field(data, "events")
    record = SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=hex_id(parent, 16, "parent_span_id") if parent else None,
        name=str_field(data, "name"),
        start_time_ns=start,
        end_time_ns=int_field(data, "end_time_ns", default=start),
        attributes=attributes_field(data, "attributes"),
        events=tuple(_event_from_json(event, index) for index, event in enumerate(events)),
        status_code=code,
        status_description=optional_str(status.get("description"), "status.description"),
        kind=str_field(data, "kind", default="INTERNAL"),
        resource_attributes=attributes_field(data, "resource"),
    )
    named = [
        _named_value_from_json(item, index)
        for index, item in enumerate(list_field(data, "named_values"))
    ]
    return record, named


def _event_from_json(data: Any, index: int) -> SpanEventRecord:
    where = f"events[{index}]"
    if not isinstance(data, dict):
        raise Invalid(f'field "{where}" must be an object, found {json_type(data)}')
    return SpanEventRecord(
        name=str_field(data, "name", where=where),
        timestamp_ns=int_field(data, "timestamp_ns", where=where, default=0),
        attributes=attributes_field(data, "attributes", where=where),
    )


def _named_value_from_json(data: Any, index: int) -> WrapRecord:
    where = f"named_values[{index}]"
    if not isinstance(data, dict):
        raise Invalid(f'field "{where}" must be an object, found {json_type(data)}')
    purpose = _PURPOSES.get(str(data.get("purpose")))
    if purpose is None:
        raise Invalid(
            f'field "{where}.purpose" must be "input", "output" or "state", '
            f"found {data.get('purpose')!r}"
        )
    span_id, trace_id = data.get("span_id"), data.get("trace_id")
    return WrapRecord(
        name=str_field(data, "name", where=where),
        purpose=purpose,
        value=data.get("value"),
        description=optional_str(data.get("description"), f"{where}.description"),
        many=data.get("many") is True,
        span_id=hex_id(span_id, 16, f"{where}.span_id") if span_id else None,
        trace_id=hex_id(trace_id, 32, f"{where}.trace_id") if trace_id else None,
        timestamp_ns=int_field(data, "timestamp_ns", where=where, default=0),
    )
