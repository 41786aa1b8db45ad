from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import context as otel_context
from pydantic import BaseModel

from evaltrace import capture_traces, run_and_evaluate, wrap
from evaltrace.capture import config
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import DuplicateWrapNameError, MultipleTracesError, NoTraceError
from evaltrace.evals import by_kind, by_name, first_llm_call, last_llm_call, root, select
from evaltrace.evals.evaluable import Evaluable, NamedData, checked_model
from evaltrace.evals.evaluation import Evaluation
from evaltrace.trace import ObservationNode, build_trace, split_traces
from span_factory import T0, Spans, wrap_event


@pytest.fixture
def spans() -> Iterator[Spans]:
    factory = Spans()
    yield factory
    factory.provider.shutdown()


def decorated(name: str, arguments: dict[str, Any], result: Any) -> dict[str, Any]:
    return {
        "openinference.span.kind": "CHAIN",
        "input.value": json.dumps(arguments),
        "input.mime_type": "application/json",
        "output.value": json.dumps(result),
        "output.mime_type": "application/json",
    }


def chat(prompt: str, answer: str, *, tool: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": answer}]
    if tool is not None:
        parts.append({"type": "tool_call", "id": "call_1", "name": tool, "arguments": {"q": 1}})
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
        ),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


def test_root_uses_wrap_values_from_span_events(spans: Spans) -> None:
    app = spans.start("app", 0, attributes=decorated("app", {"question": "Hi"}, "Hello"))
    wrap_event(app, "user_profile", "input", {"name": "Ada"})
    step = spans.start("step", 1, parent=app)
    wrap_event(step, "answer", "output", "Hello")
    wrap_event(step, "mood", "state", "cheerful")
    spans.end(step, 2)
    spans.end(app, 3)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_input == [NamedData(name="user_profile", value={"name": "Ada"})]
    assert evaluable.eval_output == [
        NamedData(name="answer", value="Hello"),
        NamedData(name="mood", value="cheerful"),
    ]
    assert evaluable.eval_metadata is None
    assert not evaluable.has_expectation


def test_root_uses_wrap_records_in_record_order(spans: Spans) -> None:
    app = spans.start("app", 0, attributes=decorated("app", {"question": "Hi"}, "Hello"))
    step = spans.start("step", 1, parent=app)
    spans.end(step, 2)
    spans.end(app, 3)
    finished = spans.finished()
    step_id = next(span.context.span_id for span in finished if span.name == "step")
    app_id = next(span.context.span_id for span in finished if span.name == "app")
    records = [
        WrapRecord(name="draft", purpose="state", value="H", span_id=step_id, timestamp_ns=T0 + 1),
        WrapRecord(
            name="answer", purpose="output", value="Hello", span_id=app_id, timestamp_ns=T0 + 2
        ),
        WrapRecord(name="query", purpose="input", value="Hi", span_id=None, timestamp_ns=T0 + 3),
    ]

    evaluable = root(build_trace(finished, records))

    assert evaluable.eval_input == [NamedData(name="query", value="Hi")]
    assert [item.name for item in evaluable.eval_output] == ["draft", "answer"]


def test_root_falls_back_to_the_root_span_arguments_and_return_value(spans: Spans) -> None:
    app = spans.start(
        "app", 0, attributes=decorated("app", {"question": "Hi", "lang": "en"}, {"text": "Hello"})
    )
    spans.end(app, 1)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_input == [
        NamedData(name="question", value="Hi"),
        NamedData(name="lang", value="en"),
    ]
    assert evaluable.eval_output == [NamedData(name="output", value={"text": "Hello"})]


def test_root_input_that_is_not_a_mapping_is_named_input(spans: Spans) -> None:
    span = spans.start(
        "app", 0, attributes={"input.value": "plain", "input.mime_type": "text/plain"}
    )
    spans.end(span, 1)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_input == [NamedData(name="input", value="plain")]
    assert evaluable.eval_output == [NamedData(name="output", value=None)]


def test_root_keeps_a_truncated_input_whole(spans: Spans) -> None:
    marker = {"__evaltrace_truncated__": True, "original_bytes": 5000, "preview": "{..."}
    spans.end(spans.start("app", 0, attributes={"input.value": json.dumps(marker)}), 1)

    assert root(build_trace(spans.finished())).eval_input == [NamedData(name="input", value=marker)]


