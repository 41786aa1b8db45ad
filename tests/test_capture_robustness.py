"""Instrumentation never breaks the app: failing handlers, odd values, huge values, secrets."""

from __future__ import annotations

import json
import logging

import pytest

from evaltrace import InstrumentationHandler, capture_traces, flush, wrap
from evaltrace.capture import conventions as conv
from evaltrace.trace import add_handler, remove_handler


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@wrap
def echo(value: object) -> object:
    return value


class RaisingHandler(InstrumentationHandler):
    def __init__(self) -> None:
        self.calls = 0

    def on_span(self, span: object) -> None:
        self.calls += 1
        raise RuntimeError("handler is broken")


class RecordingHandler(InstrumentationHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_span(self, span: object) -> None:
        self.names.append(span.name)  # type: ignore[attr-defined]


class AsyncRecordingHandler(InstrumentationHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    async def on_span(self, span: object) -> None:  # type: ignore[override]
        self.names.append(span.name)  # type: ignore[attr-defined]


def test_raising_handler_is_logged_once_and_others_still_receive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, good, good_async = RaisingHandler(), RecordingHandler(), AsyncRecordingHandler()
    for handler in (broken, good, good_async):
        add_handler(handler)
    try:
        with caplog.at_level(logging.WARNING, logger="evaltrace"), capture_traces() as capture:
            assert echo(1) == 1
            assert echo(2) == 2
        assert flush()
    finally:
        for handler in (broken, good, good_async):
            remove_handler(handler)
    assert broken.calls == 2
    assert good.names == ["echo", "echo"]
    assert good_async.names == ["echo", "echo"]
    assert len(capture.spans) == 2
    warnings = [r for r in caplog.records if "handler is broken" in r.getMessage()]
    assert len(warnings) == 1


def test_add_handler_rejects_objects_that_are_not_handlers() -> None:
    with pytest.raises(TypeError, match=r"subclass evaltrace\.InstrumentationHandler"):
        add_handler(print)  # type: ignore[arg-type]


def test_unserializable_value_returns_same_result_and_span_has_a_fallback() -> None:
    value = Unprintable()
    with capture_traces() as handler:
        assert echo(value) is value
        assert wrap(value, purpose="output", name="odd") is value
    attrs = handler.raw_spans[0].attributes
    assert "Unprintable" in attrs[conv.INPUT_VALUE]
    assert "Unprintable" in str(handler.named_values[0].value)


def test_cyclic_value_is_recorded_with_a_cycle_marker() -> None:
    cyclic: dict[str, object] = {"name": "loop"}
    cyclic["self"] = cyclic
    with capture_traces() as handler:
        assert echo(cyclic) is cyclic
    recorded = json.loads(handler.raw_spans[0].attributes[conv.OUTPUT_VALUE])
    assert recorded["name"] == "loop"
    assert "cycle" in str(recorded["self"])


def test_ten_megabyte_value_is_truncated_on_the_span_with_a_marker() -> None:
    big = "x" * (10 * 1024 * 1024)
    with capture_traces() as handler:
        assert echo(big) is big
    text = handler.raw_spans[0].attributes[conv.OUTPUT_VALUE]
    assert len(text.encode()) <= 1_000_000
    marker = json.loads(text)
    assert marker["__evaltrace_truncated__"] is True
    assert marker["original_bytes"] > 10 * 1024 * 1024


def test_secret_keys_are_redacted_on_spans_and_in_captures() -> None:
    config = {"api_key": "sk-live-123", "model": "gpt"}
    with capture_traces() as handler:
        assert echo(config) is config
        wrap(config, purpose="state", name="config")
    assert config["api_key"] == "sk-live-123"  # the app's object is untouched
    span_text = handler.raw_spans[0].attributes[conv.INPUT_VALUE]
    assert "sk-live-123" not in span_text
    assert json.loads(span_text)["value"]["api_key"] == "[REDACTED]"
    assert handler.named_values[0].value == {"api_key": "[REDACTED]", "model": "gpt"}
