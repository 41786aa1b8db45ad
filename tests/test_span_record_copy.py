"""A record of a finished SDK span holds what the span's own properties return."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from evaltrace.trace import SpanRecord


class PropertiesOnly:
    """A finished span seen only through the properties of ``ReadableSpan``."""

    def __init__(self, span: ReadableSpan) -> None:
        self._span = span

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._span, name)


def finished_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("request", kind=SpanKind.SERVER) as parent:
        child = tracer.start_span(
            "call", context=set_span_in_context(parent), kind=SpanKind.CLIENT, start_time=5
        )
        child.set_attributes({"n": 3, "tags": ("a", "b"), "ok": True})
        child.add_event("retry", {"attempt": 2}, timestamp=7)
        child.set_status(Status(StatusCode.ERROR, "it broke"))
        child.end(end_time=9)
    return list(exporter.get_finished_spans())


def test_a_record_of_an_sdk_span_holds_what_its_properties_return() -> None:
    spans = finished_spans()

    records = [SpanRecord.from_readable(span) for span in spans]

    assert records == [
        SpanRecord.from_readable(PropertiesOnly(span))  # type: ignore[arg-type]
        for span in spans
    ]
    call = records[0]
    assert (call.kind, call.status_code, call.status_description) == ("CLIENT", "ERROR", "it broke")
    assert call.parent_span_id == records[1].span_id and records[1].parent_span_id is None
    assert [(e.name, e.timestamp_ns, e.attributes) for e in call.events] == [
        ("retry", 7, {"attempt": 2})
    ]
    assert call.resource_attributes["service.name"] == "shop"
    assert (call.start_time_ns, call.end_time_ns) == (5, 9)
