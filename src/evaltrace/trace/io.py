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
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pydantic_core import PydanticSerializationError, to_json

from evaltrace.capture.jsonl import encode_span_document, span_document
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import NotATraceFileError, TraceFormatError
from evaltrace.trace._fields import Invalid
from evaltrace.trace._otlp_json import otlp_records
from evaltrace.trace._span_json import (
    TOO_DEEP,
    ReadSpan,
    add_span,
    cycle_message,
    not_json,
    read_own_line,
    read_span_object,
    span_objects,
    unreadable,
)
from evaltrace.trace.spans import SpanRecord, parse_named_values
from evaltrace.trace.trace_file import TraceFile, open_trace_file
from evaltrace.trace.tree import ObservationNode, build_trace_and_cycles

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["load_traces", "otlp_spans", "save_traces", "span_to_json"]


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
                    file.write(_record_line(record, written))
                    count += 1
            else:
                record = item if isinstance(item, SpanRecord) else SpanRecord.from_readable(item)
                file.write(_record_line(record, ()))
                count += 1
    return count


def span_to_json(span: ReadableSpan | SpanRecord) -> str:
    """Return one finished span as a line of the JSONL trace format (without the newline).

    Useful to exporters that append spans to a file :func:`load_traces` can read.
    """
    record = span if isinstance(span, SpanRecord) else SpanRecord.from_readable(span)
    return _record_line(record, ()).rstrip("\n")


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
            deeply or holds numbers too long to read, holds two different spans under one
            id, or spans whose parent links go round in a loop; the message names the file,
            the line and what is wrong.
        NotATraceFileError: ``path`` is not a regular file (a named pipe, a device, a folder:
            it is not opened), or no line of it is a span (an empty file holds no trace);
            the message says what it looks like instead (a dataset file, binary data).
        OSError: The file cannot be read.

    Example:
        >>> trace = load_traces("run.jsonl")  # doctest: +SKIP
    """
    name = os.fspath(path)
    with open_trace_file(path) as file:
        data = file.read()
    spans: dict[tuple[int, int], tuple[ReadSpan, str]] = {}
    failure: TraceFormatError | None = None
    try:
        _read_spans(name, data, spans)
    except TraceFormatError as exc:
        failure = exc
    if failure is not None:
        if not spans:
            # Nothing was read before the bad line: when no line of the file is a span (it is
            # binary data, a dataset file, ...), that says more than the line.
            _check_holds_spans(name)
        raise failure
    records = [record for (record, _), _ in spans.values()]
    values = [value for (_, named), _ in spans.values() for value in named]
    roots, cycles = build_trace_and_cycles(
        records, sorted(values, key=lambda value: value.timestamp_ns)
    )
    if cycles:
        first = cycles[0].spans[0]
        place = spans[(first.trace_id, first.span_id)][1]
        raise TraceFormatError(
            f"{place}: trace {first.trace_id:032x}: {cycle_message(cycles[0])}. Read the file "
            "with evaltrace.trace.read_traces to have its other traces."
        )
    return roots


def _check_holds_spans(name: str) -> None:
    """Raise :class:`NotATraceFileError` when no line of the file is a span."""
    try:
        TraceFile(name)
    except NotATraceFileError:
        raise
    except TraceFormatError:
        return  # a damaged document: the caller's error names where


def _read_spans(name: str, data: bytes, spans: dict[tuple[int, int], tuple[ReadSpan, str]]) -> None:
    """Read every span of a file's bytes into ``spans``; raise at the first that cannot be."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"{name}: not UTF-8 text (invalid byte at offset {exc.start}). Trace files are "
            "UTF-8 JSON lines, OTLP-JSON or Phoenix span JSON."
        ) from None
    for where, document in _documents(name, text):
        if isinstance(document, _OwnLine):
            conflict = add_span(spans, _own_line(document, where), where)
            if conflict:
                raise TraceFormatError(conflict)
            continue
        for place, item in span_objects(document, where):
            try:
                read = read_span_object(item, place)
            except Invalid as exc:
                raise TraceFormatError(f"{place}: {exc}") from None
            except RecursionError:
                raise TraceFormatError(f"{place}: the span is {TOO_DEEP}.") from None
            for span, span_place in read:
                conflict = add_span(spans, span, span_place)
                if conflict:
                    raise TraceFormatError(conflict)


