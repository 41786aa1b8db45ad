"""OTLP on the wire: export requests read (protobuf or JSON), traces rebuilt for scoring.

An OTLP/HTTP export request is an ``ExportTraceServiceRequest``, in protobuf
(``application/x-protobuf``) or in the protocol's JSON mapping (``application/json``: ids in
hex, as the OTLP specification writes them). Both are read into the protobuf message: its
spans are assembled into traces, and the request is forwarded as protobuf (a JSON request
re-encoded, its spans unchanged), the encoding every OTLP collector takes.

A trace chosen for scoring goes back to data through protobuf's own JSON mapping and the
trace floor's OTLP reader (:func:`evaltrace.trace.otlp_spans`), into the
:class:`~evaltrace.trace.StoredTrace` the engine scores.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from evaltrace.errors import OTLPRequestError, TraceFormatError
from evaltrace.trace import StoredTrace, TraceFileProblem, build_trace_and_cycles, otlp_spans

__all__ = [
    "JSON",
    "PROTOBUF",
    "STATUS_ERROR",
    "attribute_values",
    "decode_request",
    "request_spans",
    "resource_attributes",
    "stored_trace",
]

PROTOBUF: Final = "application/x-protobuf"
"""The content type of a protobuf export request."""
JSON: Final = "application/json"
"""The content type of a JSON export request."""
STATUS_ERROR: Final = 2
"""``STATUS_CODE_ERROR`` of an OTLP span's status."""

_PROTOBUF_TYPES: Final = frozenset({PROTOBUF, "application/protobuf", "application/octet-stream"})
_ID_KEYS: Final = {
    "traceId": 32,
    "trace_id": 32,
    "spanId": 16,
    "span_id": 16,
    "parentSpanId": 16,
    "parent_span_id": 16,
}


def decode_request(body: bytes, content_type: str) -> tuple[ExportTraceServiceRequest, bytes]:
    """Read an export request; return it with its protobuf encoding (to forward).

    Args:
        body: The request body, decompressed.
        content_type: Its media type (parameters such as ``charset`` ignored).

    Raises:
        OTLPRequestError: The content type is neither protobuf nor JSON, or the body is not
            an ``ExportTraceServiceRequest`` in it; the message says what is wrong.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _PROTOBUF_TYPES:
        try:
            return ExportTraceServiceRequest.FromString(body), body
        except DecodeError as exc:
            raise OTLPRequestError(
                f"the body is not a protobuf ExportTraceServiceRequest ({exc})"
            ) from None
    if media == JSON:
        request = _from_json(body)
        return request, request.SerializeToString()
    raise OTLPRequestError(
        f"unsupported Content-Type {content_type!r}: OTLP/HTTP sends {PROTOBUF} or {JSON}"
    )


def _from_json(body: bytes) -> ExportTraceServiceRequest:
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise OTLPRequestError(f"the body is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise OTLPRequestError(
            'the body is not an OTLP export request (a JSON object with "resourceSpans")'
        )
    try:
        _ids_as_base64(document)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(document, request)
        return request
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as exc:
        raise OTLPRequestError(f"the body is not an OTLP export request: {exc}") from None


def _ids_as_base64(document: dict[str, Any]) -> None:
    """Turn the hex ids of OTLP's JSON into the base64 protobuf's JSON mapping reads."""
    for resource_spans in _items(document, "resourceSpans", "resource_spans"):
        for scope_spans in _items(resource_spans, "scopeSpans", "scope_spans"):
            for span in _items(scope_spans, "spans"):
                _convert_ids(span)
                for link in _items(span, "links"):
                    _convert_ids(link)


def _items(data: Any, *names: str) -> list[Any]:
    if not isinstance(data, dict):
        return []
    for name in names:
        value = data.get(name)
        if isinstance(value, list):
            return value
    return []


def _convert_ids(item: Any) -> None:
    if not isinstance(item, dict):
        return
    for key, digits in _ID_KEYS.items():
        value = item.get(key)
        if isinstance(value, str) and len(value) == digits:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                continue  # not hex: base64 already, read as it is
            item[key] = base64.b64encode(raw).decode("ascii")


def request_spans(request: ExportTraceServiceRequest) -> Iterator[tuple[bytes, Span]]:
    """Each span of ``request`` with its resource's encoding (spans share it, by value)."""
    for resource_spans in request.resource_spans:
        resource = resource_spans.resource.SerializeToString()
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield resource, span


def attribute_values(pairs: Sequence[Any]) -> dict[str, Any]:
    """The attributes of a span (``KeyValue`` pairs) as plain values (arrays as tuples)."""
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if which == "kvlist_value":
        return attribute_values(value.kvlist_value.values)
    return getattr(value, which)


def stored_trace(trace_id: bytes, spans: Sequence[tuple[bytes, bytes]]) -> StoredTrace:
    """The trace of ``spans`` (each its resource's and its own protobuf encoding), for scoring.

    A trace whose spans cannot be read, or whose parent links loop, is returned with its
    problems, and the engine scores it as a trace file's damaged trace (``LOG_FILE_ERROR``).
    """
    hex_id = trace_id.hex()
    by_resource: dict[bytes, list[Span]] = {}
    for resource, encoded in spans:
        by_resource.setdefault(resource, []).append(Span.FromString(encoded))
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource.FromString(resource), scope_spans=[ScopeSpans(spans=group)]
            )
            for resource, group in by_resource.items()
        ]
    )
    place = f"trace {hex_id}"
    try:
        records = otlp_spans(json_format.MessageToDict(request), source=place)
    except TraceFormatError as exc:
        problem = TraceFileProblem(place=place, line=0, message=str(exc), trace_id=hex_id)
        return StoredTrace(trace_id=hex_id, roots=[], problems=(problem,))
    roots, cycles = build_trace_and_cycles(records)
    problems = tuple(
        TraceFileProblem(place=place, line=0, message=str(cycle), trace_id=hex_id)
        for cycle in cycles
    )
    return StoredTrace(trace_id=hex_id, roots=roots, problems=problems, cycles=tuple(cycles))


def resource_attributes(resource: bytes) -> Mapping[str, Any]:
    """The attributes of a resource, from its protobuf encoding."""
    return attribute_values(Resource.FromString(resource).attributes)
