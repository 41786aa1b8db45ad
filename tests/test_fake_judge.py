"""FakeJudgeServer, driven through the real openai clients and a real autoevals scorer."""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import autoevals
import openai
import pytest

import evaltrace.testing
import evaltrace.testing.fake_judge
from evaltrace.cli.main import main
from evaltrace.errors import ConfigurationError
from evaltrace.testing.fake_judge import (
    FakeJudgeServer,
    RecordedRequest,
    RulesFileError,
    read_rules,
    serve_fake_judge,
)

CHOICES = ["A", "B", "C", "D", "E"]
SELECT_CHOICE_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "select_choice",
            "description": "Call this function to select a choice.",
            "parameters": {
                "type": "object",
                "properties": {
                    "reasons": {"type": "string", "title": "Reasoning"},
                    "choice": {"type": "string", "title": "Choice", "enum": CHOICES},
                },
                "required": ["reasons", "choice"],
            },
        },
    }
]
FORCE_SELECT_CHOICE: Any = {"type": "function", "function": {"name": "select_choice"}}


@pytest.fixture
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


def client_for(server: FakeJudgeServer, **options: Any) -> openai.OpenAI:
    options.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key="test", **options)


def async_client_for(server: FakeJudgeServer, **options: Any) -> openai.AsyncOpenAI:
    options.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", **options)


def ask_judge(client: openai.OpenAI, question: str) -> dict[str, Any]:
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": question}],
        tools=SELECT_CHOICE_TOOLS,
        tool_choice=FORCE_SELECT_CHOICE,
    )
    assert reply.choices[0].finish_reason == "tool_calls"
    tool_calls = reply.choices[0].message.tool_calls
    assert tool_calls is not None and len(tool_calls) == 1
    call = tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "select_choice"
    arguments: dict[str, Any] = json.loads(call.function.arguments)
    return arguments


def ask(client: openai.OpenAI, question: str, **options: Any) -> str | None:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}], **options
    )
    content: str | None = reply.choices[0].message.content
    return content


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# -- chat completions --------------------------------------------------------------------------


def test_forced_select_choice_answers_with_the_first_choice_of_the_request_enum(
    judge_server: FakeJudgeServer,
) -> None:
    arguments = ask_judge(client_for(judge_server), "Is the answer factual?")

    assert arguments["choice"] == "A"
    assert isinstance(arguments["reasons"], str) and arguments["reasons"]
    assert list(arguments) == ["reasons", "choice"]


