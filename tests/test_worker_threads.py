"""Sync calls in worker threads: handed over and back in batches, side by side when they block."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from evaltrace.concurrency import run_in_worker_thread

pytestmark = pytest.mark.anyio

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_quick_calls_made_together_are_taken_by_one_thread_not_one_each() -> None:
    threads: set[int] = set()

    def quick(number: int) -> int:
        threads.add(threading.get_ident())
        return number * 2

    results = await asyncio.gather(
        *(run_in_worker_thread(lambda n=n: quick(n)) for n in range(200))  # type: ignore[misc]
    )

    assert results == [n * 2 for n in range(200)]
    assert len(threads) <= 4
    assert threading.get_ident() not in threads


async def test_calls_that_wait_for_each_other_still_run_side_by_side() -> None:
    everyone = threading.Barrier(5, timeout=10)

    def meet(number: int) -> int:
        everyone.wait()  # one at a time, the first would wait here until the timeout
        return number

    started = time.monotonic()
    results = await asyncio.gather(
        *(run_in_worker_thread(lambda n=n: meet(n)) for n in range(5))  # type: ignore[misc]
    )

    assert results == list(range(5))
    assert time.monotonic() - started < 5


async def test_each_call_runs_in_its_own_copy_of_the_callers_context() -> None:
    async def one(name: str) -> tuple[str, str]:
        REQUEST.set(name)

        def read_and_change() -> str:
            seen = REQUEST.get()
            REQUEST.set("changed in the thread")
            return seen

        seen = await run_in_worker_thread(read_and_change)
        return seen, REQUEST.get()

    results = await asyncio.gather(*(asyncio.create_task(one(f"r{n}")) for n in range(20)))

    assert results == [(f"r{n}", f"r{n}") for n in range(20)]


async def test_an_error_of_one_call_of_a_batch_reaches_its_caller_only() -> None:
    def maybe(number: int) -> int:
        if number == 3:
            raise KeyError(number)
        return number

    results = await asyncio.gather(
        *(run_in_worker_thread(lambda n=n: maybe(n)) for n in range(6)),  # type: ignore[misc]
        return_exceptions=True,
    )

    assert [type(r).__name__ if isinstance(r, BaseException) else r for r in results] == [
        0,
        1,
        2,
        "KeyError",
        4,
        5,
    ]


async def test_a_call_whose_caller_stopped_waiting_is_abandoned_not_waited_for() -> None:
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "late"

    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await run_in_worker_thread(stuck)
        assert await run_in_worker_thread(lambda: "next") == "next"
    finally:
        release.set()
