"""Reading span objects of trace files: evaltrace's JSONL objects, OTLP-JSON and Phoenix spans.

Shared by :func:`evaltrace.load_traces`, which reads a whole file, and
:func:`evaltrace.trace.read_traces`, which reads one trace at a time. Each reader raises
:class:`~evaltrace.trace._fields.Invalid` naming the field; the caller adds the file and line.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeAlias

from pydantic_core import SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

from evaltrace.capture.codec import read_json
from evaltrace.capture.values import Purpose, WrapRecord
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
from evaltrace.trace.spans import SpanEventRecord, SpanRecord
from evaltrace.trace.spans.records import STATUS_CODES
from evaltrace.trace.tree import ParentCycle

__all__ = [
    "JSONL_HINT",
    "TOO_DEEP",
    "ReadSpan",
    "not_json",
    "add_span",
    "conflict_message",
    "cycle_message",
    "own_line_validator",
    "read_line_by_fields",
    "read_own_line",
    "read_span_object",
    "record_from_json",
    "same_span",
    "span_objects",
    "unreadable",
]

ReadSpan: TypeAlias = tuple[SpanRecord, tuple[WrapRecord, ...]]
"""A span read from a file, with the ``wrap`` values the file stored beside it."""

JSONL_HINT: Final = (
    "Each line must be one JSON object describing a span (as save_traces writes), "
    'an OTLP-JSON object with "resourceSpans", or a page of Phoenix spans ({"data": [...]}).'
)
"""What a trace file's lines may hold, quoted by errors about a line."""

TOO_DEEP: Final = (
    "nested too deeply to read (deeper than Python's recursion limit); a trace file holds "
    "spans, whose values are nested a few levels"
)
"""Why JSON nested past the recursion limit is refused."""

_PURPOSES: Mapping[str, Purpose] = {"input": "input", "output": "output", "state": "state"}


def not_json(exc: json.JSONDecodeError) -> str:
    """Why a trace file's line (or document) is not JSON, with what its lines may hold.

    Example:
        >>> try:
        ...     json.loads('{"name": "ans')
        ... except json.JSONDecodeError as exc:
        ...     not_json(exc)[:60]
        'not valid JSON (Unterminated string starting at column 10). '
    """
    # Some of json's messages end with the word "at" ("Unterminated string starting at"),
    # which the column then follows.
    where = "column" if exc.msg.endswith(" at") else "at column"
    return f"not valid JSON ({exc.msg} {where} {exc.colno}). " + JSONL_HINT


def unreadable(exc: RecursionError | ValueError) -> str:
    """Why ``json.loads`` refused JSON that is valid but cannot be held (too deep, too long)."""
    if isinstance(exc, RecursionError):
        return f"the JSON is {TOO_DEEP}."
    # Python refuses to convert integers of more than sys.get_int_max_str_digits() digits.
    return f"the JSON holds a number too long to read ({exc})."


def cycle_message(cycle: ParentCycle) -> str:
    """Why a trace whose parent links go round in a loop is not read as sound."""
    return (
        f"{cycle}, so the trace is damaged; a span's parent_span_id names the span it ran "
        "inside, which started before it: fix or remove the parent_span_id of one of them"
    )


