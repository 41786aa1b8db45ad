"""Judge configuration: precedence, no default endpoint, lazy clients, and trace isolation."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import openai
import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from evaltrace import capture_traces, wrap
from evaltrace.errors import ConfigurationError
from evaltrace.evals.evaluable import Evaluable, NamedData
from evaltrace.evals.evaluator import evaluate
from evaltrace.judges import (
    EmbeddingSimilarity,
    Factuality,
    JudgeConfig,
    configure_judge,
    create_llm_evaluator,
    judge_config,
    reset_judge_config,
)
from evaltrace.llm.config import judge_client
from evaltrace.llm.rate_limit import RateLimiter
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge

JUDGE_ENV = (
    "EVALTRACE_JUDGE_BASE_URL",
    "EVALTRACE_JUDGE_API_KEY",
    "EVALTRACE_JUDGE_MODEL",
    "EVALTRACE_JUDGE_EMBEDDING_MODEL",
    "EVALTRACE_JUDGE_TIMEOUT",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_judge_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    with configure_judge():  # restores whatever a test configures
        yield


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.fixture
def judge(judge_server: FakeJudgeServer) -> FakeJudgeServer:
    judge_server.reset()
    judge_server.reset_stats()
    return judge_server


EVALUABLE = Evaluable(
    eval_input=[NamedData(name="question", value="Capital of France?")],
    eval_output=[NamedData(name="answer", value="Paris")],
    expectation="Paris",
)


# -- resolution ------------------------------------------------------------------------------


def test_nothing_configured_means_no_judge() -> None:
    config = judge_config()

    assert config == JudgeConfig()
    assert not config.is_configured
    assert config.model == "gpt-4o-mini"
    assert config.embedding_model == "text-embedding-3-small"


def test_configured_values_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_BASE_URL", "http://env.invalid/v1")
    monkeypatch.setenv("EVALTRACE_JUDGE_MODEL", "env-model")
    configure_judge(base_url="http://configured.invalid/v1", model="configured-model")

    config = judge_config()

    assert config.base_url == "http://configured.invalid/v1"
    assert config.model == "configured-model"


def test_evaltrace_variables_win_over_openai_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-env.invalid/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("EVALTRACE_JUDGE_BASE_URL", "http://judge-env.invalid/v1")
    monkeypatch.setenv("EVALTRACE_JUDGE_API_KEY", "sk-judge")
    monkeypatch.setenv("EVALTRACE_JUDGE_EMBEDDING_MODEL", "env-embedding")

    config = judge_config()

    assert (config.base_url, config.api_key) == ("http://judge-env.invalid/v1", "sk-judge")
    assert config.embedding_model == "env-embedding"


def test_openai_variables_are_the_last_resort(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")

    config = judge_config()

    assert config.is_configured
    assert config.base_url is None
    assert config.api_key == "sk-openai"


def test_an_api_key_alone_means_the_official_openai_endpoint() -> None:
    configure_judge(api_key="sk-test")

    client = judge_client(judge_config())

    assert client.is_async
    assert client.openai.base_url.host == "api.openai.com"


def test_the_api_key_is_kept_out_of_the_repr() -> None:
    configure_judge(api_key="sk-secret", base_url="http://127.0.0.1:1/v1")

    assert "sk-secret" not in repr(judge_config())


def test_the_token_restores_the_previous_configuration() -> None:
    configure_judge(model="first")
    token = configure_judge(model="second", base_url="http://127.0.0.1:1/v1")
    assert judge_config().model == "second"

    token.restore()

    assert judge_config().model == "first"
    assert judge_config().base_url is None


def test_later_calls_keep_earlier_values_until_reset() -> None:
    configure_judge(base_url="http://127.0.0.1:1/v1")
    configure_judge(model="m")
    assert (judge_config().base_url, judge_config().model) == ("http://127.0.0.1:1/v1", "m")

    reset_judge_config()

    assert judge_config() == JudgeConfig()


@pytest.mark.parametrize(
    "arguments",
    [{"base_url": "127.0.0.1:8000"}, {"model": " "}, {"max_retries": -1}, {"timeout": 0}],
)
def test_malformed_values_are_rejected(arguments: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        configure_judge(**arguments)


def test_a_malformed_base_url_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_BASE_URL", "localhost:8000")

    with pytest.raises(ConfigurationError, match="EVALTRACE_JUDGE_BASE_URL"):
        judge_config()


def test_an_async_client_must_be_async(judge_server: FakeJudgeServer) -> None:
    sync_client = openai.OpenAI(base_url=judge_server.base_url, api_key="k")

    with pytest.raises(ConfigurationError, match="not async"):
        configure_judge(async_client=sync_client)


# -- no default endpoint ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "evaluator",
    [Factuality(), EmbeddingSimilarity(), create_llm_evaluator("custom", "{eval_output}")],
    ids=["Factuality", "EmbeddingSimilarity", "create_llm_evaluator"],
)
async def test_an_unconfigured_judge_is_errored_with_how_to_configure(evaluator: Any) -> None:
    result = await evaluator(EVALUABLE)

    assert result.status == "errored"
    assert result.error.type == "JudgeNotConfiguredError"
    assert result.error.where == "judge"
    message = result.error.message
    assert "never sends judge requests to a default endpoint" in message
    assert "configure_judge(base_url=..., api_key=..., model=...)" in message
    assert "EVALTRACE_JUDGE_BASE_URL" in message and "EVALTRACE_JUDGE_API_KEY" in message


# -- clients ---------------------------------------------------------------------------------


def test_importing_evaltrace_judges_loads_neither_openai_nor_autoevals() -> None:
    code = (
        "import sys, evaltrace, evaltrace.judges\n"
        "loaded = {'openai', 'autoevals'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_built_clients_are_reused_within_an_event_loop(judge_server: FakeJudgeServer) -> None:
    configure_judge(base_url=judge_server.base_url, api_key="k", max_retries=2)

    async def two_clients() -> tuple[Any, Any]:
        config = judge_config()
        return judge_client(config).openai, judge_client(config).openai

    first, again = anyio.run(two_clients)
    other_loop, _ = anyio.run(two_clients)

    assert first is again
    assert other_loop is not first
    assert isinstance(first, openai.AsyncOpenAI)
    assert first.max_retries == 2


@pytest.mark.anyio
async def test_a_sync_client_is_called_from_a_worker_thread(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="C")
    configure_judge(
        client=openai.OpenAI(base_url=judge.base_url, api_key="sync-key", max_retries=0)
    )

    result = await Factuality()(EVALUABLE)

    assert result.score == 1.0
    assert judge.requests[-1].headers["authorization"] == "Bearer sync-key"


# -- judge calls stay out of the app's trace -------------------------------------------------


@wrap
def answer_question(question: str) -> str:
    return "Paris"


@wrap
def judge_side_helper() -> None:
    """A traced function that runs inside the judge's HTTP call."""