def test_forced_tool_call_reply_is_a_realistic_chat_completion(
    judge_server: FakeJudgeServer,
) -> None:
    reply = client_for(judge_server).chat.completions.create(
        model="judge-model-7",
        messages=[{"role": "user", "content": "three word question"}],
        tools=SELECT_CHOICE_TOOLS,
        tool_choice=FORCE_SELECT_CHOICE,
    )

    assert reply.object == "chat.completion"
    assert reply.model == "judge-model-7"
    assert reply.id and reply.created > 0
    assert reply.choices[0].index == 0
    assert reply.choices[0].message.content is None
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == 3
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_rule_choice_is_returned_for_matching_requests_only(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("Paris", choice="C", reasons="Same city.")
    client = client_for(judge_server)

    assert ask_judge(client, "Expert: Paris. Submission: Paris.") == {
        "reasons": "Same city.",
        "choice": "C",
    }
    assert ask_judge(client, "Expert: Rome. Submission: Milan.")["choice"] == "A"


def test_rule_matches_a_compiled_pattern(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule(re.compile(r"score:\s*\d+"), content="matched")

    assert ask(client_for(judge_server), "final score:  42") == "matched"


def test_first_matching_rule_wins(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("cat", content="first")
    judge_server.add_rule("cat", content="second")

    assert ask(client_for(judge_server), "a cat") == "first"


def test_sequence_answers_successive_calls_in_turn_then_repeats_the_last(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("grade", sequence=["B", "D", "E"])
    client = client_for(judge_server)

    choices = [ask_judge(client, "grade this")["choice"] for _ in range(4)]

    assert choices == ["B", "D", "E", "E"]


def test_plain_request_gets_rule_content_or_the_default_text(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("weather", content="Sunny and mild.")
    client = client_for(judge_server)

    assert ask(client, "What is the weather?") == "Sunny and mild."
    assert ask(client, "Anything else?") == "ok"


def test_json_schema_response_format_gets_json_built_from_the_schema(
    judge_server: FakeJudgeServer,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "score": {"type": "number"},
            "notes": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["verdict", "score", "notes", "tags"],
    }
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": schema, "strict": True},
    }

    content = ask(client_for(judge_server), "Grade it.", response_format=response_format)

    assert content is not None
    assert json.loads(content) == {"verdict": "pass", "score": 0, "notes": "", "tags": [""]}


def test_json_schema_response_format_uses_a_rule_object_as_given(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("Grade", json={"verdict": "fail", "score": 0.25})
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": {"type": "object", "properties": {}}},
    }

    content = ask(client_for(judge_server), "Grade it.", response_format=response_format)

    assert content is not None
    assert json.loads(content) == {"verdict": "fail", "score": 0.25}


@pytest.mark.asyncio
async def test_async_client_gets_the_same_forced_tool_call(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("async", choice="B")
    client = async_client_for(judge_server)

    reply = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "async question"}],
        tools=SELECT_CHOICE_TOOLS,
        tool_choice=FORCE_SELECT_CHOICE,
    )

    tool_calls = reply.choices[0].message.tool_calls
    assert tool_calls is not None and tool_calls[0].type == "function"
    assert json.loads(tool_calls[0].function.arguments)["choice"] == "B"


# -- Responses API -----------------------------------------------------------------------------


def test_responses_api_forced_function_call_is_parsed_by_the_client(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("Paris", choice="E", endpoint="responses")
    parameters = SELECT_CHOICE_TOOLS[0]["function"]["parameters"]
    conversation: Any = [{"role": "user", "content": "Expert: Paris. Submission: Paris."}]
    tools: Any = [{"type": "function", "name": "select_choice", "parameters": parameters}]

    response = client_for(judge_server).responses.create(
        model="gpt-5-mini",
        input=conversation,
        tools=tools,
        tool_choice={"type": "function", "name": "select_choice"},
    )

    assert response.object == "response"
    assert response.status == "completed"
    assert response.model == "gpt-5-mini"
    item = response.output[0]
    assert item.type == "function_call"
    assert item.name == "select_choice"
    assert item.status == "completed"
    assert item.call_id and item.id
    assert json.loads(item.arguments)["choice"] == "E"
    assert response.usage is not None and response.usage.total_tokens > 0


def test_responses_api_plain_request_sets_output_text(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("haiku", content="Quiet loopback port", endpoint="responses")

    response = client_for(judge_server).responses.create(
        model="gpt-5-mini", instructions="Be brief.", input="Write a haiku."
    )

    assert response.output_text == "Quiet loopback port"
    assert response.output[0].type == "message"


# -- embeddings and moderations ----------------------------------------------------------------


def test_embeddings_are_deterministic_and_unit_length(judge_server: FakeJudgeServer) -> None:
    client = client_for(judge_server)

    first = client.embeddings.create(model="text-embedding-3-small", input="the cat sat")
    again = client.embeddings.create(
        model="text-embedding-3-small", input=["the cat sat"], encoding_format="float"
    )

    vector = first.data[0].embedding
    assert len(vector) == 256
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-6)
    assert again.data[0].embedding == pytest.approx(vector, abs=1e-6)


def test_base64_encoding_the_client_asks_for_by_default_decodes_to_the_same_vector(
    judge_server: FakeJudgeServer,
) -> None:
    client = client_for(judge_server)

    default = client.embeddings.create(model="m", input="hello world", dimensions=8)
    as_floats = client.embeddings.create(
        model="m", input="hello world", dimensions=8, encoding_format="float"
    )

    assert judge_server.requests[0].body["encoding_format"] == "base64"
    assert default.data[0].embedding == pytest.approx(as_floats.data[0].embedding, abs=1e-6)
    assert len(default.data[0].embedding) == 8


def test_embeddings_place_texts_that_share_words_closer(judge_server: FakeJudgeServer) -> None:
    texts = ["the cat sat on the mat", "a cat sat on a mat", "quarterly revenue grew"]
    reply = client_for(judge_server).embeddings.create(model="m", input=texts)
    cat, similar, unrelated = (item.embedding for item in reply.data)

    assert cosine(cat, similar) > cosine(cat, unrelated) + 0.3
    assert [item.index for item in reply.data] == [0, 1, 2]


def test_moderation_flags_text_containing_a_flagged_word(judge_server: FakeJudgeServer) -> None:
    client = client_for(judge_server)

    flagged = client.moderations.create(input="I will kill the process").results[0]
    clean = client.moderations.create(input="I will improve my skills").results[0]

    assert flagged.flagged and flagged.categories.violence
    assert flagged.category_scores.violence > 0.5
    assert not clean.flagged and clean.category_scores.violence < 0.01


def test_moderation_words_are_configurable() -> None:
    with FakeJudgeServer(flagged_words={"spoiler": "harassment"}) as server:
        result = client_for(server).moderations.create(input="Spoiler alert").results[0]

    assert result.flagged and result.categories.harassment


# -- faults ------------------------------------------------------------------------------------


def test_fail_next_raises_internal_server_error_without_retries(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.fail_next(status=500)
    client = client_for(judge_server)

    with pytest.raises(openai.InternalServerError) as caught:
        ask(client, "hello")

    assert isinstance(caught.value.body, dict) and caught.value.body["type"] == "server_error"
    assert ask(client, "hello") == "ok"


def test_rate_limit_once_is_absorbed_by_the_clients_own_retry(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.rate_limit_once()

    content = ask(client_for(judge_server, max_retries=2), "hello")

    assert content == "ok"
    assert len(judge_server.requests) == 2


def test_rate_limit_reply_carries_retry_after(judge_server: FakeJudgeServer) -> None:
    judge_server.rate_limit_once(retry_after=0.5)

    with pytest.raises(openai.RateLimitError) as caught:
        ask(client_for(judge_server), "hello")

    assert caught.value.response.headers["retry-after"] == "0.5"
    assert caught.value.code == "rate_limit_exceeded"


def test_malformed_reply_fails_to_decode(judge_server: FakeJudgeServer) -> None:
    judge_server.malformed_next()

    with pytest.raises(json.JSONDecodeError):
        ask(client_for(judge_server), "hello")


def test_hang_past_the_client_timeout_raises_api_timeout_error(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.hang_next(5.0)

    with pytest.raises(openai.APITimeoutError):
        ask(client_for(judge_server, timeout=0.3), "hello")


def test_rule_status_fails_only_matching_requests(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("forbidden", status=503)
    client = client_for(judge_server)

    with pytest.raises(openai.InternalServerError):
        ask(client, "a forbidden topic")
    assert ask(client, "a fine topic") == "ok"


def test_unknown_path_gets_404_in_openai_error_shape(judge_server: FakeJudgeServer) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client_for(judge_server).models.list()

    assert isinstance(caught.value.body, dict)
    assert set(caught.value.body) >= {"message", "type", "code"}


def test_request_body_that_is_not_json_gets_400(judge_server: FakeJudgeServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", judge_server.port, timeout=5)
    try:
        connection.request(
            "POST",
            "/v1/chat/completions",
            body=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        reply = connection.getresponse()
        status, body = reply.status, json.loads(reply.read())
    finally:
        connection.close()

    assert status == 400
    assert body["error"]["type"] == "invalid_request_error"


def test_add_rule_rejects_a_sequence_combined_with_a_choice(
    judge_server: FakeJudgeServer,
) -> None:
    with pytest.raises(ConfigurationError, match="sequence"):
        judge_server.add_rule("x", choice="A", sequence=["B"])


def test_reset_forgets_rules_and_pending_faults(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("hello", content="scripted")
    judge_server.fail_next()

    judge_server.reset()

    assert judge_server.rules == []
    assert ask(client_for(judge_server), "hello") == "ok"


# -- recording and concurrency -----------------------------------------------------------------


def test_requests_are_recorded_with_path_body_and_headers(judge_server: FakeJudgeServer) -> None:
    ask(client_for(judge_server), "recorded question")

    [request] = judge_server.requests
    assert isinstance(request, RecordedRequest)
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.body["messages"] == [{"role": "user", "content": "recorded question"}]
    assert request.headers["authorization"] == "Bearer test"
    assert request.received_at > 0


@pytest.mark.asyncio
async def test_max_concurrency_is_the_number_of_requests_in_flight_together() -> None:
    with FakeJudgeServer(latency=0.2) as server:
        client = async_client_for(server)
        await asyncio.gather(*(client.embeddings.create(model="m", input="x") for _ in range(5)))

        assert server.max_concurrency == 5


@pytest.mark.asyncio
async def test_max_concurrency_reflects_a_client_side_semaphore() -> None:
    with FakeJudgeServer(latency=0.2) as server:
        client = async_client_for(server)
        gate = asyncio.Semaphore(2)

        async def embed() -> None:
            async with gate:
                await client.embeddings.create(model="m", input="x")

        await asyncio.gather(*(embed() for _ in range(5)))

        assert server.max_concurrency == 2
        server.reset_stats()
        assert server.max_concurrency == 0 and server.requests == []


def test_rule_latency_delays_only_matching_requests(judge_server: FakeJudgeServer) -> None:
    judge_server.add_rule("slow", latency=5.0)

    with pytest.raises(openai.APITimeoutError):
        ask(client_for(judge_server, timeout=0.3), "slow question")
    assert ask(client_for(judge_server, timeout=2.0), "fast question") == "ok"


# -- lifecycle ---------------------------------------------------------------------------------


def test_exit_releases_the_port_and_joins_every_thread() -> None:
    threads_before = set(threading.enumerate())
    with FakeJudgeServer() as server:
        port = server.port
        ask(client_for(server), "hello")
        server.hang_next(30.0)
        with pytest.raises(openai.APITimeoutError):
            ask(client_for(server, timeout=0.2), "hello")

    assert set(threading.enumerate()) <= threads_before
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))  # only a live listener would still hold the port


def test_evaltrace_testing_and_the_fake_judge_package_export_the_same_server() -> None:
    names = [
        "DEFAULT_FLAGGED_WORDS",
        "MODERATION_CATEGORIES",
        "FakeJudgeServer",
        "FakeJudgeStateError",
        "RecordedRequest",
        "Rule",
        "ScriptedAnswer",
        "serve_fake_judge",
    ]
    assert set(names) <= set(evaltrace.testing.__all__)
    for name in names:
        assert getattr(evaltrace.testing, name) is getattr(evaltrace.testing.fake_judge, name)


# -- autoevals ---------------------------------------------------------------------------------


def test_autoevals_factuality_scores_through_chat_completions(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("Paris", choice="C")
    scorer = autoevals.Factuality(client=client_for(judge_server), model="gpt-4o-mini")

    score = scorer.eval(input="Capital of France?", output="Paris", expected="Paris")

    assert score.score == 1
    assert score.metadata["choice"] == "C"
    assert judge_server.requests[-1].path == "/v1/chat/completions"


def test_autoevals_default_gpt5_model_goes_through_the_responses_api(
    judge_server: FakeJudgeServer,
) -> None:
    score = autoevals.Factuality(client=client_for(judge_server)).eval(
        input="Capital of France?", output="Lyon", expected="Paris"
    )

    assert score.score == 0.4  # choice "A", the first of Factuality's choices
    assert judge_server.requests[-1].path == "/v1/responses"
    assert judge_server.requests[-1].body["tool_choice"] == "required"


def test_fake_judge_fixture_is_reset_for_each_test_first(fake_judge: FakeJudgeServer) -> None:
    assert fake_judge.requests == [] and fake_judge.rules == []
    fake_judge.add_rule("left over", content="should not leak")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert len(fake_judge.requests) == 1


def test_fake_judge_fixture_is_reset_for_each_test_second(fake_judge: FakeJudgeServer) -> None:
    assert fake_judge.requests == [] and fake_judge.rules == []


ORDER_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Find an order by its id",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


def test_a_rule_can_make_the_model_call_an_offered_tool_of_its_own_accord() -> None:
    with FakeJudgeServer() as judge:
        judge.add_rule('"status": "shipped"', content="Order A-1 shipped yesterday.")
        judge.add_rule("Where is my order", tool_call="lookup_order", json={"order_id": "A-1"})
        client = openai.OpenAI(base_url=judge.base_url, api_key="test")
        messages: list[Any] = [{"role": "user", "content": "Where is my order A-1?"}]
        first = client.chat.completions.create(
            model="app-model", messages=messages, tools=[ORDER_TOOL]
        )
        (call,) = first.choices[0].message.tool_calls or []
        assert first.choices[0].finish_reason == "tool_calls"
        assert (call.function.name, call.function.arguments) == (
            "lookup_order",
            '{"order_id": "A-1"}',
        )
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"status": "shipped"}'},
        ]
        second = client.chat.completions.create(
            model="app-model", messages=messages, tools=[ORDER_TOOL]
        )
        assert second.choices[0].message.content == "Order A-1 shipped yesterday."


def test_a_scripted_tool_the_request_does_not_offer_is_a_clear_400() -> None:
    with FakeJudgeServer() as judge:
        judge.add_rule("order", tool_call="lookup_order")
        client = openai.OpenAI(base_url=judge.base_url, api_key="test", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="the matching rule calls the function"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "my order"}], tools=[]
            )


def test_tool_choice_none_gets_text_even_when_a_rule_scripts_a_tool_call() -> None:
    with FakeJudgeServer(default_content="no tools here") as judge:
        judge.add_rule("order", tool_call="lookup_order")
        client = openai.OpenAI(base_url=judge.base_url, api_key="test")
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "my order"}],
            tools=[ORDER_TOOL],
            tool_choice="none",
        )
        assert reply.choices[0].message.tool_calls is None
        assert reply.choices[0].message.content == "no tools here"


def test_the_responses_api_gets_the_scripted_tool_call_too() -> None:
    with FakeJudgeServer() as judge:
        judge.add_rule("order", tool_call="lookup_order", json={"order_id": "B-2"})
        client = openai.OpenAI(base_url=judge.base_url, api_key="test")
        reply = client.responses.create(
            model="m",
            input="my order B-2",
            tools=[{"type": "function", **ORDER_TOOL["function"]}],
        )
        (item,) = reply.output
        assert item.type == "function_call" and item.name == "lookup_order"
        assert item.arguments == '{"order_id": "B-2"}'


def test_a_tool_call_rule_is_checked_when_it_is_added() -> None:
    judge = FakeJudgeServer()
    with pytest.raises(ConfigurationError, match="tool_call=''"):
        judge.add_rule("x", tool_call="")
    with pytest.raises(ConfigurationError, match="sequence= together with tool_call="):
        judge.add_rule("x", tool_call="t", sequence=["a"])


# -- rules files, `evaltrace fake-llm` and `python -m evaltrace.testing.fake_judge` -------------

RULES = Path(__file__).resolve().parent / "fixtures" / "first_use" / "rules.yaml"
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))
BASE_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/v1")
GRADER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "parameters": {
            "type": "object",
            "properties": {
                "reasons": {"type": "string"},
                "choice": {"type": "string", "enum": ["N", "Y"]},
            },
            "required": ["reasons", "choice"],
        },
    },
}


