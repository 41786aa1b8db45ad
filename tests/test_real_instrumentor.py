"""Spans made by real third-party instrumentors on a real ``openai`` client talking to the
loopback judge server are captured and read as the same LLM spans: OpenInference's openai
instrumentor and the OpenTelemetry GenAI one (``opentelemetry-instrumentation-openai-v2``).
``init(instrument=["openai"])`` enables one of them on evaltrace's provider."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import evaltrace
from evaltrace import LLMSpan, capture_traces, first_llm_call, last_llm_call, wrap
from evaltrace.capture import config
from evaltrace.errors import ConfigurationError
from evaltrace.testing import FakeJudgeServer

openinference = pytest.importorskip("openinference.instrumentation.openai")
genai = pytest.importorskip("opentelemetry.instrumentation.openai_v2")

OPENINFERENCE = "openinference.instrumentation.openai"
GENAI = "opentelemetry.instrumentation.openai_v2"


@pytest.fixture(scope="module", autouse=True)
def genai_messages_on_spans() -> Iterator[None]:
    """What the GenAI instrumentor needs to put messages on its spans.

    The conventions opt-in is read once per process, by the first instrumentor that
    instruments, so it is set for the whole module, before any instrumentor runs. With the
    older ``CAPTURE_MESSAGE_CONTENT=true``, messages go to log records, which no span holds.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        patch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
        yield


@pytest.fixture(params=["openinference", "genai"])
def instrumented(request: pytest.FixtureRequest) -> Iterator[str]:
    module = openinference if request.param == "openinference" else genai
    instrumentor = module.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=config.runtime().provider)
    try:
        yield request.param
    finally:
        instrumentor.uninstrument()


def test_instrumented_openai_spans_are_captured_as_llm_spans(
    instrumented: str, fake_judge: FakeJudgeServer
) -> None:
    fake_judge.add_rule("capital", content="Paris is the capital of France.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="agent")
    def ask(question: str) -> str:
        response = client.chat.completions.create(
            model="gpt-4o-mini",
            temperature=0.2,
            messages=[
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": question},
            ],
        )
        return response.choices[0].message.content or ""

    with capture_traces() as handler:
        assert ask("What is the capital of France?") == "Paris is the capital of France."

    (agent,) = handler.trace
    (llm_node,) = agent.children
    span = llm_node.span
    assert isinstance(span, LLMSpan)
    assert span.model is not None and span.model.startswith("gpt-4o-mini")
    assert [(m.role, m.content) for m in span.input_messages] == [
        ("system", "Answer briefly."),
        ("user", "What is the capital of France?"),
    ]
    assert span.output_text == "Paris is the capital of France."
    assert span.usage.input_tokens is not None and span.usage.output_tokens is not None
    assert span.parameters.get("temperature") == 0.2
    evaluable = last_llm_call(handler.trace)
    assert evaluable.output_value("output") == "Paris is the capital of France."


def test_tool_calls_from_the_instrumentor_are_parsed(
    instrumented: str, fake_judge: FakeJudgeServer
) -> None:
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)
    tool = {
        "type": "function",
        "function": {
            "name": "select_choice",
            "parameters": {
                "type": "object",
                "properties": {"choice": {"type": "string", "enum": ["Y", "N"]}},
                "required": ["choice"],
            },
        },
    }
    with capture_traces() as handler:
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Is the sky blue?"}],
            tools=[tool],  # type: ignore[list-item]
            tool_choice={"type": "function", "function": {"name": "select_choice"}},
        )
    (node,) = handler.trace
    assert isinstance(node.span, LLMSpan)
    (call,) = node.span.tool_calls
    assert call.name == "select_choice"
    assert '"choice": "Y"' in call.arguments or '"choice":"Y"' in call.arguments


def _ask_through_a_decorated_model_call(client: openai.OpenAI, question: str) -> str:
    @wrap(kind="llm")
    def call_model(prompt: str) -> str:
        response = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
        return response.choices[0].message.content or ""

    return call_model(question)


def test_last_llm_call_picks_the_instrumented_call_inside_a_kind_only_wrapper(
    instrumented: str, fake_judge: FakeJudgeServer
) -> None:
    fake_judge.add_rule("capital", content="Paris.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)
    with capture_traces() as handler:
        _ask_through_a_decorated_model_call(client, "What is the capital of France?")

    evaluable = last_llm_call(handler.trace)

    messages = evaluable.input_value("messages")
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "What is the capital of France?")
    ]
    assert evaluable.output_value("output") == "Paris."


