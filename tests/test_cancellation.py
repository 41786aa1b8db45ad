"""A CancelledError cancels only when the run is cancelled; a stray one is an errored result.

A client library may cancel a future it awaits and let the ``CancelledError`` escape although
nobody cancelled the evaluation. That must be an error like any other (never an empty row, so
never a pass), while a real cancellation of the caller must still cancel everything at once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

import anyio
import pytest

from evaltrace import Evaluable, Evaluation, evaluate
from evaltrace.engine import EvalAssertionError, assert_pass, evaluate_inputs, run_and_evaluate
from evaltrace.evals import ScoreThreshold

BACKENDS = ["asyncio"] + (["trio"] if importlib.util.find_spec("trio") is not None else [])


@pytest.fixture(params=BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


async def stray_async(evaluable: Evaluable) -> float:
    await anyio.sleep(0)
    raise asyncio.CancelledError()  # as a library that cancelled a future it awaited would


def stray_sync(evaluable: Evaluable) -> float:
    raise asyncio.CancelledError()


def echo(question: Any) -> Any:
    return question


def ok(evaluable: Evaluable) -> float:
    return 1.0


@pytest.mark.anyio
@pytest.mark.parametrize("evaluator", [stray_async, stray_sync], ids=["async", "sync"])
async def test_stray_cancellation_in_an_evaluator_errors_every_row(evaluator: Any) -> None:
    rows = await evaluate_inputs(echo, list(range(20)), [evaluator])
    assert [len(row.evaluations) for row in rows] == [1] * 20
    for row in rows:
        (evaluation,) = row.evaluations
        assert evaluation.status == "errored"
        assert evaluation.error is not None and evaluation.error.where == "evaluator"
        assert "CancelledError" in evaluation.error.message
        assert "not cancelled" in evaluation.error.message


@pytest.mark.anyio
@pytest.mark.parametrize("evaluator", [stray_async, stray_sync], ids=["async", "sync"])
async def test_stray_cancellation_in_an_evaluator_fails_assert_pass(evaluator: Any) -> None:
    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(echo, list(range(20)), [evaluator])
    assert [[e.status for e in row] for row in info.value.results] == [["errored"]] * 20


@pytest.mark.anyio
async def test_stray_cancellation_on_most_inputs_is_no_false_pass() -> None:
    async def cancels_after_the_first(evaluable: Evaluable) -> float:
        if evaluable.input_value() == 0:
            return 1.0
        raise asyncio.CancelledError()

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(echo, list(range(20)), [cancels_after_the_first], concurrency=1)
    statuses = [[e.status for e in row] for row in info.value.results]
    assert statuses == [["scored"]] + [["errored"]] * 19


@pytest.mark.anyio
async def test_stray_cancellation_leaves_the_other_evaluators_of_the_row() -> None:
    rows = await evaluate_inputs(echo, ["a", "b"], [ok, stray_async, stray_sync])
    for row in rows:
        assert [e.status for e in row.evaluations] == ["scored", "errored", "errored"]
        assert [e.evaluator for e in row.evaluations] == ["ok", "stray_async", "stray_sync"]


@pytest.mark.anyio
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_stray_cancellation_in_the_runnable_errors_its_row(is_async: bool) -> None:
    async def async_app(question: str) -> str:
        await anyio.sleep(0)
        raise asyncio.CancelledError()

    def sync_app(question: str) -> str:
        raise asyncio.CancelledError()

    rows = await evaluate_inputs(async_app if is_async else sync_app, list(range(20)), [ok, ok])
    for row in rows:
        assert [e.status for e in row.evaluations] == ["errored", "errored"]
        for evaluation in row.evaluations:
            assert evaluation.error is not None and evaluation.error.where == "runnable"
            assert "CancelledError" in evaluation.error.message


@pytest.mark.anyio
async def test_evaluate_reports_a_stray_cancellation_as_an_error() -> None:
    result = await evaluate(stray_async, Evaluable())
    assert result.error is not None
    assert (result.error.type, result.error.where) == ("StrayCancellationError", "evaluator")


@pytest.mark.anyio
async def test_run_and_evaluate_reports_a_stray_cancellation_of_the_runnable() -> None:
    async def app(question: str) -> str:
        raise asyncio.CancelledError()

    result = await run_and_evaluate(ok, app, "q", timeout=5)
    assert result.error is not None
    assert (result.error.type, result.error.where) == ("StrayCancellationError", "runnable")


@pytest.mark.anyio
async def test_a_progress_callback_raising_cancelled_error_loses_no_row() -> None:
    def progress(item: object, done: int, total: int) -> None:
        raise asyncio.CancelledError()

    rows = await evaluate_inputs(echo, list(range(5)), [ok], concurrency=1, on_progress=progress)
    assert [[e.status for e in row.evaluations] for row in rows] == [["scored"]] * 5


def test_a_row_without_evaluations_fails_the_threshold() -> None:
    good = Evaluation(score=1.0)
    passed, message = ScoreThreshold()([[good], []])
    assert not passed
    assert "1 of 2 inputs passed" in message


def test_a_row_with_fewer_evaluations_than_the_others_fails_the_threshold() -> None:
    good = Evaluation(score=1.0)
    passed, _ = ScoreThreshold()([[good, good], [good]])
    assert not passed


class _Blocked:
    """Evaluators that block until cancelled, recording that they saw the cancellation."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started = 0
        self.all_started = anyio.Event()
        self.cancelled = 0

    async def __call__(self, evaluable: Evaluable) -> float:
        self.started += 1
        if self.started == self.expected:
            self.all_started.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