@contextmanager
def fake_llm(*command: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start the server as a real process; yield it and the base URL it printed."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=RULES.parent
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url, process.stderr.read() if process.stderr else ""
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=30)


def rules_judge(path: Path) -> FakeJudgeServer:
    judge = FakeJudgeServer()
    judge.add_rules(read_rules(path))
    return judge


def grade(client: openai.OpenAI, *, model: str, system: str) -> dict[str, Any]:
    reply = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": "Paris or Rome?"},
        ],
        tools=[GRADER_TOOL],
        tool_choice={"type": "function", "function": {"name": "select_choice"}},
    )
    (call,) = reply.choices[0].message.tool_calls or []
    arguments: dict[str, Any] = json.loads(call.function.arguments)
    return arguments


def test_fake_llm_prints_its_base_url_and_answers_by_the_rules_file() -> None:
    with fake_llm(EVALTRACE, "fake-llm", "--rules", "rules.yaml", "--port", "0") as (_, url):
        assert BASE_URL.fullmatch(url)
        client = openai.OpenAI(base_url=url, api_key="test", max_retries=0)
        assert ask(client, "What is the capital of France?") == "Paris"


def test_python_m_fake_judge_listens_on_the_port_it_is_given() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "evaltrace.testing.fake_judge", "--rules", "rules.yaml"]
    with fake_llm(*command, "--port", str(port)) as (_, url):
        assert url == f"http://127.0.0.1:{port}/v1"
        client = openai.OpenAI(base_url=url, api_key="test", max_retries=0)
        reply = client.chat.completions.create(
            model="app-model",
            messages=[{"role": "user", "content": "Where is order #42?"}],
            tools=[ORDER_TOOL],
        )
        (call,) = reply.choices[0].message.tool_calls or []
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "lookup_order",
            {"order_id": "A-42"},
        )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_fake_llm_stops_on_sigterm_or_sigint_with_exit_code_0(stop: signal.Signals) -> None:
    with fake_llm(EVALTRACE, "fake-llm", "--port", "0") as (process, url):
        process.send_signal(stop)
        assert process.wait(timeout=30) == 0
        with pytest.raises(openai.APIConnectionError):
            ask(openai.OpenAI(base_url=url, api_key="test", max_retries=0), "hello?")


