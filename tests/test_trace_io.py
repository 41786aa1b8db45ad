from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, Status, StatusCode

from evaltrace.capture.values import WrapRecord
from evaltrace.errors import NotATraceFileError, TraceFormatError
from evaltrace.evals import last_llm_call, root
from evaltrace.trace import (
    LLMSpan,
    ObservationNode,
    SpanRecord,
    build_trace,
    load_traces,
    save_traces,
    span_to_json,
    split_traces,
    trace_to_text,
    walk_trace,
)
from span_factory import MS, PARENT_CYCLES, Spans, span_line

FIXTURES = Path(__file__).parent / "fixtures"
T0 = 1_733_400_000_000_000_000  # the time of tests/fixtures/otlp_export.json


@pytest.fixture
def spans() -> Iterator[Spans]:
    factory = Spans(t0=T0, service_name="weather-bot")
    yield factory
    factory.provider.shutdown()


def weather_run(spans: Spans) -> list[ReadableSpan]:
    """The run that tests/fixtures/otlp_export.json describes, recorded live."""
    app = spans.start(
        "answer_question",
        0,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": "Weather in Paris?"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps("It's sunny."),
            "output.mime_type": "application/json",
        },
    )
    app.add_event(
        "evaltrace.wrap",
        {
            "evaltrace.wrap.name": "answer",
            "evaltrace.wrap.purpose": "output",
            "evaltrace.wrap.value": json.dumps("It's sunny."),
        },
        timestamp=T0 + 1200 * MS,
    )
    lookup = spans.start(
        "lookup_city", 10, parent=app, attributes={"openinference.span.kind": "TOOL"}
    )
    lookup.add_event(
        "exception",
        {"exception.type": "KeyError", "exception.message": "'Paris'"},
        timestamp=T0 + 29 * MS,
    )
    lookup.set_status(Status(StatusCode.ERROR, "KeyError: 'Paris'"))
    spans.end(lookup, 30)
    chat = spans.start(
        "chat gpt-4o-mini",
        50,
        parent=app,
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.request.stream": False,
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.input_tokens": 25,
            "gen_ai.usage.output_tokens": 4,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "It's sunny."}],
                        "finish_reason": "stop",
                    }
                ]
            ),
        },
    )
    spans.end(chat, 1150)
    app.set_status(Status(StatusCode.OK))
    spans.end(app, 1250)
    return spans.finished()


def views(trace: list[ObservationNode]) -> list[Any]:
    return [node.span for node in walk_trace(trace)]


def test_save_then_load_gives_the_same_views(spans: Spans, tmp_path: Path) -> None:
    trace = build_trace(weather_run(spans))
    path = tmp_path / "run.jsonl"

    written = save_traces(trace, path)
    loaded = load_traces(path)

    assert written == 3
    assert loaded == trace
    assert views(loaded) == views(trace)
    assert [node.span.record for node in walk_trace(loaded)] == [
        node.span.record for node in walk_trace(trace)
    ]


def test_saved_file_has_one_json_object_per_span_with_hex_ids(spans: Spans, tmp_path: Path) -> None:
    finished = weather_run(spans)
    path = tmp_path / "spans.jsonl"

    save_traces(finished, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])

    assert len(lines) == 3
    assert len(first["trace_id"]) == 32
    assert len(first["span_id"]) == 16
    assert first["trace_id"] == first["trace_id"].lower()
    assert isinstance(first["start_time_ns"], int)
    assert first["resource"]["service.name"] == "weather-bot"
    assert "named_values" not in first


def test_in_memory_records_survive_a_save_and_load(spans: Spans, tmp_path: Path) -> None:
    app = spans.start("app", 0)
    app.add_event(
        "evaltrace.wrap",
        {
            "evaltrace.wrap.name": "report",
            "evaltrace.wrap.purpose": "output",
            "evaltrace.wrap.value": json.dumps(
                {"__evaltrace_truncated__": True, "original_bytes": 20000, "preview": "xx"}
            ),
        },
    )
    spans.end(app, 1)
    finished = spans.finished()
    full = WrapRecord(
        name="report", purpose="output", value="x" * 20000, span_id=finished[0].context.span_id
    )
    trace = build_trace(finished, [full])
    path = tmp_path / "run.jsonl"

    save_traces(trace, path)
    loaded = load_traces(path)

    assert loaded[0].span.named_values == (full,)
    assert root(loaded).eval_output == root(trace).eval_output