def instrumented_client(server: FakeJudgeServer, calls: list[str]) -> openai.AsyncOpenAI:
    """A judge client whose requests start spans, as an HTTP or SDK instrumentor would."""
    tracer = otel_trace.get_tracer("fake-openai-instrumentor")

    async def on_request(request: httpx2.Request) -> None:
        calls.append(str(request.url))
        judge_side_helper()
        if not otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY):
            with tracer.start_as_current_span("openai.chat"):
                pass

    http_client = httpx2.AsyncClient(event_hooks={"request": [on_request]})
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, http_client=http_client
    )


@pytest.mark.anyio
async def test_judge_calls_leave_no_span_in_the_capture(
    judge: FakeJudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    configure_judge(async_client=instrumented_client(judge, calls))

    async with capture_traces() as handler:
        answer_question("Capital of France?")
        result = await evaluate(Factuality(), EVALUABLE)

    assert result.status == "scored"
    assert calls, "the judge request was not made through the instrumented client"
    assert [span.name for span in handler.spans] == ["answer_question"]
    assert not [record for record in caplog.records if record.name == "evaltrace"]


@pytest.mark.anyio
async def test_trace_judge_calls_lets_judge_spans_into_the_capture(
    judge: FakeJudgeServer,
) -> None:
    calls: list[str] = []
    configure_judge(async_client=instrumented_client(judge, calls), trace_judge_calls=True)

    async with capture_traces() as handler:
        answer_question("Capital of France?")
        result = await evaluate(Factuality(), EVALUABLE)

    assert result.status == "scored"
    names = {span.name for span in handler.spans}
    assert {"answer_question", "judge_side_helper", "openai.chat"} <= names


# -- rate limiting ---------------------------------------------------------------------------


class FakeClock:
    """A clock that only moves when the rate limiter sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_judge_calls_wait_for_the_configured_rate_limiter(judge: FakeJudgeServer) -> None:
    clock = FakeClock()
    limiter = RateLimiter(requests_per_second=2, clock=clock, sleep=clock.sleep)
    configure_judge(base_url=judge.base_url, api_key="k", rate_limiter=limiter)
    judge.add_rule("Paris", choice="C")
    results = [await Factuality()(EVALUABLE) for _ in range(5)]
    assert [r.score for r in results] == [1.0] * 5
    assert len(judge.requests) == 5
    # two requests per second: calls 3-4 wait until t=1 s, call 5 until t=2 s
    assert clock.now == pytest.approx(2.0)


@pytest.mark.anyio
async def test_llm_evaluator_prompt_tokens_count_against_the_token_limit(
    judge: FakeJudgeServer,
) -> None:
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=100, clock=clock, sleep=clock.sleep)
    configure_judge(base_url=judge.base_url, api_key="k", rate_limiter=limiter)
    long_prompt = create_llm_evaluator(
        "long", "x" * 300 + " {eval_output}", choice_scores={"Y": 1.0}
    )
    await long_prompt(EVALUABLE)  # ~76 tokens: admitted at once
    await long_prompt(EVALUABLE)  # does not fit beside the first: waits for it to age out
    assert clock.now == pytest.approx(60.0)


def test_rate_limiter_must_be_a_rate_limiter() -> None:
    with pytest.raises(
        ConfigurationError, match=r"takes an evaltrace\.llm\.RateLimiter .*got dict"
    ):
        configure_judge(rate_limiter={"rps": 2})  # type: ignore[arg-type]


# -- timeouts --------------------------------------------------------------------------------


def test_a_judge_request_has_a_default_timeout(judge_server: FakeJudgeServer) -> None:
    from evaltrace.llm.config import DEFAULT_JUDGE_TIMEOUT

    configure_judge(base_url=judge_server.base_url, api_key="k")
    assert DEFAULT_JUDGE_TIMEOUT == 60.0
    assert judge_config().timeout == DEFAULT_JUDGE_TIMEOUT
    assert judge_client(judge_config()).openai.timeout == DEFAULT_JUDGE_TIMEOUT


def test_the_judge_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_TIMEOUT", "2.5")
    assert judge_config().timeout == 2.5
    configure_judge(timeout=7)
    assert judge_config().timeout == 7.0


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf"])
def test_a_malformed_judge_timeout_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_TIMEOUT", value)
    with pytest.raises(ConfigurationError, match=r"EVALTRACE_JUDGE_TIMEOUT=.* positive number"):
        judge_config()


@pytest.mark.anyio
async def test_a_hung_judge_request_is_errored_after_the_judge_timeout(
    judge: FakeJudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALTRACE_JUDGE_TIMEOUT", "0.2")
    judge.add_rule("", choice="C")
    judge.hang_next(60)  # much longer than the timeout; stopping the server ends the wait
    configure_judge(base_url=judge.base_url, api_key="k", max_retries=0)

    result = await Factuality()(EVALUABLE)

    assert result.error is not None
    assert (result.error.type, result.error.where) == ("APITimeoutError", "judge")


class _CancellingCompletions:
    """A client whose request is cancelled by the client itself, not by the caller."""

    async def create(self, **kwargs: Any) -> Any:
        import asyncio

        raise asyncio.CancelledError()


class _CancellingChat:
    completions = _CancellingCompletions()


class _CancellingClient:
    chat = _CancellingChat()


@pytest.mark.anyio
async def test_a_judge_client_cancelling_its_own_request_gives_an_errored_evaluation() -> None:
    configure_judge(async_client=_CancellingClient())
    judge = create_llm_evaluator("polite", "Is {eval_output} polite?", choice_scores={"y": 1.0})

    result = await evaluate(judge, EVALUABLE)

    assert result.error is not None
    assert (result.error.type, result.error.where) == ("StrayCancellationError", "judge")


def test_an_abandoned_sync_judge_call_does_not_delay_exit() -> None:
    script = """
import threading
import anyio
from evaltrace import Evaluable, NamedData, evaluate
from evaltrace.judges import configure_judge, create_llm_evaluator

never = threading.Event()


class Completions:
    def create(self, **kwargs):
        never.wait()


class Chat:
    completions = Completions()


class BlockingClient:
    chat = Chat()


configure_judge(client=BlockingClient())
judge = create_llm_evaluator("polite", "Is {eval_output} polite?", choice_scores={"y": 1.0})
case = Evaluable(eval_output=[NamedData(name="answer", value="Paris")])
print(anyio.run(lambda: evaluate(judge, case, timeout=0.1)).error.type)
"""
    # The guard only keeps a regression from hanging the suite; a healthy run exits at once.
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["EvaluatorTimeoutError"]
