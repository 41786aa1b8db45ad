from __future__ import annotations

import math
import random

import anyio
import anyio.lowlevel
import pytest

from evaltrace.llm.rate_limit import RateLimiter


class FakeClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


def limiter_on(clock: FakeClock, **limits: float) -> RateLimiter:
    return RateLimiter(clock=clock, sleep=clock.sleep, **limits)


async def admit_all(limiter: RateLimiter, clock: FakeClock, tokens: list[int]) -> list[float]:
    """Start one acquire per item, in order; return the fake time each was admitted at."""
    admitted: list[float] = [math.nan] * len(tokens)

    async def call(i: int) -> None:
        await limiter.acquire(tokens[i])
        admitted[i] = clock.now

    async with anyio.create_task_group() as tg:
        for i in range(len(tokens)):
            tg.start_soon(call, i)
            # Let the call reach the limiter before the next one starts, so arrival order is i.
            await anyio.lowlevel.checkpoint()
    return admitted


@pytest.mark.anyio
async def test_an_oversized_request_is_admitted_at_once_when_idle() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, tokens_per_minute=1_000)

    await limiter.acquire(tokens=5_000)

    assert clock.now == 0.0
    assert clock.sleeps == []


@pytest.mark.anyio
async def test_the_request_after_an_oversized_one_waits_until_it_leaves_the_window() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, tokens_per_minute=1_000)

    admitted = await admit_all(limiter, clock, [5_000, 10])

    assert admitted == [0.0, 60.0]
    assert clock.sleeps == [60.0]


@pytest.mark.anyio
async def test_an_oversized_request_waits_for_the_window_to_empty_then_goes_alone() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, tokens_per_minute=1_000)

    admitted = await admit_all(limiter, clock, [600, 5_000, 10])

    assert admitted == [0.0, 60.0, 120.0]


@pytest.mark.anyio
async def test_25_requests_at_10_per_second_never_exceed_10_in_any_second() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=10)

    admitted = await admit_all(limiter, clock, [1] * 25)

    for start in admitted:
        in_window = [t for t in admitted if start <= t < start + 1.0]
        assert len(in_window) <= 10, f"{len(in_window)} requests in [{start}, {start + 1})"
    assert admitted == [0.0] * 10 + [1.0] * 10 + [2.0] * 5
    assert clock.now == 2.0


@pytest.mark.anyio
async def test_random_traffic_keeps_every_window_within_its_limits() -> None:
    rng = random.Random(7)
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=7, tokens_per_second=50)
    admitted: list[tuple[float, int]] = []

    async def call(tokens: int) -> None:
        await limiter.acquire(tokens)
        admitted.append((clock.now, tokens))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(300):
                tg.start_soon(call, rng.choice([1, 3, 8, 20, 49, 80]))
                clock.now += rng.choice([0.0, 0.0, 0.01, 0.13, 0.3])
                await anyio.lowlevel.checkpoint()

    assert len(admitted) == 300
    for start, _ in admitted:
        window = [tokens for t, tokens in admitted if start <= t < start + 1.0]
        assert len(window) <= 7
        assert sum(window) <= 50 or len(window) == 1, f"{window} in [{start}, {start + 1})"


@pytest.mark.anyio
async def test_a_waiting_request_sleeps_once_until_room_frees_up() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=10)

    await admit_all(limiter, clock, [1] * 25)

    assert clock.sleeps == [1.0, 1.0]


@pytest.mark.anyio
async def test_requests_spread_over_time_are_limited_per_sliding_window() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=2)

    await limiter.acquire()
    clock.now = 0.5
    await limiter.acquire()
    await limiter.acquire()  # the window [0.0, 1.0) is full: waits for the first to leave

    assert clock.now == 1.0


@pytest.mark.anyio
async def test_waiters_are_served_in_arrival_order() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, tokens_per_minute=100)
    order: list[str] = []

    async def call(name: str, tokens: int) -> None:
        await limiter.acquire(tokens)
        order.append(name)

    async with anyio.create_task_group() as tg:
        for name, tokens in [("first", 60), ("big", 60), ("small-1", 10), ("small-2", 10)]:
            tg.start_soon(call, name, tokens)
            await anyio.lowlevel.checkpoint()

    # The small calls would fit next to "first", but "big" arrived before them.
    assert order == ["first", "big", "small-1", "small-2"]
    assert clock.now == 60.0


@pytest.mark.anyio
async def test_tokens_limit_binds_before_requests_limit() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=5, tokens_per_minute=100)

    admitted = await admit_all(limiter, clock, [30, 30, 30, 30])

    assert admitted == [0.0, 0.0, 0.0, 60.0]


@pytest.mark.anyio
async def test_requests_limit_binds_before_tokens_limit() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=5, tokens_per_minute=100)

    admitted = await admit_all(limiter, clock, [1] * 12)

    assert admitted == [0.0] * 5 + [1.0] * 5 + [2.0] * 2


@pytest.mark.anyio
async def test_per_second_and_per_minute_limits_apply_together() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, requests_per_second=4, requests_per_minute=6)

    admitted = await admit_all(limiter, clock, [1] * 7)

    assert admitted == [0.0] * 4 + [1.0] * 2 + [60.0]


@pytest.mark.anyio
async def test_limit_context_manager_counts_the_call() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, tokens_per_second=10)
    ran: list[float] = []

    async with limiter.limit(tokens=8):
        ran.append(clock.now)
    async with limiter.limit(tokens=8):
        ran.append(clock.now)

    assert ran == [0.0, 1.0]


@pytest.mark.anyio
async def test_a_waiter_cancelled_while_waiting_uses_up_no_room() -> None:
    clock = FakeClock()
    waiting = anyio.CancelScope()

    async def sleep(seconds: float) -> None:
        if not waiting.cancel_called:
            waiting.cancel()  # the first wait is cancelled instead of ending
        else:
            clock.now += seconds
        await anyio.lowlevel.checkpoint()

    limiter = RateLimiter(requests_per_minute=1, clock=clock, sleep=sleep)
    await limiter.acquire()
    clock.now = 30.0
    with waiting:
        await limiter.acquire()
    assert waiting.cancelled_caught

    clock.now = 60.0
    await limiter.acquire()

    assert clock.now == 60.0


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({}, "needs at least one limit"),
        ({"requests_per_second": 0}, r"requests_per_second=0\): expected a positive finite"),
        ({"requests_per_minute": -5}, r"requests_per_minute=-5\)"),
        ({"tokens_per_second": math.inf}, r"tokens_per_second=inf\)"),
        ({"tokens_per_minute": math.nan}, r"tokens_per_minute=nan\)"),
        ({"tokens_per_minute": True}, r"tokens_per_minute=True\)"),
        ({"requests_per_second": "10"}, r"requests_per_second='10'\)"),
    ],
)
def test_invalid_limits_are_rejected(limits: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimiter(**limits)  # type: ignore[arg-type]


@pytest.mark.parametrize("tokens", [0, -1, 1.5, True, "3"])
@pytest.mark.anyio
async def test_invalid_token_counts_are_rejected(tokens: object) -> None:
    limiter = RateLimiter(tokens_per_minute=100)

    with pytest.raises(
        ValueError, match=r"acquire\(tokens=.*\): expected an integer of at least 1"
    ):
        await limiter.acquire(tokens)  # type: ignore[arg-type]