def test_span_to_json_writes_a_line_load_traces_reads(spans: Spans, tmp_path: Path) -> None:
    finished = weather_run(spans)
    path = tmp_path / "exported.jsonl"
    path.write_text("".join(span_to_json(span) + "\n" for span in finished), encoding="utf-8")

    assert load_traces(path) == build_trace(finished)


class Opaque:
    def __str__(self) -> str:
        return "opaque value"


def record_holding(value: Any) -> SpanRecord:
    """A span whose one attribute, ``value``, holds ``value``."""
    return SpanRecord(
        trace_id=1,
        span_id=2,
        name="s",
        start_time_ns=0,
        end_time_ns=1,
        attributes={"value": value},
    )


@pytest.mark.parametrize(
    ("value", "read_back"),
    [
        ("Où ? 東京 \u2028 \x01", "Où ? 東京 \u2028 \x01"),
        ("lone \ud800 surrogate", "lone \ud800 surrogate"),
        (2**70, 2**70),
        (
            [1.5e-07, 1e16, float("inf"), float("-inf")],
            [1.5e-07, 1e16, float("inf"), float("-inf")],
        ),
        ((1, ("a", None)), [1, ["a", None]]),
        (Opaque(), "opaque value"),
    ],
    ids=["unicode", "lone-surrogate", "big-int", "floats", "tuples", "no-json-type"],
)
def test_a_written_line_holds_what_the_json_module_would_write(value: Any, read_back: Any) -> None:
    line = span_to_json(record_holding(value))

    assert "\n" not in line
    line.encode("utf-8")  # a lone surrogate is written as an escape, not as itself
    assert json.loads(line)["attributes"]["value"] == read_back
    expected = json.dumps({"value": value}, ensure_ascii=False, separators=(",", ":"), default=str)
    assert json.loads(line)["attributes"] == json.loads(expected)


def test_a_written_nan_reads_back_as_nan() -> None:
    line = span_to_json(record_holding(float("nan")))

    assert math.isnan(json.loads(line)["attributes"]["value"])


def test_otlp_json_export_loads_into_the_same_tree(spans: Spans) -> None:
    live = build_trace(weather_run(spans))

    loaded = load_traces(FIXTURES / "otlp_export.json")

    assert trace_to_text(loaded) == trace_to_text(live)
    chat = loaded[0].find("chat gpt-4o-mini")[0].span
    assert isinstance(chat, LLMSpan)
    assert chat.finish_reasons == ("stop",)
    assert chat.usage.input_tokens == 25
    assert chat.parameters == {"temperature": 0.2, "stream": False}
    assert chat.record.kind == "CLIENT"
    assert chat.record.resource_attributes["service.name"] == "weather-bot"
    lookup = loaded[0].find("lookup_city")[0].span
    assert lookup.error is not None
    assert (lookup.error.type, lookup.error.message) == ("KeyError", "'Paris'")
    assert f"{loaded[0].span.trace_id:032x}" == "5b8efff798038103d269b633813fc60c"
    assert [value.name for value in loaded[0].span.named_values] == ["answer"]


def test_otlp_json_lines_are_read_one_document_per_line(tmp_path: Path) -> None:
    document = json.loads((FIXTURES / "otlp_export.json").read_text(encoding="utf-8"))
    path = tmp_path / "collector.jsonl"
    path.write_text(json.dumps(document) + "\n" + json.dumps(document) + "\n", encoding="utf-8")

    trace = load_traces(path)

    assert len(list(walk_trace(trace))) == 3


