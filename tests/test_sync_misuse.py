"""Async API called from sync code without ``await``: the result says how to run it."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from typing import Any

import anyio
import pytest

import evaltrace
from evaltrace import Evaluation
from evaltrace.concurrency import Pending


def app(question: str) -> str:
    return "4"


def passes(evaluable: evaltrace.Evaluable) -> float:
    return 1.0


def test_attribute_of_an_unawaited_call_names_the_fix() -> None:
    pending = evaltrace.run_and_evaluate(passes, app, "2+2")
    with pytest.raises(AttributeError) as info:
        pending.score  # noqa: B018
    message = str(info.value)
    assert "run_and_evaluate(...) has not run yet" in message
    assert "await evaltrace.run_and_evaluate(...)" in message
    assert "evaltrace.run(evaltrace.run_and_evaluate(...))" in message
    assert "'score'" in message
    assert evaltrace.run(pending).score == 1.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: evaltrace.evaluate_inputs(app, ["2+2"], [passes]),
        lambda: evaltrace.assert_pass(app, ["2+2"], [passes]),
        lambda: evaltrace.evaluate(passes, evaltrace.Evaluable()),
    ],
)
def test_every_front_door_call_is_pending_until_awaited(call: Any) -> None:
    pending = call()
    assert isinstance(pending, Pending)
    assert not hasattr(pending, "passed")
    evaltrace.run(pending)


def test_a_call_never_awaited_warns_with_the_fix() -> None:
    def forget() -> None:
        evaltrace.assert_pass(app, ["2+2"], [passes])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forget()
        gc.collect()
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert any("assert_pass(...) was never awaited" in m for m in messages), messages
    # the inner coroutine is closed, so Python's own unhelpful warning does not follow
    assert not any("coroutine 'assert_pass' was never awaited" in m for m in messages)


def test_pending_works_wherever_a_coroutine_does() -> None:
    async def main() -> list[Evaluation]:
        direct = await evaltrace.run_and_evaluate(passes, app, "2+2")
        task = asyncio.create_task(evaltrace.run_and_evaluate(passes, app, "2+2"))
        gathered = await asyncio.gather(evaltrace.run_and_evaluate(passes, app, "2+2"))
        waited = await asyncio.wait_for(evaltrace.run_and_evaluate(passes, app, "2+2"), 30)
        results: list[Evaluation] = []
        async with anyio.create_task_group() as group:

            async def one() -> None:
                results.append(await evaltrace.run_and_evaluate(passes, app, "2+2"))

            group.start_soon(one)
        return [direct, await task, *gathered, waited, *results]

    assert [e.score for e in asyncio.run(main())] == [1.0] * 5
    assert [e.score for e in [anyio.run(evaltrace.run_and_evaluate, passes, app, "2+2")]] == [1.0]


def test_pending_keeps_the_function_signature_and_docs() -> None:
    fn = evaltrace.run_and_evaluate
    assert fn.__name__ == "run_and_evaluate"
    assert "Run ``runnable(eval_input)``" in (fn.__doc__ or "")
    assert list(inspect.signature(fn).parameters)[:3] == ["evaluator", "runnable", "eval_input"]


def test_an_error_raised_inside_comes_out_of_await() -> None:
    with pytest.raises(TypeError, match="runnable"):
        evaltrace.run(evaltrace.run_and_evaluate(passes, 42, "2+2"))  # type: ignore[arg-type]


def test_closing_a_pending_closes_its_coroutine() -> None:
    pending = evaltrace.run_and_evaluate(passes, app, "2+2")
    pending.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del pending
        gc.collect()