@pytest.mark.anyio
async def test_cancelling_an_enclosing_scope_cancels_the_run() -> None:
    blocked = _Blocked(expected=4)
    reached_the_end = False
    async with anyio.create_task_group() as group:

        async def cancel_when_started() -> None:
            await blocked.all_started.wait()
            group.cancel_scope.cancel()

        group.start_soon(cancel_when_started)
        await assert_pass(echo, ["a", "b", "c", "d"], [blocked], concurrency=4, timeout=3600)
        reached_the_end = True
    assert group.cancel_scope.cancelled_caught
    assert not reached_the_end
    assert blocked.cancelled == 4


@pytest.mark.anyio
async def test_a_cancelled_evaluator_that_raises_a_new_cancelled_error_still_cancels() -> None:
    started = anyio.Event()

    async def replaces_the_cancellation(evaluable: Evaluable) -> float:
        started.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            raise asyncio.CancelledError() from None  # not the exception it was given
        raise AssertionError("unreachable")

    reached_the_end = False
    async with anyio.create_task_group() as group:

        async def cancel_when_started() -> None:
            await started.wait()
            group.cancel_scope.cancel()

        group.start_soon(cancel_when_started)
        await evaluate(replaces_the_cancellation, Evaluable())
        reached_the_end = True
    assert group.cancel_scope.cancelled_caught and not reached_the_end


@pytest.mark.anyio
async def test_cancelling_the_run_cancels_a_runnable_in_flight() -> None:
    started = anyio.Event()
    cancelled = False

    async def app(question: str) -> str:
        nonlocal cancelled
        started.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            cancelled = True
            raise
        raise AssertionError("unreachable")

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_started() -> None:
                await started.wait()
                scope.cancel()

            group.start_soon(cancel_when_started)
            await assert_pass(app, ["q"], [ok])
    assert scope.cancelled_caught and cancelled


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_cancelling_the_caller_task_cancels_the_run(anyio_backend: str) -> None:
    blocked = _Blocked(expected=3)
    release = threading.Event()

    def blocked_sync(evaluable: Evaluable) -> float:
        release.wait()
        return 1.0

    task = asyncio.ensure_future(
        assert_pass(echo, ["a", "b", "c"], [blocked, blocked_sync], concurrency=3)
    )
    await blocked.all_started.wait()
    task.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        release.set()
    assert blocked.cancelled == 3