def two_runs_of_one_app(spans: Spans) -> list[ObservationNode]:
    """Two runs of the same app, one trace each, as a file holding several runs gives them."""
    for start, question in ((0, "Hi"), (10, "Bye")):
        run = spans.start("app", start, attributes=decorated("app", {"q": question}, question))
        wrap_event(run, "answer", "output", question.upper())
        spans.end(run, start + 1)
    return build_trace(spans.finished())


def test_root_of_several_runs_names_their_traces_and_how_to_pick_one(spans: Spans) -> None:
    trace = two_runs_of_one_app(spans)
    trace_ids = [f"{node.span.trace_id:032x}" for node in trace]

    with pytest.raises(MultipleTracesError) as caught:
        root(trace)

    message = str(caught.value)
    assert all(trace_id in message for trace_id in trace_ids)
    assert "split_traces" in message and "--trace-id" in message
    assert "many=True" not in message  # not the app's fault: nothing to change in it
    assert caught.value.trace_ids == trace_ids
    assert isinstance(caught.value, ValueError)


def test_root_of_each_trace_of_several_runs_gives_each_run(spans: Spans) -> None:
    trace = two_runs_of_one_app(spans)

    answers = [root(one).output_value("answer") for one in split_traces(trace)]

    assert answers == ["HI", "BYE"]


def test_root_pools_distinct_values_of_several_traces(spans: Spans) -> None:
    fetch = spans.start("fetch", 0)
    wrap_event(fetch, "question", "input", "Hi")
    spans.end(fetch, 1)
    reply = spans.start("reply", 2)
    wrap_event(reply, "answer", "output", "Hello")
    spans.end(reply, 3)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_input == [NamedData(name="question", value="Hi")]
    assert evaluable.eval_output == [NamedData(name="answer", value="Hello")]


def test_root_of_several_traces_does_not_take_one_root_span_as_the_run(spans: Spans) -> None:
    for start, name in ((0, "retrieve"), (2, "generate")):
        attributes = decorated(name, {"q": "Hi"}, f"{name} result")
        spans.end(spans.start(name, start, attributes=attributes), start + 1)

    with pytest.raises(
        MultipleTracesError, match="the root spans of several of them have an input"
    ):
        root(build_trace(spans.finished()))


def test_root_of_several_traces_reads_the_only_root_span_with_values(spans: Spans) -> None:
    spans.end(spans.start("background job", 0), 1)  # a second trace that carries no values
    app = spans.start("app", 2, attributes=decorated("app", {"question": "Hi"}, "Hello"))
    spans.end(app, 3)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_input == [NamedData(name="question", value="Hi")]
    assert evaluable.eval_output == [NamedData(name="output", value="Hello")]


@pytest.mark.anyio
async def test_a_run_that_starts_a_detached_trace_is_still_evaluated_as_one_run() -> None:
    tracer = config.runtime().provider.get_tracer("tests")

    @wrap(kind="agent")
    def app(question: str) -> str:
        with tracer.start_as_current_span("detached", context=otel_context.Context()):
            pass
        return question.upper()

    evaluation = await run_and_evaluate(
        lambda evaluable: evaluable.output_value("output") == "HI", app, "hi"
    )

    assert evaluation.error is None and evaluation.score == 1.0


def test_a_name_recorded_twice_in_one_of_several_traces_is_still_the_apps_error(
    spans: Spans,
) -> None:
    run = spans.start("app", 0)
    wrap_event(run, "answer", "output", "a")
    wrap_event(run, "answer", "output", "b")
    spans.end(run, 1)
    other = spans.start("other", 2)
    wrap_event(other, "question", "input", "q")
    spans.end(other, 3)

    with pytest.raises(DuplicateWrapNameError, match="many=True"):
        root(build_trace(spans.finished()))


def test_root_of_an_empty_trace_says_nothing_was_captured() -> None:
    with pytest.raises(NoTraceError, match="the trace is empty"):
        root([])


def test_last_llm_call_is_the_one_that_ended_last(spans: Spans) -> None:
    app = spans.start("app", 0)
    slow = spans.start("first call", 1, parent=app, attributes=chat("Plan", "Plan made"))
    fast = spans.start("second call", 2, parent=app, attributes=chat("Act", "Acted", tool="search"))
    spans.end(fast, 3)
    spans.end(slow, 9)
    spans.end(app, 10)
    trace = build_trace(spans.finished())

    last = last_llm_call(trace)
    first = first_llm_call(trace)

    assert last.eval_input == [
        NamedData(name="messages", value=[{"role": "user", "content": "Plan", "tool_calls": []}])
    ]
    assert last.eval_output == [NamedData(name="output", value="Plan made")]
    assert first.eval_output == [NamedData(name="output", value="Plan made")]