def test_a_corrupt_line_names_the_file_and_line(spans: Spans, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    save_traces(weather_run(spans), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:40]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    message = str(caught.value)
    assert message.startswith(f"{path}, line 2: not valid JSON")
    assert "one JSON object describing a span" in message


def test_a_corrupt_first_line_is_reported_as_line_one(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"trace_id": \n{"a": 1}\n', encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"run.jsonl: no line of it is a span \(line 1: "):
        load_traces(path)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"span_id": "xyz"}, "field \"span_id\" must be a 16-character hex string, found 'xyz'"),
        ({"trace_id": None}, 'field "trace_id" must be a 32-character hex string, found None'),
        ({"start_time_ns": "soon"}, "field \"start_time_ns\" must be an integer, found 'soon'"),
        ({"status": {"code": "FINE"}}, 'field "status.code" must be "UNSET", "OK" or "ERROR"'),
        ({"events": [{"name": 3}]}, 'field "events[0].name" must be a string, found 3'),
        ({"attributes": [1]}, 'field "attributes" must be an object, found a list'),
    ],
)
def test_a_wrong_field_is_named_with_the_line(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    span = {
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174",
        "parent_span_id": None,
        "name": "app",
        "start_time_ns": T0,
        "end_time_ns": T0 + MS,
    }
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps(span) + "\n\n" + json.dumps({**span, **change}) + "\n", encoding="utf-8"
    )

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    assert str(caught.value).startswith(f"{path}, line 3: {expected}")


def test_a_line_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("[1, 2]\n", encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"line 1, \[0\]: expected a JSON object describing"):
        load_traces(path)


def test_a_file_that_is_not_utf8_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "binary.jsonl"
    path.write_bytes(b"\x80\x03}q\x00.")

    with pytest.raises(TraceFormatError, match="not UTF-8 text"):
        load_traces(path)


def test_an_empty_file_gives_an_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")

    assert load_traces(path) == []


def test_a_damaged_pretty_printed_document_names_the_line(tmp_path: Path) -> None:
    text = (FIXTURES / "otlp_export.json").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines[6] = lines[6].replace('"', "", 1)
    path = tmp_path / "export.json"
    path.write_text("\n".join(lines), encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"export.json, line 7: not valid JSON"):
        load_traces(path)


def test_a_wrong_otlp_field_is_named_with_its_place(tmp_path: Path) -> None:
    document = json.loads((FIXTURES / "otlp_export.json").read_text(encoding="utf-8"))
    document["resourceSpans"][0]["scopeSpans"][1]["spans"][0]["spanId"] = "zz"
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    assert str(caught.value) == (
        f'{path}, line 1: field "resourceSpans[0].scopeSpans[1].spans[0].spanId" '
        "must be a 16-character hex string, found 'zz'"
    )


# --- Arize Phoenix's span JSON (tests/fixtures/make_phoenix_fixtures.py made the files) ---------

PHOENIX_TRACES = ("498c9ab3e35738225f3fdba9e2db1689", "300f4a1b0771dfcf852e4b68d0063704")


def outline(trace: list[ObservationNode]) -> list[tuple[Any, ...]]:
    """What a trace says, apart from times: names, kinds, nesting, values, status, messages."""
    rows: list[tuple[Any, ...]] = []
    for node in walk_trace(trace):
        span = node.span
        rows.append(
            (
                f"{span.span_id:016x}",
                None if span.parent_span_id is None else f"{span.parent_span_id:016x}",
                span.name,
                span.kind,
                span.status,
                span.error,
                span.input,
                span.output,
                [(value.name, value.purpose, value.value) for value in span.named_values],
                span.input_messages if isinstance(span, LLMSpan) else None,
            )
        )
    return rows


def test_phoenix_span_json_loads_each_trace_it_was_sent() -> None:
    traces = split_traces(load_traces(FIXTURES / "phoenix_spans.json"))

    assert [f"{one[0].span.trace_id:032x}" for one in traces] == list(PHOENIX_TRACES)
    (answer,) = traces[0]
    assert answer.span.name == "answer" and answer.span.kind == "agent"
    assert answer.span.parent_span_id is None
    assert [(c.span.name, c.span.kind) for c in answer.children] == [
        ("retrieve", "retriever"),
        ("weather", "tool"),
        ("generate", "llm"),
    ]
    assert answer.span.input == {"question": "What is the capital of France?"}
    assert answer.span.output == "Paris is the capital of France."
    assert answer.span.record.start_time_ns == 1_795_431_140_969_720_000  # 10:52:20.969720 UTC
    weather = answer.children[1].span
    assert weather.status == "error" and weather.error is not None
    assert (weather.error.type, weather.error.message) == ("LookupError", "no forecast for Paris")