# --- writing ------------------------------------------------------------------------------------


def _record_line(record: SpanRecord, named_values: Iterable[WrapRecord]) -> str:
    """The line of ``record`` in the JSONL trace format, with its newline."""
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
    document = span_document(
        trace_id=record.trace_id,
        span_id=record.span_id,
        parent_span_id=record.parent_span_id,
        name=record.name,
        kind=record.kind,
        start_time_ns=record.start_time_ns,
        end_time_ns=record.end_time_ns,
        status_code=record.status_code,
        status_description=record.status_description,
        attributes=record.attributes,
        events=((e.name, e.timestamp_ns, e.attributes) for e in record.events),
        resource=record.resource_attributes,
        named_values=values,
    )
    try:
        # pydantic-core's encoder writes a line in a third of json.dumps's time: re-encoding
        # spans was a seventh of `evaltrace test --traces` (bench_cli.py, bench/README.md).
        # The same JSON values; what it refuses (a lone surrogate) goes to the json module.
        line = to_json(document, inf_nan_mode="constants", fallback=str).decode()
    except PydanticSerializationError:
        line = encode_span_document(document)
    return line + "\n"


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
            raise TraceFormatError(f"{name}, line {exc.lineno}: {not_json(exc)}") from None
    except (RecursionError, ValueError) as exc:
        # Only the first JSON value is parsed before "Extra data": the problem is in it.
        raise TraceFormatError(f"{name}, line {first}: {unreadable(exc)}") from None
    else:
        yield f"{name}, line {first}", document
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if _OWN_LINE.match(line):  # read in one pass, as read_traces reads it
            yield f"{name}, line {number}", _OwnLine(line)
            continue
        try:
            yield f"{name}, line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"{name}, line {number}: {not_json(exc)}") from None
        except (RecursionError, ValueError) as exc:
            raise TraceFormatError(f"{name}, line {number}: {unreadable(exc)}") from None


# A line as save_traces and the JSONL exporter write it opens with its trace id.
_OWN_LINE: Final = re.compile(r'\s*\{"trace_id":\s*"[0-9a-fA-F]{32}"')


class _OwnLine(NamedTuple):
    """A line of evaltrace's own JSONL shape, read by :func:`read_own_line`."""

    text: str


def _own_line(line: _OwnLine, place: str) -> ReadSpan:
    """Read one of evaltrace's own lines; what is wrong with it raises, naming ``place``."""
    try:
        return read_own_line(line.text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"{place}: {not_json(exc)}") from None
    except Invalid as exc:
        raise TraceFormatError(f"{place}: {exc}") from None
    except (RecursionError, ValueError) as exc:
        raise TraceFormatError(f"{place}: {unreadable(exc)}") from None


def _first_content_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return number
    return 1


def otlp_spans(document: Any, *, source: str = "OTLP export") -> list[SpanRecord]:
    """The spans of one OTLP export request, given in the protocol's JSON mapping.

    What an OTLP/HTTP JSON request holds (``{"resourceSpans": [...]}``), or a protobuf
    ``ExportTraceServiceRequest`` turned into data by protobuf's own
    ``json_format.MessageToDict`` (ids in base64, 64-bit numbers as strings): both are read,
    each span with its resource's attributes.

    Args:
        document: The request as data.
        source: How the error names where it came from.

    Raises:
        TraceFormatError: A span cannot be read; the message names the field.

    Example:
        >>> [span.name for span in otlp_spans({"resourceSpans": [{"scopeSpans": [{"spans": [
        ...     {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        ...      "name": "ask", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]})]
        ['ask']
    """
    if not isinstance(document, dict):
        raise TraceFormatError(f"{source}: not an OTLP export (an object with resourceSpans)")
    try:
        return [record for _, record in otlp_records(document)]
    except Invalid as exc:
        raise TraceFormatError(f"{source}: {exc}") from None
    except RecursionError as exc:
        raise TraceFormatError(f"{source}: {unreadable(exc)}") from None