def test_llm_call_selection_adds_tool_calls_when_the_model_asked_for_tools(
    spans: Spans,
) -> None:
    spans.end(spans.start("call", 0, attributes=chat("Find it", "Searching", tool="search")), 1)

    evaluable = last_llm_call(build_trace(spans.finished()))

    assert evaluable.eval_output == [
        NamedData(name="output", value="Searching"),
        NamedData(
            name="tool_calls", value=[{"id": "call_1", "name": "search", "arguments": '{"q":1}'}]
        ),
    ]


def test_first_llm_call_is_the_one_that_started_first(spans: Spans) -> None:
    app = spans.start("app", 0)
    later = spans.start("later", 5, parent=app, attributes=chat("B", "b"))
    earlier = spans.start("earlier", 1, parent=app, attributes=chat("A", "a"))
    spans.end(later, 6)
    spans.end(earlier, 7)
    spans.end(app, 8)

    evaluable = first_llm_call(build_trace(spans.finished()))

    assert evaluable.eval_output == [NamedData(name="output", value="a")]


def kind_only_llm(arguments: dict[str, Any], result: Any) -> dict[str, Any]:
    """What ``@wrap(kind="llm")`` records: a kind, the arguments and the return value."""
    return {**decorated("call_model", arguments, result), "openinference.span.kind": "LLM"}


def test_llm_selectors_prefer_the_call_inside_a_kind_only_wrapper(spans: Spans) -> None:
    wrapper = spans.start("call_model", 0, attributes=kind_only_llm({"prompt": "Hi"}, "Hello"))
    spans.end(spans.start("chat", 1, parent=wrapper, attributes=chat("Hi", "Hello")), 2)
    spans.end(wrapper, 3)
    trace = build_trace(spans.finished())

    for selector in (last_llm_call, first_llm_call):
        evaluable = selector(trace)
        assert evaluable.input_value("messages") == [
            {"role": "user", "content": "Hi", "tool_calls": []}
        ], selector.__name__


def test_a_kind_only_wrapper_counts_when_nothing_inside_it_records_a_call(spans: Spans) -> None:
    app = spans.start("app", 0)
    spans.end(spans.start("chat", 1, parent=app, attributes=chat("Plan", "Plan made")), 2)
    stub = spans.start("call_model", 3, parent=app, attributes=kind_only_llm({"p": 1}, "stubbed"))
    spans.end(stub, 4)
    spans.end(app, 5)

    evaluable = last_llm_call(build_trace(spans.finished()))

    assert evaluable.output_value("output") == "stubbed"


def test_llm_selectors_name_the_spans_present_when_there_is_no_llm_call(spans: Spans) -> None:
    app = spans.start("app", 0, attributes={"openinference.span.kind": "CHAIN"})
    spans.end(
        spans.start("lookup", 1, parent=app, attributes={"openinference.span.kind": "TOOL"}), 2
    )
    spans.end(app, 3)

    with pytest.raises(NoTraceError) as caught:
        last_llm_call(build_trace(spans.finished()))

    assert str(caught.value) == (
        "Found no LLM span in the trace. Spans present (name and kind): "
        "'app' (chain), 'lookup' (tool)."
    )


def test_by_name_selects_the_last_ended_span_of_that_name(spans: Spans) -> None:
    app = spans.start("app", 0)
    early = spans.start("retrieve", 1, parent=app, attributes=decorated("r", {"query": "a"}, ["x"]))
    spans.end(early, 2)
    late = spans.start("retrieve", 3, parent=app, attributes=decorated("r", {"query": "b"}, ["y"]))
    spans.end(late, 4)
    spans.end(app, 5)

    evaluable = by_name("retrieve")(build_trace(spans.finished()))

    assert evaluable.eval_input == [NamedData(name="query", value="b")]
    assert evaluable.eval_output == [NamedData(name="output", value=["y"])]


def test_by_name_reads_a_model_call_like_last_llm_call(spans: Spans) -> None:
    spans.end(spans.start("call", 0, attributes=chat("Q", "A")), 1)
    trace = build_trace(spans.finished())

    assert by_name("call")(trace) == last_llm_call(trace)