def test_a_user_rule_looks_at_the_last_user_message_only() -> None:
    with rules_judge(RULES) as judge:
        client = client_for(judge)
        earlier = [
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris"},
        ]
        reply = client.chat.completions.create(
            model="m", messages=[*earlier, {"role": "user", "content": "Thanks!"}]
        )
        assert reply.choices[0].message.content == "ok"
        assert ask(client, "So, the capital of France?") == "Paris"


def test_a_rule_can_ask_for_a_system_prompt_and_a_model() -> None:
    with rules_judge(RULES) as judge:
        client = client_for(judge)
        graded = grade(client, model="gpt-4o-mini", system="You grade answers.")
        assert graded == {"choice": "Y", "reasons": "Both name the same city."}
        assert grade(client, model="gpt-4o", system="You grade answers.")["choice"] == "N"
        assert grade(client, model="gpt-4o-mini", system="You chat.")["choice"] == "N"


def test_a_rules_file_scripts_failures_and_latency() -> None:
    with rules_judge(RULES) as judge:
        client = client_for(judge)
        with pytest.raises(openai.InternalServerError):
            ask(client, "Are you overloaded?")
        started = time.monotonic()
        assert ask(client, "A SLOW question") == "finally"
        assert time.monotonic() - started >= 0.3


