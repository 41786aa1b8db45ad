"""Finished spans with chosen times and parents, made by a private SDK provider (not global).

Shared by the trace-tree, selector and trace-file tests.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


class Spans:
    """Starts and ends spans at times given in milliseconds after ``t0``."""

    def __init__(self, *, t0: int = T0, service_name: str | None = None) -> None:
        self.t0 = t0
        self.exporter = InMemorySpanExporter()
        resource = Resource.create({"service.name": service_name}) if service_name else None
        self.provider = TracerProvider(resource=resource) if resource else TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def start(
        self,
        name: str,
        at_ms: float,
        *,
        parent: Span | None = None,
        attributes: dict[str, Any] | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        context = otel_trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            name,
            context=context,
            attributes=attributes,
            kind=kind,
            start_time=self.t0 + int(at_ms * MS),
        )
        assert isinstance(span, Span)
        return span

    def end(self, span: Span, at_ms: float) -> None:
        span.end(end_time=self.t0 + int(at_ms * MS))

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def wrap_event(span: Span, name: str, purpose: str, value: Any, *, many: bool = False) -> None:
    """Add the span event ``wrap(value, purpose=..., name=...)`` leaves."""
    attributes: dict[str, Any] = {
        "evaltrace.wrap.name": name,
        "evaltrace.wrap.purpose": purpose,
        "evaltrace.wrap.value": json.dumps(value),
    }
    if many:
        attributes["evaltrace.wrap.many"] = True
    span.add_event("evaltrace.wrap", attributes)


def span_line(
    span_id: int, parent: int | None, name: str, *, trace_id: int = 1, at_ms: float = 0
) -> str:
    """One line of evaltrace's JSONL trace format with chosen ids, as a damaged file may hold."""
    start = T0 + int(at_ms * MS)
    return json.dumps(
        {
            "trace_id": f"{trace_id:032x}",
            "span_id": f"{span_id:016x}",
            "parent_span_id": None if parent is None else f"{parent:016x}",
            "name": name,
            "start_time_ns": start,
            "end_time_ns": start + MS,
        }
    )


PARENT_CYCLES = {
    "two spans each other's parent": [span_line(1, 2, "a"), span_line(2, 1, "b", at_ms=1)],
    "a span its own parent": [span_line(1, 1, "a")],
}
"""The lines of a trace (trace id 1) whose parent links go round in a loop."""