def test_by_name_without_a_match_lists_the_spans_present(spans: Spans) -> None:
    spans.end(spans.start("app", 0), 1)

    with pytest.raises(NoTraceError, match=r"no span named 'retrieve'.*'app' \(unknown\)"):
        by_name("retrieve")(build_trace(spans.finished()))


def test_by_kind_ignores_case(spans: Spans) -> None:
    app = spans.start("app", 0)
    tool = spans.start("lookup", 1, parent=app, attributes={"openinference.span.kind": "TOOL"})
    tool.set_attribute("output.value", '"found"')
    spans.end(tool, 2)
    spans.end(app, 3)

    evaluable = by_kind("TOOL")(build_trace(spans.finished()))

    assert evaluable.eval_output == [NamedData(name="output", value="found")]
    assert by_kind("tool").__name__ == "by_kind('tool')"


def test_select_uses_any_test_on_the_span(spans: Spans) -> None:
    app = spans.start("app", 0)
    spans.end(spans.start("fast", 1, parent=app, attributes={"output.value": '"f"'}), 2)
    spans.end(spans.start("slow", 3, parent=app, attributes={"output.value": '"s"'}), 900)
    spans.end(app, 901)
    slow_child = select(lambda span: span.duration_ms > 500 and span.name != "app")

    assert slow_child(build_trace(spans.finished())).eval_output == [
        NamedData(name="output", value="s")
    ]


def test_select_error_uses_the_description(spans: Spans) -> None:
    spans.end(spans.start("app", 0), 1)

    with pytest.raises(NoTraceError, match="no span slower than 5 s"):
        select(lambda span: span.duration_ms > 5000, description="a span slower than 5 s")(
            build_trace(spans.finished())
        )


def test_last_llm_call_on_a_kind_only_span_keeps_its_arguments() -> None:
    @wrap(kind="llm")
    def complete(prompt: str, temperature: float = 0.0) -> str:
        return "hello " + prompt

    with capture_traces() as handler:
        complete("there")

    evaluable = last_llm_call(handler.trace)
    assert [(item.name, item.value) for item in evaluable.eval_input] == [
        ("messages", []),
        ("prompt", "there"),
        ("temperature", 0.0),
    ]
    assert [(item.name, item.value) for item in evaluable.eval_output] == [
        ("output", "hello there")
    ]


def openai_llm(request: dict[str, Any], response: Any) -> dict[str, Any]:
    """What ``@wrap(kind="llm")`` records around a client call: the request and the response."""
    return kind_only_llm(request, response)


CHAT_REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
CHAT_RESPONSE = {
    "object": "chat.completion",
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "Hello"}}],
    "usage": {
        "prompt_tokens": 8,
        "completion_tokens": 2,
        "total_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 4},
    },
}


def test_last_llm_call_reads_a_wrapped_client_call_as_a_model_call(spans: Spans) -> None:
    spans.end(spans.start("call_model", 0, attributes=openai_llm(CHAT_REQUEST, CHAT_RESPONSE)), 1)

    evaluable = last_llm_call(build_trace(spans.finished()))

    assert evaluable.eval_input == [
        NamedData(name="messages", value=[{"role": "user", "content": "Hi", "tool_calls": []}])
    ]
    assert evaluable.eval_output == [NamedData(name="output", value="Hello")]


def test_llm_selectors_put_model_tokens_and_ids_in_eval_metadata(spans: Spans) -> None:
    call = spans.start("call_model", 0, attributes=openai_llm(CHAT_REQUEST, CHAT_RESPONSE))
    spans.end(call, 1)
    (finished,) = spans.finished()

    for selector in (last_llm_call, first_llm_call, by_name("call_model")):
        evaluable = selector(build_trace(spans.finished()))
        assert evaluable.eval_metadata == {
            "llm_model": "gpt-4o-mini-2024-07-18",
            "llm_input_tokens": 8,
            "llm_output_tokens": 2,
            "llm_total_tokens": 10,
            "llm_cache_read_tokens": 4,
            "trace_id": f"{finished.context.trace_id:032x}",
            "span_id": f"{finished.context.span_id:016x}",
        }, selector


