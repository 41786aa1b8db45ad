"""How the engine schedules a run: entries in flight, and an entry's evaluators together.

``concurrency`` is the number of entries in flight (DESIGN.md, point 10): an entry's
evaluators are independent and wait together, and their evaluations come back in the order
the evaluators were given, whatever order they finish in.
"""

from __future__ import annotations

import time

import anyio
import pytest

from evaltrace import Evaluable
from evaltrace.engine import evaluate_inputs
from evaltrace.engine.inputs import InputResult
from evaltrace.evals import pass_threshold
from evaltrace.llm import ModelPrice, PriceTable, current_prices


@pytest.mark.anyio
async def test_concurrency_counts_entries_in_flight_not_evaluator_calls() -> None:
    concurrency, evaluators = 4, 3
    waiting = 0
    all_waiting = anyio.Event()

    async def waits_for_every_other_call(evaluable: Evaluable) -> bool:
        nonlocal waiting
        waiting += 1
        if waiting == concurrency * evaluators:
            all_waiting.set()
        # Were concurrency counted per evaluator call, fewer calls would ever wait at once:
        # each would wait here until its timeout.
        await all_waiting.wait()
        return True

    rows = await evaluate_inputs(
        str.upper,
        list("abcd"),
        [waits_for_every_other_call] * evaluators,
        concurrency=concurrency,
        timeout=20,
    )
    assert [[e.score for e in row.evaluations] for row in rows] == [[1.0] * evaluators] * 4


@pytest.mark.anyio
async def test_entries_in_flight_never_exceed_the_concurrency_and_reach_it() -> None:
    concurrency = 5
    started = finished = most = 0

    async def app(number: int) -> int:
        nonlocal started, most
        started += 1
        most = max(most, started - finished)
        await anyio.sleep(0.001 * (number % 3))
        return number

    async def waits(evaluable: Evaluable) -> float:
        await anyio.sleep(0.002 * (evaluable.input_value() % 4))
        return 1.0

    async def waits_less(evaluable: Evaluable) -> float:
        await anyio.sleep(0.001 * (evaluable.input_value() % 2))
        return 1.0

    def done(row: InputResult, count: int, total: int) -> None:
        nonlocal finished
        finished += 1  # the entry's evaluations are all in: it is out of flight

    rows = await evaluate_inputs(
        app, list(range(60)), [waits, waits_less], concurrency=concurrency, on_progress=done
    )
    assert len(rows) == 60 and finished == 60
    assert most == concurrency


@pytest.mark.anyio
async def test_evaluations_keep_the_evaluators_order_when_they_finish_in_reverse() -> None:
    ended: list[str] = []
    second_ended, third_ended = anyio.Event(), anyio.Event()

    async def first(evaluable: Evaluable) -> float:
        await second_ended.wait()
        ended.append("first")
        return 0.25

    async def second(evaluable: Evaluable) -> float:
        await third_ended.wait()
        ended.append("second")
        second_ended.set()
        return 0.5

    async def third(evaluable: Evaluable) -> float:
        await anyio.sleep(0)
        ended.append("third")
        third_ended.set()
        return 0.75

    (row,) = await evaluate_inputs(str.upper, ["a"], [first, second, third], timeout=20)
    assert ended == ["third", "second", "first"]
    assert [(e.evaluator, e.score) for e in row.evaluations] == [
        ("first", 0.25),
        ("second", 0.5),
        ("third", 0.75),
    ]


@pytest.mark.anyio
async def test_three_evaluators_waiting_200_ms_score_an_entry_in_about_200_ms() -> None:
    async def waits(evaluable: Evaluable) -> float:
        await anyio.sleep(0.2)
        return 1.0

    started = time.perf_counter()
    (row,) = await evaluate_inputs(str.upper, ["a"], [waits, waits, waits])
    elapsed = time.perf_counter() - started
    assert [e.score for e in row.evaluations] == [1.0, 1.0, 1.0]
    assert elapsed < 0.5, f"one after the other takes 0.6 s or more; took {elapsed:.3f} s"


@pytest.mark.anyio
async def test_every_evaluator_of_an_entry_scores_under_the_runs_threshold_and_prices() -> None:
    prices = PriceTable(models={"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)})
    seen: list[tuple[float, PriceTable]] = []

    async def reads_the_run(evaluable: Evaluable) -> float:
        await anyio.sleep(0)
        seen.append((pass_threshold(), current_prices()))
        return 1.0

    def reads_the_run_in_a_thread(evaluable: Evaluable) -> float:
        seen.append((pass_threshold(), current_prices()))
        return 1.0

    rows = await evaluate_inputs(
        str.upper,
        list("abcdef"),
        [reads_the_run, reads_the_run_in_a_thread, reads_the_run],
        threshold=0.8,
        prices=prices,
        concurrency=3,
    )
    assert all(e.score == 1.0 for row in rows for e in row.evaluations)
    assert seen == [(0.8, prices)] * 18