def test_phoenix_span_json_keeps_the_model_call_and_the_wrap_values() -> None:
    first = split_traces(load_traces(FIXTURES / "phoenix_spans.json"))[0]

    (call,) = first[0].find("ChatCompletion")
    assert isinstance(call.span, LLMSpan)
    assert call.span.parent_span_id == first[0].find("generate")[0].span.span_id
    assert call.span.model == "gpt-4o-mini"
    assert [(m.role, m.content) for m in call.span.input_messages] == [
        ("system", "Answer from the documents: Paris is the capital of France. Lyon is in France."),
        ("user", "What is the capital of France?"),
    ]
    assert call.span.output_text == "Paris is the capital of France."
    assert (call.span.usage.input_tokens, call.span.usage.output_tokens) == (20, 6)
    assert call.span.parameters == {"model": "gpt-4o-mini", "temperature": 0.0}
    evaluable = root(first)
    assert evaluable.input_value("question") == "What is the capital of France?"
    assert evaluable.output_value() == {
        "document_count": 2,
        "answer": "Paris is the capital of France.",
    }
    assert last_llm_call(first).input_value("messages")[1]["content"] == (
        "What is the capital of France?"
    )


def test_phoenix_otlp_span_json_loads_into_the_same_traces() -> None:
    plain = load_traces(FIXTURES / "phoenix_spans.json")

    otlp = load_traces(FIXTURES / "phoenix_spans_otlp.json")

    assert outline(otlp) == outline(plain)


def test_phoenix_pages_as_json_lines_load_together(tmp_path: Path) -> None:
    page = json.loads((FIXTURES / "phoenix_spans.json").read_text(encoding="utf-8"))
    pages = [{"data": page["data"][:3], "next_cursor": "x"}, {**page, "data": page["data"][3:]}]
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(one) + "\n" for one in pages), encoding="utf-8")

    assert outline(load_traces(path)) == outline(load_traces(FIXTURES / "phoenix_spans.json"))


def test_a_list_of_phoenix_spans_loads_like_a_page(tmp_path: Path) -> None:
    page = json.loads((FIXTURES / "phoenix_spans.json").read_text(encoding="utf-8"))
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(page["data"], indent=2), encoding="utf-8")

    assert outline(load_traces(path)) == outline(load_traces(FIXTURES / "phoenix_spans.json"))


def test_nested_phoenix_attributes_are_read_as_flat_ones(tmp_path: Path) -> None:
    span = {
        "name": "chat",
        "context": {"trace_id": "1" * 32, "span_id": "2" * 16},
        "span_kind": "LLM",
        "parent_id": None,
        "start_time": "2025-01-01T00:00:00.000001Z",
        "end_time": "2025-01-01T00:00:01+00:00",
        "status_code": "OK",
        "attributes": {
            "llm": {
                "model_name": "gpt-4o-mini",
                "input_messages": [{"message": {"role": "user", "content": "Hi"}}],
                "output_messages": [{"message": {"role": "assistant", "content": "Hello"}}],
            },
            "tag": {"tags": ["a", "b"]},
        },
        "events": [],
    }
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"data": [span], "next_cursor": None}), encoding="utf-8")

    (node,) = load_traces(path)

    assert isinstance(node.span, LLMSpan)
    assert node.span.model == "gpt-4o-mini"
    assert [(m.role, m.content) for m in node.span.input_messages] == [("user", "Hi")]
    assert node.span.output_text == "Hello"
    assert node.span.attributes["tag.tags"] == ("a", "b")
    assert node.span.duration_ms == 999.999


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"context": {"span_id": "2" * 16}}, 'field "context.trace_id" must be a 32-character'),
        ({"start_time": "yesterday"}, 'field "start_time" must be an ISO 8601 time'),
        ({"status_code": "FINE"}, 'field "status_code" must be "UNSET", "OK" or "ERROR"'),
        ({"attributes": [1]}, 'field "attributes" must be an object, found a list'),
    ],
)
def test_a_wrong_phoenix_field_is_named_with_its_place(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    span = {
        "name": "app",
        "context": {"trace_id": "1" * 32, "span_id": "2" * 16},
        "start_time": "2025-01-01T00:00:00+00:00",
        "end_time": "2025-01-01T00:00:01+00:00",
    }
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps({"data": [span, {**span, **change}]}), encoding="utf-8")

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    assert str(caught.value).startswith(f"{path}, line 1, data[1]: {expected}")