def span_objects(document: Any, where: str) -> Iterator[tuple[str, Any]]:
    """The span objects (or OTLP documents) of a document, each with its place.

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


def read_span_object(item: Any, place: str) -> list[tuple[ReadSpan, str]]:
    """The spans of one span object or OTLP document, each with its place in the file.

    Raises:
        Invalid: A field is missing or has the wrong type (the message names it).
    """
    if is_otlp_document(item):
        return [((record, ()), f"{place}, {inner}") for inner, record in otlp_records(item)]
    if not isinstance(item, dict):
        raise Invalid(
            f"expected a JSON object describing a span, found {json_type(item)}. " + JSONL_HINT
        )
    if is_phoenix_span(item):
        return [((phoenix_span(item), ()), place)]
    if is_otlp_span(item):
        return [((otlp_span(item, "", {}), ()), place)]
    record, named = record_from_json(item)
    return [((record, tuple(named)), place)]


def add_span(spans: dict[tuple[int, int], tuple[ReadSpan, str]], span: ReadSpan, place: str) -> str:
    """Add ``span`` unless its ids are taken; a copy found twice is kept once.

    Returns:
        An empty string when it was added or was the same as the span already there; else a
        message saying where the other span under its ids is.
    """
    record = span[0]
    key = (record.trace_id, record.span_id)
    first = spans.get(key)
    if first is None:
        spans[key] = (span, place)
    elif not same_span(first[0], span):
        return f"{place}: {conflict_message(record, first[1])}"
    return ""


def same_span(first: ReadSpan, other: ReadSpan) -> bool:
    """Whether two spans read under the same ids are copies of one span."""
    return first == other or repr(first) == repr(other)  # repr: NaN equals itself


def conflict_message(record: SpanRecord, other_place: str) -> str:
    """Why ``record`` cannot be read: another span under its ids is at ``other_place``."""
    return (
        f"span {record.span_id:016x} of trace {record.trace_id:032x} is also at "
        f"{other_place}, with other content. A trace file holds each span once: remove one "
        "of the two, or load files whose span ids collide one by one."
    )


def read_own_line(line: str | bytes) -> ReadSpan:
    """Read one line of evaltrace's JSONL format: the span, and the values stored beside it.

    A line of the shape :func:`~evaltrace.capture.jsonl.encode_span_document` writes (without
    ``named_values``) is read in one pass, from its bytes to its :class:`SpanRecord`; any
    other line, valid or not, is read as :func:`record_from_json` reads a decoded line, which
    raises what is wrong with it. Both give the same record for a line both read.

    Raises:
        json.JSONDecodeError: The line is not JSON.
        UnicodeDecodeError: The line is not UTF-8.
        Invalid: A field is missing or has the wrong type (the message names it).
        RecursionError: The line is nested too deeply.
        ValueError: The line holds a number too long to read.
    """
    try:
        # One pass instead of decoding, checking and copying each field: the reader's 19%
        # of evaluate_traces (bench_stored.py, bench/README.md).
        return own_line_validator()(line), ()
    except ValidationError:
        return read_line_by_fields(line)


def own_line_validator() -> Callable[[str | bytes], SpanRecord]:
    """What :func:`read_own_line` tries first: a line of the usual shape to its record.

    It raises :class:`pydantic_core.ValidationError` for any other line, which
    :func:`read_line_by_fields` then reads (or says what is wrong with).
    """
    return (_LINE or _line_reader()).validate_json


def read_line_by_fields(line: str | bytes) -> ReadSpan:
    """:func:`read_own_line` for a line its validator refused: decoded, then field by field.

    Raises:
        json.JSONDecodeError: The line is not JSON.
        UnicodeDecodeError: The line is not UTF-8.
        Invalid: A field is missing or has the wrong type (the message names it).
        RecursionError: The line is nested too deeply.
        ValueError: The line holds a number too long to read.
    """
    data = read_json(line)
    if not isinstance(data, dict):
        raise Invalid(
            f"expected a JSON object describing a span, found {json_type(data)}. " + JSONL_HINT
        )
    record, named = record_from_json(data)
    return record, tuple(named)


_LINE: SchemaValidator | None = None


def _line_reader() -> SchemaValidator:
    """The validator of a line as ``encode_span_document`` writes it, built on first use.

    Strict: it accepts exactly the types :func:`record_from_json` reads without converting
    (ids in hex of their length, times as JSON integers, every field present, no other), so
    that whatever it accepts reads the same either way; the rest goes to
    :func:`record_from_json`.
    """
    global _LINE
    text = cs.str_schema(strict=True)
    number = cs.int_schema(strict=True)
    # int() itself, called from pydantic_core: half the cost of a function of ours.
    hex_digits = functools.partial(int, base=16)
    trace_id = cs.no_info_after_validator_function(
        hex_digits, cs.str_schema(pattern="^[0-9a-fA-F]{32}$", strict=True)
    )
    span_id = cs.no_info_after_validator_function(
        hex_digits, cs.str_schema(pattern="^[0-9a-fA-F]{16}$", strict=True)
    )
    # OpenTelemetry keeps sequences as tuples: a list value becomes one (nested ones stay).
    # Strings, most values, are tried first.
    value = cs.union_schema(
        [text, cs.tuple_schema([cs.any_schema()], variadic_item_index=0), cs.any_schema()],
        mode="left_to_right",
    )
    attributes = cs.dict_schema(text, value, strict=True)
    event = cs.dataclass_schema(
        SpanEventRecord,
        cs.dataclass_args_schema(
            "SpanEventRecord",
            [
                cs.dataclass_field("name", text, kw_only=True),
                cs.dataclass_field("timestamp_ns", number, kw_only=True),
                cs.dataclass_field("attributes", attributes, kw_only=True),
            ],
            extra_behavior="forbid",
        ),
        ["name", "timestamp_ns", "attributes"],
        slots=True,
        frozen=True,
    )
    fields = [
        cs.dataclass_field("trace_id", trace_id, kw_only=True),
        cs.dataclass_field("span_id", span_id, kw_only=True),
        cs.dataclass_field("parent_span_id", cs.nullable_schema(span_id), kw_only=True),
        cs.dataclass_field("name", text, kw_only=True),
        cs.dataclass_field("kind", text, kw_only=True),
        cs.dataclass_field("start_time_ns", number, kw_only=True),
        cs.dataclass_field("end_time_ns", number, kw_only=True),
        cs.dataclass_field(
            "status_code",
            cs.literal_schema(list(STATUS_CODES)),
            validation_alias=[_path("status", "code")],
            kw_only=True,
        ),
        cs.dataclass_field(
            "status_description",
            cs.nullable_schema(text),
            validation_alias=[_path("status", "description")],
            kw_only=True,
        ),
        cs.dataclass_field("attributes", attributes, kw_only=True),
        cs.dataclass_field("events", cs.tuple_schema([event], variadic_item_index=0), kw_only=True),
        cs.dataclass_field(
            "resource_attributes", attributes, validation_alias="resource", kw_only=True
        ),
    ]
    _LINE = SchemaValidator(
        cs.dataclass_schema(
            SpanRecord,
            cs.dataclass_args_schema("SpanRecord", fields, extra_behavior="forbid"),
            [field["name"] for field in fields],
            slots=True,
            frozen=True,
        ),
        # Keys repeat from line to line, values seldom: caching only the keys reads a line
        # 6% sooner (bench_stored.py, bench/README.md).
        config=cs.CoreConfig(cache_strings="keys"),
    )
    return _LINE


def _path(*keys: str | int) -> list[str | int]:
    return list(keys)


def record_from_json(data: dict[str, Any]) -> tuple[SpanRecord, list[WrapRecord]]:
    """Read one span object of evaltrace's JSONL format, and the values stored beside it."""
    get = data.get
    trace_id = hex_id(get("trace_id"), 32, "trace_id")
    span_id = hex_id(get("span_id"), 16, "span_id")
    parent = get("parent_span_id")
    start = int_field(data, "start_time_ns")
    status = get("status") or {}
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
        events=tuple([_event_from_json(event, index) for index, event in enumerate(events)])
        if events
        else (),
        status_code=code,
        status_description=optional_str(status.get("description"), "status.description"),
        kind=str_field(data, "kind", default="INTERNAL"),
        resource_attributes=attributes_field(data, "resource"),
    )
    named_values = list_field(data, "named_values")
    if not named_values:
        return record, []
    return record, [_named_value_from_json(item, i) for i, item in enumerate(named_values)]


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
