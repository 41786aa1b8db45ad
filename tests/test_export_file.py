"""The JSONL file exporter writes evaltrace's trace format, one line per span, appended."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

import evaltrace
from evaltrace.capture.exporters import JsonLinesExporter
from evaltrace.errors import ConfigurationError
from evaltrace.trace import span_to_json


@pytest.fixture
def spans() -> Iterator[list[ReadableSpan]]:
    """Finished spans with what a line must carry: parents, events, errors, odd text."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("agent", kind=SpanKind.SERVER) as agent:
        agent.set_attribute("input.value", '{"q": "Où est Paris ?"}')
        agent.set_attribute("tags", ("a", "b"))
        with tracer.start_as_current_span("tool") as tool:
            tool.add_event("evaltrace.wrap", {"evaltrace.wrap.name": "x", "n": 3})
            tool.set_attribute("odd", "lone \ud800 surrogate")
            tool.set_status(Status(StatusCode.ERROR, "no forecast"))
    yield list(memory.get_finished_spans())
    provider.shutdown()


def test_each_line_is_the_trace_format_line_of_its_span(
    spans: list[ReadableSpan], tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    exporter = JsonLinesExporter(path)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert path.read_text(encoding="utf-8").splitlines() == [span_to_json(s) for s in spans]


def test_batches_are_appended_and_load_traces_reads_them(
    spans: list[ReadableSpan], tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text(span_to_json(spans[1]) + "\n")  # the file already holds the agent span
    exporter = JsonLinesExporter(path)
    exporter.export(spans[:1])
    exporter.shutdown()
    (root,) = evaltrace.load_traces(path)
    assert root.span.name == "agent" and [c.span.name for c in root.children] == ["tool"]
    assert root.children[0].span.error is not None


def test_an_exporter_that_was_shut_down_reports_failure(
    spans: list[ReadableSpan], tmp_path: Path
) -> None:
    exporter = JsonLinesExporter(tmp_path / "spans.jsonl")
    exporter.shutdown()
    assert exporter.export(spans) == SpanExportResult.FAILURE


def test_a_file_that_cannot_be_opened_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot be opened for appending"):
        JsonLinesExporter(tmp_path / "no-such-dir" / "spans.jsonl")