def test_a_json_rules_file_reads_as_the_yaml_one_does(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"user_regex": "^hi", "sequence": ["one", "two"]}]}))
    with rules_judge(rules) as judge:
        client = client_for(judge)
        assert [ask(client, "hi there") for _ in range(3)] == ["one", "two", "two"]
        assert ask(client, "oh hi") == "ok"


@pytest.mark.parametrize(
    ("rule", "found"),
    [
        (
            {"user": "x", "contnet": "y"},
            "rules[1]: unknown key 'contnet' (did you mean 'content'?)",
        ),
        ({"user_regex": "(unclosed"}, "rules[1].user_regex: not a regular expression"),
        ({"match": "x", "match_regex": "x"}, "rules[1]: give match or match_regex, not both"),
        ({"tool_call": {"name": "t", "args": {}}}, "rules[1].tool_call: unknown key 'args'"),
        ({"tool_call": "lookup"}, "rules[1].tool_call: expected a mapping with name and"),
        ({"status": 700}, "rules[1]: status=700 must be an HTTP error status"),
        ({"latency": "slow"}, "rules[1].latency: expected a number of seconds, found 'slow'"),
        ({"content": 3}, "rules[1].content: expected text, found 3"),
    ],
)
def test_a_rules_file_mistake_names_the_rule_and_the_key(
    tmp_path: Path, rule: dict[str, Any], found: str
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(json.dumps({"rules": [{"content": "fine"}, rule]}))

    with pytest.raises(RulesFileError) as raised:
        read_rules(rules)
    assert str(raised.value).startswith(f"{rules}: {found}")


def test_a_rules_file_holds_a_rules_list(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("- user: hi\n  content: hello\n")

    with pytest.raises(RulesFileError, match=r"expected a mapping with the key rules"):
        read_rules(rules)


def test_fake_llm_with_a_mistaken_rules_file_exits_2_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - user: hi\n    reply: hello\n")

    assert main(["fake-llm", "--rules", str(rules)]) == 2
    captured = capsys.readouterr()
    assert "rules[0]: unknown key 'reply'" in captured.err and captured.out == ""


def test_add_rule_can_look_at_the_last_user_message_the_system_prompt_and_the_model() -> None:
    with FakeJudgeServer() as judge:
        judge.add_rule("", user=re.compile(r"^grade"), system="strict", model="m1", content="F")
        judge.add_rule("", user="grade", content="B")
        client = client_for(judge)

        def reply(model: str, system: str, user: str) -> str | None:
            return (
                client.chat.completions.create(
                    model=model,
                    messages=[
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                    ],
                )
                .choices[0]
                .message.content
            )

        assert reply("m1", "be strict", "grade this") == "F"
        assert reply("m2", "be strict", "grade this") == "B"
        assert reply("m1", "be kind", "grade this") == "B"
        assert reply("m1", "be strict", "please grade this") == "B"
