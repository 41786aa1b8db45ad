"""Repeated judging that stops once the verdict is settled: exactly the verdict of all n runs."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest

from evaltrace.datasets import dataset_from_data, run_dataset
from evaltrace.evals import Evaluable, Evaluation, passing_at
from evaltrace.judges import (
    BaseJudgeAggregator,
    MedianAggregationStrategy,
    Repeated,
    build_aggregation_strategy,
    configure_judge,
    create_llm_evaluator,
)
from evaltrace.llm import current_judge_sample
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge

ERRORED = "errored"
SKIPPED = "skipped"

STRATEGIES: list[tuple[str, dict[str, Any]]] = [
    ("average", {}),
    ("median", {}),
    ("majority_vote", {}),
    ("min", {}),
    ("max", {}),
    ("at_least_k", {"k": 1}),
    ("at_least_k", {"k": 3, "threshold": 0.75}),
    ("pass_at_k", {"k": 1}),
    ("pass_at_k", {"k": 2, "threshold": 0.75}),
    ("pass_at_k", {"k": 4, "threshold": 0.3}),
]
EXACT_SCORE = {"majority_vote", "at_least_k"}
"""Strategies whose settled verdict is the score itself, not only its pass or fail."""


def scripted(outcomes: Sequence[float | str]) -> Any:
    """A judge whose k-th sample gives ``outcomes[k]``, whatever order the samples run in."""

    async def judge(evaluable: Evaluable) -> Evaluation:
        path = current_judge_sample().path
        outcome = outcomes[path[-1] if path else 0]
        if outcome == ERRORED:
            raise RuntimeError("the judge failed")
        if outcome == SKIPPED:
            return Evaluation.skip("the judge declined")
        assert isinstance(outcome, float)
        return Evaluation(score=outcome)

    return judge


def random_outcomes(rng: random.Random, n: int) -> list[float | str]:
    grid = rng.choice([(0.0, 1.0), (0.0, 0.25, 0.5, 0.75, 1.0), None])
    fails = rng.choice([0.0, 0.0, 0.1, 0.3])
    outcomes: list[float | str] = []
    favourite = rng.random()
    for _ in range(n):
        draw = rng.random()
        if draw < fails / 2:
            outcomes.append(ERRORED)
        elif draw < fails:
            outcomes.append(SKIPPED)
        elif grid is None:
            outcomes.append(round(rng.random(), 3))
        elif rng.random() < 0.6:  # a judge that mostly agrees with itself
            outcomes.append(grid[int(favourite * len(grid))])
        else:
            outcomes.append(rng.choice(grid))
    return outcomes


def verdict(result: Evaluation, method: str, threshold: float) -> tuple[Any, ...]:
    exact = result.score if method in EXACT_SCORE else None
    return result.status, result.passed(threshold), exact


@pytest.mark.parametrize(("method", "options"), STRATEGIES, ids=lambda v: str(v))
def test_early_stopping_gives_exactly_the_verdict_of_all_runs(
    method: str, options: dict[str, Any]
) -> None:
    rng = random.Random(f"{method}{options}")
    stopped_early = 0

    async def check_many() -> None:
        nonlocal stopped_early
        for _ in range(300):
            n = rng.randint(max(1, options.get("k", 1)), 7)
            outcomes = random_outcomes(rng, n)
            threshold = rng.choice([0.0, 0.25, 0.5, 0.5, 0.6, 0.75, 1.0, round(rng.random(), 2)])
            strategy = build_aggregation_strategy(method, **options)
            concurrency = rng.choice([None, 1, 2])
            judge = scripted(outcomes)
            with passing_at(threshold):
                full = await Repeated(judge, n=n, strategy=strategy)(Evaluable())
                early = await Repeated(
                    judge, n=n, strategy=strategy, early_stop=True, max_concurrency=concurrency
                )(Evaluable())
            where = f"n={n} outcomes={outcomes} threshold={threshold}"
            assert verdict(early, method, threshold) == verdict(full, method, threshold), where
            taken = early.details["num_taken"] if early.status == "scored" else n
            assert 1 <= taken <= n, where
            if taken < n:
                stopped_early += 1
                assert early.details["stop_reason"], where
                assert len(early.details["runs"]) == taken, where

    anyio.run(check_many)
    assert stopped_early > 0  # the property was tested where it matters


@pytest.mark.anyio
async def test_a_judge_that_agrees_three_times_out_of_five_is_asked_three_times() -> None:
    asked: list[int] = []

    async def judge(evaluable: Evaluable) -> float:
        asked.append(1)
        return 1.0

    repeated = Repeated(judge, n=5, strategy="majority_vote", early_stop=True)
    result = await repeated(Evaluable())

    assert len(asked) == 3
    assert result.score == 1.0
    assert result.details["num_taken"] == 3
    assert result.details["num_judges"] == 5
    assert result.details["stop_reason"] == (
        "3 runs scored 1.0, a majority of 5: whatever the other 2 runs give, it wins"
    )
    assert result.details["agreement"] == 1.0 and result.details["score_distribution"] == {"1.0": 3}


@pytest.mark.anyio
async def test_without_early_stop_every_run_is_made() -> None:
    asked: list[int] = []

    async def judge(evaluable: Evaluable) -> float:
        asked.append(1)
        return 1.0

    result = await Repeated(judge, n=5, strategy="majority_vote")(Evaluable())

    assert len(asked) == 5 and "num_taken" not in result.details


@pytest.mark.anyio
async def test_early_stop_reads_the_threshold_of_the_run() -> None:
    async def judge(evaluable: Evaluable) -> float:
        return 1.0

    repeated = Repeated(judge, n=5, strategy="average", early_stop=True)
    with passing_at(0.5):
        at_half = await repeated(Evaluable())
    with passing_at(0.7):
        at_seventy = await repeated(Evaluable())

    # Three 1.0 of five keep the mean at 0.6 or more, four keep it at 0.8 or more.
    assert at_half.details["num_taken"] == 3
    assert at_seventy.details["num_taken"] == 4


@pytest.mark.anyio
async def test_a_dataset_run_gives_early_stop_its_threshold() -> None:
    async def judge(evaluable: Evaluable) -> float:
        return 1.0

    repeated = Repeated(judge, n=5, strategy="average", early_stop=True)
    data = dataset_from_data({"entries": [{"name": "a", "entry_kwargs": {"question": "q"}}]})

    async def app(question: str) -> str:
        return question

    result = await run_dataset(data, runnable=app, evaluators=[repeated], threshold=0.7)

    assert result.entries[0].evaluations[0].details["num_taken"] == 4


@pytest.mark.anyio
async def test_a_strategy_that_does_not_say_when_it_is_settled_makes_every_run() -> None:
    class Strictest(BaseJudgeAggregator):
        strategy = "strictest"

        def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
            return MedianAggregationStrategy().aggregate(all_results, total_judges)

    asked: list[int] = []

    async def judge(evaluable: Evaluable) -> float:
        asked.append(1)
        return 1.0

    result = await Repeated(judge, n=4, strategy=Strictest(), early_stop=True)(Evaluable())

    assert len(asked) == 4 and result.details["num_taken"] == 4
    assert "stop_reason" not in result.details


@pytest.mark.anyio
async def test_a_failing_settled_is_reported_as_an_aggregation_error() -> None:
    class Broken(MedianAggregationStrategy):
        def settled(self, all_results: Any, total_judges: int, threshold: float) -> str | None:
            raise ValueError("cannot tell")

    result = await Repeated(lambda e: 1.0, n=3, strategy=Broken(), early_stop=True)(Evaluable())

    assert result.status == "errored"
    assert result.error is not None and result.error.where == "aggregation"
    assert "cannot tell" in result.error.message


def test_early_stop_must_be_true_or_false() -> None:
    with pytest.raises(TypeError, match=r"Repeated\(early_stop=\.\.\.\) must be True or False"):
        Repeated(lambda e: 1.0, n=3, early_stop="yes")  # type: ignore[arg-type]


# -- against the offline judge ------------------------------------------------------------------


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


GRADES = {"A": 1.0, "B": 0.5, "C": 0.0}


def script(server: FakeJudgeServer, verdicts: list[list[str]]) -> None:
    server.reset()
    server.reset_stats()
    for index, answers in enumerate(verdicts):
        server.add_rule(f"Answer: QUESTION {index}\n", sequence=answers)


def mostly_unanimous(count: int) -> list[list[str]]:
    rng = random.Random(7)
    verdicts = []
    for _ in range(count):
        if rng.random() < 0.8:
            verdicts.append([rng.choice("AC")] * 5)
        else:
            verdicts.append([rng.choice("ABC") for _ in range(5)])
    return verdicts


@pytest.mark.anyio
async def test_a_mostly_unanimous_judge_is_asked_far_less_with_the_same_pass_or_fail(
    judge_server: FakeJudgeServer,
) -> None:
    verdicts = mostly_unanimous(60)
    grader = create_llm_evaluator(
        "grader", "Question: {eval_input}\nAnswer: {eval_output}\n", choice_scores=GRADES
    )
    data = dataset_from_data(
        {
            "entries": [
                {"name": f"e{i}", "entry_kwargs": {"question": f"question {i}"}}
                for i in range(len(verdicts))
            ]
        }
    )

    async def app(question: str) -> str:
        return question.upper()

    outcomes: dict[bool, tuple[list[bool], int]] = {}
    with configure_judge(base_url=judge_server.base_url, api_key="k", model="m", cache=False):
        for early in (False, True):
            script(judge_server, verdicts)
            evaluator = Repeated(grader, n=5, strategy="majority_vote", early_stop=early)
            result = await run_dataset(data, runnable=app, evaluators=[evaluator])
            passed = [entry.status.passed for entry in result.entries]
            outcomes[early] = (passed, len(judge_server.requests))

    (full_passed, full_requests), (early_passed, early_requests) = outcomes[False], outcomes[True]
    assert full_requests == 5 * len(verdicts)
    assert early_passed == full_passed
    assert early_requests <= 0.7 * full_requests, (early_requests, full_requests)
