from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from evaltrace.trace import (
    LLMMessage,
    LLMSpan,
    ObserveSpan,
    SpanRecord,
    TokenUsage,
    ToolCall,
    ToolDefinition,
    span_view,
)

FIXTURES = Path(__file__).parent / "fixtures"
SYSTEM = "You are a helpful weather assistant. Use the tools when needed."
USER = "What's the weather in Paris today?"
ANSWER = "It's 18 °C and sunny in Paris today."
WEATHER_CALL = ToolCall(id="call_Vx81pQ", name="get_weather", arguments='{"city":"Paris"}')
WEATHER_TOOL = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_RESULT = '{"temperature_c": 18, "conditions": "sunny"}'


class SpanFactory:
    """Finished spans from a private SDK provider (never the global one)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def from_fixture(self, name: str) -> ReadableSpan:
        data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
        return self.make(
            data["name"],
            data["attributes"],
            events=data.get("events", []),
            kind=SpanKind[data.get("kind", "INTERNAL")],
        )

    def make(
        self,
        name: str,
        attributes: dict[str, Any],
        *,
        events: list[dict[str, Any]] = (),  # type: ignore[assignment]
        kind: SpanKind = SpanKind.INTERNAL,
        status: Status | None = None,
    ) -> ReadableSpan:
        span = self.tracer.start_span(name, kind=kind, attributes=attributes)
        for event in events:
            span.add_event(event["name"], event["attributes"])
        if status is not None:
            span.set_status(status)
        span.end()
        return self.exporter.get_finished_spans()[-1]


@pytest.fixture
def spans() -> Iterator[SpanFactory]:
    factory = SpanFactory()
    yield factory
    factory.provider.shutdown()


def llm_view(spans: SpanFactory, fixture: str) -> LLMSpan:
    view = span_view(SpanRecord.from_readable(spans.from_fixture(fixture)))
    assert isinstance(view, LLMSpan)
    return view


def test_openinference_tool_call_request_reads_every_field(spans: SpanFactory) -> None:
    view = llm_view(spans, "openinference_openai_tool_call.json")

    assert view.name == "ChatCompletion"
    assert view.kind == "llm"
    assert view.status == "unset"
    assert view.error is None
    assert view.model == "gpt-4o-mini-2024-07-18"
    assert view.provider == "openai"
    assert view.input_messages == (
        LLMMessage(role="system", content=SYSTEM),
        LLMMessage(role="user", content=USER),
    )
    assert view.output_messages == (
        LLMMessage(role="assistant", content=None, tool_calls=(WEATHER_CALL,)),
    )
    assert view.tool_calls == (WEATHER_CALL,)
    assert view.usage == TokenUsage(
        input_tokens=82, output_tokens=16, total_tokens=98, cache_read_tokens=0
    )
    assert view.finish_reasons == ("tool_calls",)
    assert view.parameters["model"] == "gpt-4o-mini"
    assert view.parameters["temperature"] == 0
    assert view.parameters["tools"][0]["function"]["name"] == "get_weather"
    assert view.output_text == ""
    assert view.input["messages"][1] == {"role": "user", "content": USER}
    assert view.output["id"] == "chatcmpl-AbC123"
    assert view.named_values == ()


def test_openinference_tool_result_request_reads_the_round_trip(spans: SpanFactory) -> None:
    view = llm_view(spans, "openinference_openai_tool_result.json")

    assert view.input_messages == (
        LLMMessage(role="system", content=SYSTEM),
        LLMMessage(role="user", content=USER),
        LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),
        LLMMessage(
            role="tool",
            content='{"temperature_c": 18, "conditions": "sunny"}',
            tool_call_id="call_Vx81pQ",
        ),
    )
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.tool_calls == ()
    assert view.output_text == ANSWER
    assert view.usage == TokenUsage(input_tokens=121, output_tokens=12, total_tokens=133)
    assert view.finish_reasons == ("stop",)
    assert view.model == "gpt-4o-mini-2024-07-18"
    assert view.provider == "openai"


def test_openinference_content_parts_join_their_text(spans: SpanFactory) -> None:
    view = llm_view(spans, "openinference_openai_multipart.json")

    assert view.input_messages == (
        LLMMessage(role="user", content="What is in this picture?\nAnswer in one sentence."),
    )
    assert view.output_text == "A cat is asleep on a sunny windowsill."
    assert view.parameters == {"model": "gpt-4o", "max_tokens": 50}
    assert view.usage.total_tokens == 309
    assert view.model == "gpt-4o-2024-08-06"


def test_genai_tool_call_reads_every_field(spans: SpanFactory) -> None:
    view = llm_view(spans, "genai_chat_tool_call.json")

    assert view.name == "chat gpt-4o-mini"
    assert view.kind == "llm"
    assert view.model == "gpt-4o-mini-2024-07-18"
    assert view.provider == "openai"
    assert view.input_messages == (
        LLMMessage(role="system", content="You are a helpful weather assistant."),
        LLMMessage(role="user", content=USER),
    )
    assert view.output_messages == (LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),)
    assert view.tool_calls == (WEATHER_CALL,)
    assert view.usage == TokenUsage(
        input_tokens=82,
        output_tokens=16,
        total_tokens=98,
        cache_read_tokens=64,
        cache_creation_tokens=0,
    )
    assert view.finish_reasons == ("tool_calls",)
    assert view.parameters == {"temperature": 0.0, "max_tokens": 256}
    assert view.output_text == ""
    assert view.input is None
    assert view.output is None


def test_genai_tool_round_trip_reads_the_tool_response(spans: SpanFactory) -> None:
    view = llm_view(spans, "genai_chat_tool_round_trip.json")

    assert view.input_messages == (
        LLMMessage(role="system", content="You are a helpful weather assistant."),
        LLMMessage(role="user", content=USER),
        LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),
        LLMMessage(
            role="tool",
            content='{"temperature_c":18,"conditions":"sunny"}',
            tool_call_id="call_Vx81pQ",
        ),
    )
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.output_text == ANSWER
    assert view.finish_reasons == ("stop",)
    assert view.usage == TokenUsage(input_tokens=121, output_tokens=12, total_tokens=133)
    assert view.parameters == {"temperature": 0.0, "stop_sequences": ["\n\n"]}


def test_genai_span_events_give_messages_and_finish_reasons(spans: SpanFactory) -> None:
    view = llm_view(spans, "genai_chat_events.json")

    assert view.provider == "openai"
    assert view.input_messages == (
        LLMMessage(role="system", content="You answer in French."),
        LLMMessage(role="user", content="What time is it? Then say hello."),
        LLMMessage(
            role="assistant", tool_calls=(ToolCall(id="call_1", name="get_time", arguments="{}"),)
        ),
        LLMMessage(role="tool", content="12:00", tool_call_id="call_1"),
    )
    assert view.output_messages == (LLMMessage(role="assistant", content="Il est midi. Bonjour !"),)
    assert view.finish_reasons == ("stop",)
    assert view.usage == TokenUsage(input_tokens=40, output_tokens=5, total_tokens=45)
    assert view.parameters == {"temperature": 0.5}


def test_flattened_gen_ai_prompt_attributes_are_read(spans: SpanFactory) -> None:
    view = llm_view(spans, "genai_flattened_prompt.json")

    assert view.model == "gpt-3.5-turbo-0125"
    assert view.input_messages == (LLMMessage(role="user", content="Tell me a joke about tests."),)
    assert view.output_text == "My tests never fail. They just discover new requirements."
    assert view.finish_reasons == ("stop",)
    assert view.usage == TokenUsage(input_tokens=13, output_tokens=11, total_tokens=24)


def test_llm_span_without_output_messages_falls_back_to_output_value(
    spans: SpanFactory,
) -> None:
    span = spans.make(
        "complete",
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "local-model",
            "output.value": "plain answer",
            "output.mime_type": "text/plain",
        },
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.output_text == "plain answer"
    assert view.usage == TokenUsage()
    assert view.finish_reasons == ()


def test_llm_span_by_its_kind_alone_reads_a_choices_output_as_the_reply(
    spans: SpanFactory,
) -> None:
    output = {"choices": [{"finish_reason": "stop", "message": {"content": ANSWER}}]}
    span = spans.make(
        "answer",
        {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps({"question": USER}),
            "input.mime_type": "application/json",
            "output.value": json.dumps(output),
            "output.mime_type": "application/json",
        },
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert (view.model, view.provider) == (None, None)
    assert view.input_messages == ()
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.usage == TokenUsage()
    assert view.parameters == {}
    assert view.finish_reasons == ("stop",)
    assert view.source == "input_output"
    assert view.input == {"question": USER}
    assert view.output == output


def test_llm_span_whose_input_and_output_are_not_a_model_call_reads_by_its_kind_alone(
    spans: SpanFactory,
) -> None:
    span = spans.make(
        "answer",
        {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps({"question": USER}),
            "input.mime_type": "application/json",
            "output.value": ANSWER,
            "output.mime_type": "text/plain",
        },
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.source == "kind"
    assert (view.model, view.input_messages, view.output_messages) == (None, (), ())
    assert view.output_text == ANSWER


# --- @wrap(kind="llm") around a client call: OpenAI-shaped input and output ---------------------


def test_wrap_llm_span_reads_a_chat_completions_request_and_response(
    spans: SpanFactory,
) -> None:
    view = llm_view(spans, "wrap_openai_chat_tool_call.json")

    assert view.source == "input_output"
    assert view.model == "gpt-4o-mini-2024-07-18"
    assert view.provider is None
    assert view.input_messages == (
        LLMMessage(role="system", content=SYSTEM),
        LLMMessage(role="user", content=USER),
    )
    assert view.output_messages == (
        LLMMessage(role="assistant", content=None, tool_calls=(WEATHER_CALL,)),
    )
    assert view.tool_calls == (WEATHER_CALL,)
    assert view.tools == (WEATHER_TOOL,)
    assert view.usage == TokenUsage(
        input_tokens=82, output_tokens=16, total_tokens=98, cache_read_tokens=64
    )
    assert view.finish_reasons == ("tool_calls",)
    assert view.parameters == {"temperature": 0}
    assert view.output_text == ""


def test_wrap_llm_span_reads_the_tool_round_trip_of_a_chat_request(spans: SpanFactory) -> None:
    view = llm_view(spans, "wrap_openai_chat_tool_result.json")

    assert view.input_messages == (
        LLMMessage(role="system", content=SYSTEM),
        LLMMessage(role="user", content=USER),
        LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),
        LLMMessage(role="tool", content=WEATHER_RESULT, tool_call_id="call_Vx81pQ"),
    )
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.output_text == ANSWER
    assert view.usage == TokenUsage(
        input_tokens=121,
        output_tokens=12,
        total_tokens=133,
        cache_read_tokens=0,
        cache_creation_tokens=96,
    )
    assert view.finish_reasons == ("stop",)


def test_wrap_llm_span_reads_a_responses_api_request_and_response(spans: SpanFactory) -> None:
    view = llm_view(spans, "wrap_openai_responses.json")

    assert view.source == "input_output"
    assert view.model == "gpt-5-mini-2025-08-07"
    assert view.input_messages == (
        LLMMessage(role="system", content=SYSTEM),
        LLMMessage(role="user", content=USER),
        LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),
        LLMMessage(role="tool", content=WEATHER_RESULT, tool_call_id="call_Vx81pQ"),
    )
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.output_text == ANSWER
    assert view.tools == (WEATHER_TOOL,)
    assert view.usage == TokenUsage(
        input_tokens=121,
        output_tokens=12,
        total_tokens=133,
        cache_read_tokens=96,
        cache_creation_tokens=0,
    )
    assert view.parameters == {"reasoning": {"effort": "low"}}


def wrap_llm_span(spans: SpanFactory, input_value: Any, output_value: Any) -> LLMSpan:
    attributes = {
        "openinference.span.kind": "LLM",
        "input.value": json.dumps(input_value),
        "input.mime_type": "application/json",
        "output.value": json.dumps(output_value),
        "output.mime_type": "application/json",
    }
    view = span_view(SpanRecord.from_readable(spans.make("call_model", attributes)))
    assert isinstance(view, LLMSpan)
    return view


def test_wrap_llm_span_reads_bound_arguments_and_a_text_reply(spans: SpanFactory) -> None:
    arguments = {
        "messages": [{"role": "user", "content": USER}],
        "model": "gpt-4o-mini",
        "temperature": 0.2,
        "tools": None,
    }

    view = wrap_llm_span(spans, arguments, ANSWER)

    assert view.model == "gpt-4o-mini"
    assert view.input_messages == (LLMMessage(role="user", content=USER),)
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)
    assert view.parameters == {"temperature": 0.2}
    assert view.tools == ()
    assert view.usage == TokenUsage()


def test_wrap_llm_span_reads_a_request_given_as_the_one_argument(spans: SpanFactory) -> None:
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": USER}]}

    view = wrap_llm_span(spans, {"request": request}, {"role": "assistant", "content": ANSWER})

    assert view.model == "gpt-4o-mini"
    assert view.input_messages == (LLMMessage(role="user", content=USER),)
    assert view.output_messages == (LLMMessage(role="assistant", content=ANSWER),)


def test_wrap_llm_span_reads_a_responses_text_input_and_a_function_call(
    spans: SpanFactory,
) -> None:
    response = {
        "object": "response",
        "model": "gpt-5-mini",
        "output": [
            {
                "type": "function_call",
                "call_id": "call_Vx81pQ",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            }
        ],
        "incomplete_details": None,
        "usage": {"input_tokens": 30, "output_tokens": 9, "total_tokens": 39},
    }

    view = wrap_llm_span(spans, {"model": "gpt-5-mini", "input": USER}, response)

    assert view.input_messages == (LLMMessage(role="user", content=USER),)
    assert view.output_messages == (LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,)),)
    assert view.tool_calls == (WEATHER_CALL,)
    assert view.usage == TokenUsage(input_tokens=30, output_tokens=9, total_tokens=39)


def test_an_incomplete_response_gives_its_reason_as_the_finish_reason(
    spans: SpanFactory,
) -> None:
    response = {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [],
    }

    view = wrap_llm_span(spans, {"model": "gpt-5-mini", "input": USER}, response)

    assert view.finish_reasons == ("max_output_tokens",)


@pytest.mark.parametrize(
    ("input_value", "output_value"),
    [
        ({"messages": "not a list", "model": 3}, {"choices": "none"}),
        (
            {"messages": [1, None, {"role": 5, "content": {"x": 1}}]},
            {"choices": [7, {"message": 3}]},
        ),
        ({"input": [{"type": "function_call"}, {"type": "function_call_output"}, 4]}, []),
        ({"input": USER, "tools": [3, {"type": "function"}, {"function": "x"}]}, {"output": 9}),
        ({"messages": []}, {"usage": {"prompt_tokens": "many", "prompt_tokens_details": 3}}),
        ({"instructions": ["a", 1]}, {"output": [{"type": "message", "content": "plain"}]}),
        ({"request": {"request": {"messages": [{"role": "user", "content": "deep"}]}}}, None),
    ],
)
def test_odd_request_and_response_bodies_never_raise(
    spans: SpanFactory, input_value: Any, output_value: Any
) -> None:
    view = wrap_llm_span(spans, input_value, output_value)

    assert all(isinstance(message, LLMMessage) for message in view.input_messages)
    assert all(isinstance(message, LLMMessage) for message in view.output_messages)
    assert all(isinstance(tool, ToolDefinition) for tool in view.tools)
    assert isinstance(view.usage, TokenUsage)


def test_llm_span_by_its_kind_with_wrap_values_and_no_model_call_reads_by_its_kind(
    spans: SpanFactory,
) -> None:
    events = [
        {
            "name": "evaltrace.wrap",
            "attributes": {
                "evaltrace.wrap.name": "answer",
                "evaltrace.wrap.purpose": "output",
                "evaltrace.wrap.value": json.dumps(ANSWER),
            },
        }
    ]
    span = spans.make(
        "answer",
        {"openinference.span.kind": "LLM", "input.value": json.dumps({"question": USER})},
        events=events,
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.source == "kind"
    assert [value.name for value in view.named_values] == ["answer"]


def test_an_instrumented_span_is_read_from_its_attributes_not_its_body(
    spans: SpanFactory,
) -> None:
    view = llm_view(spans, "openinference_openai_tool_call.json")

    assert view.source == "conventions"


# --- tools and cache token counts in the conventions ----------------------------------------------


def test_openinference_tool_definitions_and_cache_reads_are_read(spans: SpanFactory) -> None:
    view = llm_view(spans, "openinference_openai_tool_call.json")

    assert view.tools == (WEATHER_TOOL,)
    assert view.usage.cache_read_tokens == 0
    assert view.usage.cache_creation_tokens is None


def test_openinference_tool_name_and_description_attributes_are_read(
    spans: SpanFactory,
) -> None:
    span = spans.make(
        "chat",
        {
            "openinference.span.kind": "LLM",
            "llm.tools.0.tool.name": "get_weather",
            "llm.tools.0.tool.description": "Current weather for a city.",
            "llm.token_count.prompt_details.cache_write": 40,
        },
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.tools == (
        ToolDefinition(name="get_weather", description="Current weather for a city."),
    )
    assert view.usage.cache_creation_tokens == 40


def test_genai_tool_definitions_and_cache_tokens_are_read(spans: SpanFactory) -> None:
    view = llm_view(spans, "genai_chat_tool_call.json")

    assert view.tools == (WEATHER_TOOL,)
    assert (view.usage.cache_read_tokens, view.usage.cache_creation_tokens) == (64, 0)


def test_tool_definition_as_dict_is_the_function_tool_shape() -> None:
    assert WEATHER_TOOL.as_dict() == {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": WEATHER_TOOL.parameters,
    }


@pytest.mark.parametrize(
    "attributes",
    [
        {"openinference.span.kind": "EMBEDDING", "llm.model_name": "text-embedding-3-small"},
        {"openinference.span.kind": "RETRIEVER"},
        {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small"},
        {"openinference.span.kind": "CHAIN"},
    ],
)
def test_non_llm_kinds_give_observe_spans(spans: SpanFactory, attributes: dict[str, Any]) -> None:
    view = span_view(SpanRecord.from_readable(spans.make("step", attributes)))

    assert isinstance(view, ObserveSpan)


def test_a_requested_model_alone_marks_an_llm_span(spans: SpanFactory) -> None:
    view = span_view(SpanRecord.from_readable(spans.make("call", {"gen_ai.request.model": "m"})))

    assert isinstance(view, LLMSpan)
    assert view.kind == "llm"
    assert view.model == "m"


def test_usage_total_is_the_sum_when_absent(spans: SpanFactory) -> None:
    span = spans.make(
        "chat",
        {
            "openinference.span.kind": "LLM",
            "llm.token_count.prompt": 7,
            "llm.token_count.completion": 5,
        },
    )
    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.usage == TokenUsage(input_tokens=7, output_tokens=5, total_tokens=12)


@pytest.mark.parametrize(
    "attributes",
    [
        {"gen_ai.input.messages": "not json", "gen_ai.output.messages": '{"role": "x"}'},
        {"gen_ai.input.messages": '[1, "two", {"parts": "nope"}, {"role": 3, "parts": [7]}]'},
        {"gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "tool_call"}]}]'},
        {"gen_ai.system_instructions": "[[[", "gen_ai.response.finish_reasons": "stop"},
        {"llm.input_messages.x.message.role": "user", "llm.input_messages.0": "flat"},
        {"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}"},
        {"llm.token_count.prompt": "many", "llm.token_count.completion": True},
        {"llm.invocation_parameters": "{broken", "gen_ai.request.top_p": 0.9},
        {"input.value": '{"a": ' * 50_000, "output.value": "[" * 100_000},
    ],
)
def test_odd_attributes_never_raise(spans: SpanFactory, attributes: dict[str, Any]) -> None:
    span = spans.make("chat", {"gen_ai.operation.name": "chat", **attributes})

    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert all(isinstance(message, LLMMessage) for message in view.input_messages)
    assert all(isinstance(message, LLMMessage) for message in view.output_messages)
    assert isinstance(view.usage, TokenUsage)


def test_odd_span_events_never_raise(spans: SpanFactory) -> None:
    span = spans.make(
        "chat",
        {"gen_ai.operation.name": "chat"},
        events=[
            {"name": "gen_ai.user.message", "attributes": {"body": "[1, 2]"}},
            {"name": "gen_ai.assistant.message", "attributes": {"tool_calls": "[{}, 3]"}},
            {"name": "gen_ai.choice", "attributes": {"body": "{oops", "message": "{}"}},
        ],
    )

    view = span_view(SpanRecord.from_readable(span))

    assert isinstance(view, LLMSpan)
    assert view.output_messages == (LLMMessage(role="assistant", content="{oops"),)


def test_error_status_and_exception_event_give_a_span_error(spans: SpanFactory) -> None:
    tracer = spans.tracer
    with pytest.raises(ValueError), tracer.start_as_current_span("lookup"):
        raise ValueError("city not found")
    view = span_view(SpanRecord.from_readable(spans.exporter.get_finished_spans()[-1]))

    assert view.status == "error"
    assert view.error is not None
    assert view.error.type == "ValueError"
    assert view.error.message == "city not found"


def test_error_without_exception_event_uses_the_status_description(spans: SpanFactory) -> None:
    span = spans.make("step", {}, status=Status(StatusCode.ERROR, "upstream timed out"))
    view = span_view(SpanRecord.from_readable(span))

    assert view.error is not None
    assert (view.error.type, view.error.message) == (None, "upstream timed out")


def test_views_expose_times_kind_and_read_only_attributes(spans: SpanFactory) -> None:
    span = spans.tracer.start_span(
        "answer",
        attributes={"openinference.span.kind": "CHAIN", "input.value": '{"q": 1}'},
        start_time=1_700_000_000_000_000_000,
    )
    span.set_status(Status(StatusCode.OK))
    span.end(end_time=1_700_000_000_250_000_000)
    view = span_view(SpanRecord.from_readable(spans.exporter.get_finished_spans()[-1]))

    assert view.kind == "chain"
    assert view.status == "ok"
    assert view.started_at == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert view.ended_at.tzinfo is UTC
    assert view.duration_ms == 250.0
    assert view.input == {"q": 1}
    with pytest.raises(TypeError):
        view.attributes["x"] = 1  # type: ignore[index]


def test_plain_text_input_is_not_decoded_as_json(spans: SpanFactory) -> None:
    span = spans.make(
        "echo", {"input.value": "42", "input.mime_type": "text/plain", "output.value": "42"}
    )
    view = span_view(SpanRecord.from_readable(span))

    assert view.input == "42"
    assert view.output == 42


def test_truncation_marker_is_kept_as_is(spans: SpanFactory) -> None:
    marker = {"__evaltrace_truncated__": True, "original_bytes": 90_000, "preview": "[1, 2"}
    span = spans.make("big", {"output.value": json.dumps(marker)})

    assert span_view(SpanRecord.from_readable(span)).output == marker


def test_message_as_dict_has_role_content_and_tool_calls() -> None:
    message = LLMMessage(role="assistant", tool_calls=(WEATHER_CALL,))

    assert message.as_dict() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_Vx81pQ", "name": "get_weather", "arguments": '{"city":"Paris"}'}
        ],
    }


def test_a_token_count_too_long_to_read_is_skipped() -> None:
    record = SpanRecord(
        trace_id=1,
        span_id=2,
        name="chat",
        start_time_ns=0,
        end_time_ns=1,
        attributes={
            "openinference.span.kind": "LLM",
            "llm.token_count.prompt": "9" * 5000,
            "llm.token_count.completion": "7",
        },
    )

    view = span_view(record)

    assert isinstance(view, LLMSpan)
    assert view.usage == TokenUsage(input_tokens=None, output_tokens=7, total_tokens=7)


def llm_kind_view(spans: SpanFactory, input_text: str, output_text: str) -> LLMSpan:
    """A span of kind LLM whose input and output texts are given as they are."""
    attributes = {
        "openinference.span.kind": "LLM",
        "input.value": input_text,
        "input.mime_type": "application/json",
        "output.value": output_text,
        "output.mime_type": "application/json",
    }
    view = span_view(SpanRecord.from_readable(spans.make("call_model", attributes)))
    assert isinstance(view, LLMSpan)
    return view


def test_wrap_llm_span_reads_a_request_whose_keys_are_written_with_escapes(
    spans: SpanFactory,
) -> None:
    # "\u006dessages" is "messages": the text names the key only once decoded.
    request = '{"\\u006dessages": [{"role": "user", "content": "hi"}], "model": "m"}'
    view = llm_kind_view(spans, request, '"hello"')

    assert view.source == "input_output"
    assert view.model == "m"
    assert view.input_messages == (LLMMessage(role="user", content="hi"),)
    assert view.output_messages == (LLMMessage(role="assistant", content="hello"),)


def test_wrap_llm_span_reads_a_response_after_leading_whitespace(spans: SpanFactory) -> None:
    response = ' \n\t{"choices": [{"finish_reason": "stop", "message": {"content": "hi"}}]}'
    view = llm_kind_view(spans, '{"question": "q"}', response)

    assert view.source == "input_output"
    assert view.output_messages == (LLMMessage(role="assistant", content="hi"),)
    assert view.finish_reasons == ("stop",)


def test_llm_span_whose_texts_name_no_request_or_response_is_a_call_by_its_kind(
    spans: SpanFactory,
) -> None:
    view = llm_kind_view(spans, '{"query": "step 1"}', '"result 1"')

    assert view.source == "kind"
    assert (view.model, view.usage, view.parameters) == (None, TokenUsage(), {})
    assert view.input == {"query": "step 1"} and view.output == "result 1"