def test_llm_metadata_keys_hold_the_provider_of_an_instrumented_call(spans: Spans) -> None:
    attributes = {**chat("Q", "A"), "gen_ai.provider.name": "openai"}
    attributes["gen_ai.usage.cache_creation.input_tokens"] = 16
    spans.end(spans.start("chat", 0, attributes=attributes), 1)

    metadata = last_llm_call(build_trace(spans.finished())).eval_metadata

    assert metadata is not None
    assert (metadata["llm_model"], metadata["llm_provider"]) == ("gpt-4o-mini", "openai")
    assert metadata["llm_cache_creation_tokens"] == 16
    assert "llm_input_tokens" not in metadata  # not recorded: left out, never None


def test_root_that_is_a_model_call_puts_its_metadata_in_the_evaluable(spans: Spans) -> None:
    spans.end(spans.start("call_model", 0, attributes=openai_llm(CHAT_REQUEST, CHAT_RESPONSE)), 1)

    evaluable = root(build_trace(spans.finished()))

    assert evaluable.eval_metadata is not None
    assert evaluable.eval_metadata["llm_model"] == "gpt-4o-mini-2024-07-18"
    assert evaluable.eval_input == [
        NamedData(name="model", value="gpt-4o-mini"),
        NamedData(name="messages", value=[{"role": "user", "content": "Hi"}]),
    ]


def test_a_call_read_from_attributes_is_chosen_over_the_wrapper_around_it(spans: Spans) -> None:
    wrapper = spans.start("call_model", 0, attributes=openai_llm(CHAT_REQUEST, CHAT_RESPONSE))
    spans.end(spans.start("chat", 1, parent=wrapper, attributes=chat("Hi", "Hello there")), 2)
    spans.end(wrapper, 3)
    trace = build_trace(spans.finished())

    for selector in (last_llm_call, first_llm_call):
        evaluable = selector(trace)
        assert evaluable.output_value("output") == "Hello there", selector.__name__


@pytest.mark.anyio
async def test_the_entrys_metadata_is_kept_beside_the_calls() -> None:
    @wrap(kind="llm")
    def call_model(messages: list[dict[str, str]], model: str) -> dict[str, Any]:
        return CHAT_RESPONSE

    def app(question: str) -> None:
        call_model([{"role": "user", "content": question}], "gpt-4o-mini")

    seen: list[dict[str, Any] | None] = []

    def record(evaluable: Any) -> float:
        seen.append(evaluable.eval_metadata)
        return 1.0

    case = Evaluable(eval_metadata={"topic": "greetings", "llm_model": "as the entry says"})
    await run_and_evaluate(record, app, "Hi", from_trace=last_llm_call, evaluable=case)

    (metadata,) = seen
    assert metadata is not None
    assert metadata["topic"] == "greetings"
    assert metadata["llm_model"] == "as the entry says"  # the entry's value wins
    assert metadata["llm_total_tokens"] == 10


def test_root_gives_the_evaluable_validation_would_build(spans: Spans) -> None:
    app = spans.start("app", 0, attributes=decorated("app", {"question": "Hi"}, {"text": "Hello"}))
    spans.end(app, 1)

    evaluable = root(build_trace(spans.finished()))

    validated = Evaluable(
        eval_input=[NamedData(name="question", value="Hi")],
        eval_output=[NamedData(name="output", value={"text": "Hello"})],
        eval_metadata=None,
    )
    assert repr(evaluable) == repr(validated)
    assert evaluable.model_fields_set == validated.model_fields_set
    assert evaluable.model_dump_json() == validated.model_dump_json()


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (NamedData, {"name": "answer", "value": {"text": "Hello"}}),
        (Evaluable, {"eval_output": [NamedData(name="output", value=4)], "description": "d"}),
        (Evaluation, {"score": 0.5, "evaluator": "exact"}),
        (Evaluation, {"label": "positive", "evaluator": "tone"}),
    ],
)
def test_checked_model_equals_the_validated_model(model: type[BaseModel], fields: Any) -> None:
    checked = checked_model(model, fields)
    validated = model(**fields)

    assert checked == validated
    assert repr(checked) == repr(validated)
    assert checked.model_fields_set == validated.model_fields_set
    assert checked.model_dump_json() == validated.model_dump_json()


def test_checked_model_makes_each_default_of_a_factory_anew() -> None:
    first = checked_model(Evaluation, {"score": 1.0})
    second = checked_model(Evaluation, {"score": 1.0})

    assert first.details == {} and first.details is not second.details
