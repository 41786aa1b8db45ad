"""Spans made by a real third-party instrumentor (OpenInference's openai instrumentor) on a real
``openai`` client talking to the loopback judge server are captured and read as LLM spans."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from evaltrace import LLMSpan, capture_traces, first_llm_call, last_llm_call, wrap
from evaltrace.capture import config
from evaltrace.testing import FakeJudgeServer

instrumentation = pytest.importorskip("openinference.instrumentation.openai")


@pytest.fixture(scope="module")
def instrumented() -> Iterator[None]:
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=config.runtime().provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def test_openinference_openai_spans_are_captured_as_llm_spans(
    instrumented: None, fake_judge: FakeJudgeServer
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
    instrumented: None, fake_judge: FakeJudgeServer
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
    instrumented: None, fake_judge: FakeJudgeServer
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
    instrumented: None, fake_judge: FakeJudgeServer
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