# --- damaged files --------------------------------------------------------------------------------


def jsonl_span(**change: Any) -> str:
    span = {
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174",
        "name": "app",
        "start_time_ns": T0,
        "end_time_ns": T0 + MS,
    }
    return json.dumps({**span, **change})


def test_a_span_repeated_with_other_content_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    other = jsonl_span(span_id="aaaaaaaaaaaaaaaa")
    path.write_text(f"{jsonl_span()}\n{other}\n{jsonl_span(name='changed')}\n", encoding="utf-8")

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    message = str(caught.value)
    assert message.startswith(f"{path}, line 3: span eee19b7ec3c1b174 of trace 5b8efff7")
    assert f"{path}, line 1" in message


def test_a_span_repeated_identically_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(f"{jsonl_span()}\n{jsonl_span()}\n", encoding="utf-8")

    assert [node.span.name for node in walk_trace(load_traces(path))] == ["app"]


def test_json_nested_too_deeply_is_a_format_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    deep = '{"trace_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(f"{jsonl_span()}\n{deep}\n", encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"deep.jsonl, line 2: .*nested too deeply"):
        load_traces(path)


def test_a_pretty_printed_document_nested_too_deeply_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{\n  "resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "\n}")

    with pytest.raises(TraceFormatError, match=r"deep.json, line 1: .*nested too deeply"):
        load_traces(path)


def test_an_integer_too_long_to_read_is_a_format_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    huge = jsonl_span().replace(f'"end_time_ns": {T0 + MS}', '"end_time_ns": 1' + "0" * 5000)
    path.write_text(f"{jsonl_span()}\n{huge}\n", encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"huge.jsonl, line 2: .*integer"):
        load_traces(path)


def test_an_otlp_time_too_long_to_read_is_a_format_error_naming_the_field(
    tmp_path: Path,
) -> None:
    document = json.loads((FIXTURES / "otlp_export.json").read_text(encoding="utf-8"))
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = "9" * 5000
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"spans\[0\]\.startTimeUnixNano must be an integer"):
        load_traces(path)


@pytest.mark.parametrize("loop", PARENT_CYCLES.values(), ids=PARENT_CYCLES)
def test_a_parent_cycle_is_a_format_error_naming_the_spans(tmp_path: Path, loop: list[str]) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([span_line(7, None, "top", trace_id=2), *loop]), encoding="utf-8")

    with pytest.raises(TraceFormatError) as caught:
        load_traces(path)

    message = str(caught.value)
    assert message.startswith(f"{path}, line 2: trace {1:032x}: ")
    assert "0000000000000001 ('a')" in message
    assert "names itself as its parent" in message or "go round in a loop" in message


def test_a_file_of_which_no_line_is_a_span_is_not_a_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n- eggs\n", encoding="utf-8")

    with pytest.raises(NotATraceFileError, match=r"notes.txt: no line of it is a span \(line 1"):
        load_traces(path)


def test_a_bad_line_before_the_spans_is_reported_as_a_bad_line(
    spans: Spans, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    save_traces(weather_run(spans), path)
    path.write_text("garbage\n" + path.read_text(encoding="utf-8"), encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"run.jsonl, line 1: not valid JSON") as caught:
        load_traces(path)

    assert not isinstance(caught.value, NotATraceFileError)
