"""Repeated: runs a judge n times concurrently and hands the runs to a strategy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import openai
import pytest

from evaltrace.evals.evaluable import Evaluable, NamedData
from evaltrace.evals.evaluation import Evaluation
from evaltrace.judges import (
    AggregationMethod,
    AtLeastKAggregationStrategy,
    BaseJudgeAggregator,
    PassAtKAggregationStrategy,
    Repeated,
)
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge

SCORES = [0.2, 0.8, 0.6, 0.4]


def details_of(result: Evaluation) -> dict[str, Any]:
    assert isinstance(result.details, dict)
    return result.details


def an_evaluable() -> Evaluable:
    return Evaluable(
        eval_input=[NamedData(name="question", value="2+2?")],
        eval_output=[NamedData(name="answer", value="4")],
    )


# --- the Repeated evaluator --------------------------------------------------------------------


class ScriptedJudge:
    """An async judge giving scripted scores, one per call, that tracks its concurrency."""

    def __init__(self, scores: list[float | Exception], delay: float = 0.0) -> None:
        self.name = "scripted"
        self.scores = list(scores)
        self.delay = delay
        self.calls = 0
        self.running = 0
        self.high_water = 0

    async def __call__(self, evaluable: Evaluable) -> Evaluation:
        answer = self.scores[self.calls % len(self.scores)]
        self.calls += 1
        self.running += 1
        self.high_water = max(self.high_water, self.running)
        try:
            await anyio.sleep(self.delay)
        finally:
            self.running -= 1
        if isinstance(answer, Exception):
            raise answer
        return Evaluation(score=answer, reasoning=f"I give {answer}")


@pytest.mark.anyio
async def test_repeated_runs_the_judge_n_times_and_aggregates() -> None:
    judge = ScriptedJudge([0.2, 0.8, 0.6, 0.4])
    result = await Repeated(judge, n=4, strategy="median")(an_evaluable())
    details = details_of(result)
    assert judge.calls == 4
    assert result.score == 0.6
    assert result.reasoning == "I give 0.6"
    assert result.evaluator == "scripted x4 (median)"
    assert (details["num_judges"], details["num_valid"]) == (4, 4)
    assert sorted(run["score"] for run in details["runs"]) == sorted(SCORES)


@pytest.mark.anyio
async def test_repeated_drops_errored_runs() -> None:
    judge = ScriptedJudge([0.9, ValueError("unparseable answer"), 0.9])
    result = await Repeated(judge, n=3, strategy=AggregationMethod.AVERAGE)(an_evaluable())
    details = details_of(result)
    assert result.score == 0.9
    assert details["num_valid"] == 2
    assert [e["message"] for e in details["judge_errors"]] == ["unparseable answer"]


@pytest.mark.anyio
async def test_repeated_with_every_run_failing_is_errored_with_the_judges_errors() -> None:
    judge = ScriptedJudge([ValueError("bad json"), RuntimeError("HTTP 500")])
    result = await Repeated(judge, n=2)(an_evaluable())
    details = details_of(result)
    assert result.status == "errored"
    assert result.score is None
    assert result.error is not None
    assert result.error.type == "AllJudgesFailed"
    assert "bad json" in result.error.message
    assert "HTTP 500" in result.error.message
    assert details["num_valid"] == 0
    assert sorted(e["type"] for e in details["judge_errors"]) == ["RuntimeError", "ValueError"]


@pytest.mark.anyio
async def test_repeated_with_every_run_skipped_is_skipped() -> None:
    async def declines(evaluable: Evaluable) -> Evaluation:
        return Evaluation.skip("no reference answer")

    result = await Repeated(declines, n=2)(an_evaluable())
    assert result.status == "skipped"
    assert "no reference answer" in result.reasoning


@pytest.mark.anyio
async def test_repeated_counts_slow_runs_as_errors() -> None:
    judge = ScriptedJudge([0.5], delay=10)
    result = await Repeated(judge, n=2, timeout=0.05)(an_evaluable())
    assert result.error is not None
    assert "did not finish within" in result.error.message


@pytest.mark.anyio
async def test_repeated_respects_the_concurrency_cap() -> None:
    judge = ScriptedJudge([0.5], delay=0.02)
    await Repeated(judge, n=7, max_concurrency=2)(an_evaluable())
    assert judge.calls == 7
    assert judge.high_water == 2


@pytest.mark.anyio
async def test_repeated_runs_all_at_once_without_a_cap() -> None:
    judge = ScriptedJudge([0.5], delay=0.02)
    await Repeated(judge, n=5)(an_evaluable())
    assert judge.high_water == 5


@pytest.mark.anyio
async def test_repeated_accepts_sync_judges_and_passes_the_trace() -> None:
    seen: list[object] = []

    def relevance(evaluable: Evaluable, *, trace: object = None) -> float:
        seen.append(trace)
        return 1.0

    judge = Repeated(relevance, n=3, strategy="majority_vote")
    result = await judge(an_evaluable(), trace="the trace")
    assert judge.name == "relevance x3 (majority_vote)"
    assert result.score == 1.0
    assert seen == ["the trace"] * 3


@pytest.mark.anyio
async def test_repeated_reports_a_failing_strategy_as_an_error() -> None:
    class Broken(BaseJudgeAggregator):
        @property
        def strategy(self) -> str:
            return "broken"

        def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
            raise ZeroDivisionError("oops")

    result = await Repeated(ScriptedJudge([0.5]), n=2, strategy=Broken())(an_evaluable())
    assert result.error is not None
    assert (result.error.type, result.error.where) == ("ZeroDivisionError", "aggregation")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be"),
        ({"n": True}, "n must be"),
        ({"max_concurrency": 0}, "max_concurrency must be"),
        ({"timeout": 0}, "timeout must be"),
        ({"n": 3, "strategy": AtLeastKAggregationStrategy(k=4)}, "k=4 and n=3"),
        ({"n": 2, "strategy": PassAtKAggregationStrategy(k=3)}, "k=3 and n=2"),
        ({"strategy": "modal"}, "unknown aggregation method"),
        ({"strategy": "pass_at_k"}, "missing a required argument: 'k'"),
    ],
)
def test_repeated_validates_its_configuration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Repeated(ScriptedJudge([0.5]), **kwargs)


@pytest.fixture
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge(FakeJudgeServer(latency=0.05))


@pytest.mark.anyio
async def test_repeated_caps_concurrent_requests_to_a_judge_server(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.add_rule("Rate the answer", sequence=["0.2", "0.8", "0.6", "0.4"])
    client = openai.AsyncOpenAI(base_url=judge_server.base_url, api_key="test", max_retries=0)

    async def rate(evaluable: Evaluable) -> float:
        reply = await client.chat.completions.create(
            model="judge-model",
            messages=[{"role": "user", "content": f"Rate the answer {evaluable.output_value()}"}],
        )
        return float(reply.choices[0].message.content or "nan")

    async with client:
        result = await Repeated(rate, n=4, max_concurrency=2)(an_evaluable())
    assert len(judge_server.requests) == 4
    assert judge_server.max_concurrency == 2
    assert result.score == 0.6  # sorted [0.2, 0.4, 0.6, 0.8][2], whatever the arrival order


def test_repeated_refuses_a_judge_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match=r"Repeated\(judge=...\) must be an evaluator.*got str"):
        Repeated("x")  # type: ignore[arg-type]


def test_repeated_refuses_a_count_that_is_not_a_whole_number() -> None:
    with pytest.raises(ValueError, match="n must be a whole number >= 1, got '3'"):
        Repeated(lambda e: 1.0, n="3")  # type: ignore[arg-type]


def test_repeated_refuses_a_name_that_is_not_a_string() -> None:
    with pytest.raises(TypeError, match=r"Repeated\(name=...\) must be a string, got int"):
        Repeated(lambda e: 1.0, name=5)  # type: ignore[arg-type]