def test_first_llm_call_picks_the_instrumented_call_inside_a_kind_only_wrapper(
    instrumented: str, fake_judge: FakeJudgeServer
) -> None:
    fake_judge.add_rule("capital", content="Paris.")
    fake_judge.add_rule("river", content="The Seine.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="agent")
    def conversation() -> None:
        _ask_through_a_decorated_model_call(client, "What is the capital of France?")
        _ask_through_a_decorated_model_call(client, "Which river flows through it?")

    with capture_traces() as handler:
        conversation()

    evaluable = first_llm_call(handler.trace)

    assert evaluable.input_value("messages")[0]["content"] == "What is the capital of France?"
    assert evaluable.output_value("output") == "Paris."


# @wrap(kind="llm") around the client call, no instrumentor -----------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_a_wrapped_chat_completions_call_reads_as_a_model_call(
    fake_judge: FakeJudgeServer,
) -> None:
    fake_judge.add_rule("weather", tool_call="get_weather", json={"city": "Paris"})
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="llm")
    def call_model(messages: list[dict[str, str]], model: str, tools: list[dict[str, Any]]) -> Any:
        return client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
        )

    messages = [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    with capture_traces() as handler:
        response = call_model(messages, "gpt-4o-mini", [WEATHER_TOOL])

    (node,) = handler.trace
    span = node.span
    assert isinstance(span, LLMSpan)
    assert span.source == "input_output"
    assert span.model == response.model == "gpt-4o-mini"
    assert [(m.role, m.content) for m in span.input_messages] == [
        ("system", "Use the tools."),
        ("user", "What is the weather in Paris?"),
    ]
    (call,) = span.tool_calls
    assert (call.id, call.name) == (response.choices[0].message.tool_calls[0].id, "get_weather")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert [tool.name for tool in span.tools] == ["get_weather"]
    assert response.usage is not None
    assert (span.usage.input_tokens, span.usage.output_tokens) == (
        response.usage.prompt_tokens,
        response.usage.completion_tokens,
    )
    assert span.finish_reasons == ("tool_calls",)
    metadata = last_llm_call(handler.trace).eval_metadata
    assert metadata is not None
    assert (metadata["llm_model"], metadata["span_id"]) == ("gpt-4o-mini", f"{span.span_id:016x}")


def test_a_wrapped_responses_api_call_reads_as_a_model_call(fake_judge: FakeJudgeServer) -> None:
    fake_judge.add_rule("Capital", content="Paris.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="llm")
    def respond(**request: Any) -> Any:
        return client.responses.create(**request)

    with capture_traces() as handler:
        respond(model="gpt-5-mini", instructions="Answer briefly.", input="Capital of France?")

    (node,) = handler.trace
    span = node.span
    assert isinstance(span, LLMSpan)
    assert [(m.role, m.content) for m in span.input_messages] == [
        ("system", "Answer briefly."),
        ("user", "Capital of France?"),
    ]
    assert span.output_text == "Paris."
    assert span.model == "gpt-5-mini"
    assert span.usage.input_tokens is not None and span.usage.output_tokens is not None
    assert span.usage.cache_read_tokens == 0
    assert last_llm_call(handler.trace).output_value("output") == "Paris."


def test_an_instrumented_call_inside_a_wrapped_one_is_chosen(
    instrumented: str, fake_judge: FakeJudgeServer
) -> None:
    fake_judge.add_rule("Capital", content="Paris.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="llm")
    def call_model(messages: list[dict[str, str]], model: str) -> Any:
        return client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]

    with capture_traces() as handler:
        call_model([{"role": "user", "content": "Capital of France?"}], "gpt-4o-mini")

    evaluable = last_llm_call(handler.trace)
    (wrapper,) = handler.trace
    (inner,) = wrapper.children
    assert evaluable.eval_metadata is not None
    assert evaluable.eval_metadata["span_id"] == f"{inner.span.span_id:016x}"
    assert evaluable.output_value("output") == "Paris."


# init(instrument=["openai"]) ------------------------------------------------------------


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    """The instrumentors init() enables are uninstrumented by shutdown."""
    yield
    evaltrace.shutdown(timeout_millis=100)


def _ask(fake_judge: FakeJudgeServer) -> LLMSpan:
    fake_judge.add_rule("Capital", content="Paris.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)
    with capture_traces() as handler:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Capital of France?"}]
        )
    (node,) = handler.trace
    assert isinstance(node.span, LLMSpan)
    return node.span


@pytest.mark.usefixtures("fresh_runtime")
def test_instrument_openai_enables_openinference_when_it_is_installed(
    fake_judge: FakeJudgeServer,
) -> None:
    evaltrace.init(instrument=["openai"])
    span = _ask(fake_judge)
    assert "llm.model_name" in span.attributes and span.output_text == "Paris."
    evaltrace.shutdown()
    assert not openinference.OpenAIInstrumentor().is_instrumented_by_opentelemetry


@pytest.mark.usefixtures("fresh_runtime")
def test_instrument_openai_falls_back_to_the_genai_instrumentor(
    fake_judge: FakeJudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, OPENINFERENCE, None)  # as if it were not installed
    evaltrace.init(instrument=["openai"])
    span = _ask(fake_judge)
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert [(m.role, m.content) for m in span.input_messages] == [("user", "Capital of France?")]
    assert span.output_text == "Paris."


@pytest.mark.usefixtures("fresh_runtime")
def test_the_genai_instrumentor_without_content_capture_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, OPENINFERENCE, None)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    with caplog.at_level(logging.WARNING, logger="evaltrace"):
        evaltrace.init(instrument=["openai"])
    (record,) = caplog.records
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in record.getMessage()


def test_instrument_openai_with_no_instrumentor_installed_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, OPENINFERENCE, None)
    monkeypatch.setitem(sys.modules, GENAI, None)
    before = config.settings()
    with pytest.raises(ConfigurationError) as caught:
        evaltrace.init(instrument=["openai"], project_name="unchanged")
    message = str(caught.value)
    assert "pip install openinference-instrumentation-openai" in message
    assert "opentelemetry-instrumentation-openai-v2 (" in message
    assert config.settings() == before
