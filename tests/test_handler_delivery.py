"""Handlers get spans on their own thread through a bounded queue; flush says what it did."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from evaltrace import InstrumentationHandler, flush, wrap
from evaltrace.capture import HandlerStats, WrapRecord
from evaltrace.errors import ConfigurationError
from evaltrace.trace import add_handler, handler_stats, remove_handler


@wrap
def step(i: int) -> int:
    return i


class BlockingHandler(InstrumentationHandler):
    """Blocks on its first span until released, recording everything it is given."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.inputs: list[object] = []
        self.threads: set[int] = set()

    def on_span(self, span: object) -> None:
        self.threads.add(threading.get_ident())
        self.entered.set()
        self.release.wait(10)  # a guard: every test releases it
        self.inputs.append(span.input)  # type: ignore[attr-defined]


@pytest.fixture
def blocking() -> Iterator[BlockingHandler]:
    handler = BlockingHandler()
    yield handler
    handler.release.set()
    remove_handler(handler)


def test_sync_handlers_run_off_the_apps_thread(blocking: BlockingHandler) -> None:
    blocking.release.set()
    add_handler(blocking)
    step(1)
    assert flush()
    assert blocking.inputs == [{"i": 1}]
    assert threading.get_ident() not in blocking.threads


def test_a_blocked_handler_never_blocks_the_app(blocking: BlockingHandler) -> None:
    add_handler(blocking)
    for i in range(5):
        step(i)  # returns although the handler is stuck on the first span
    assert blocking.entered.wait(10)
    assert blocking.inputs == []
    blocking.release.set()
    assert flush()
    assert blocking.inputs == [{"i": i} for i in range(5)]


def test_a_slow_handler_drops_beyond_its_queue_and_counts_the_drops(
    blocking: BlockingHandler,
) -> None:
    add_handler(blocking, max_queue_size=4)
    step(0)
    assert blocking.entered.wait(10)  # span 0 is being handled, the queue is empty
    for i in range(1, 11):
        step(i)
    assert handler_stats(blocking) == HandlerStats(delivered=0, failed=0, dropped=6, queued=4)
    blocking.release.set()
    assert flush() is False  # six spans never reached the handler
    assert blocking.inputs == [{"i": i} for i in range(5)]
    assert handler_stats(blocking) == HandlerStats(delivered=5, failed=0, dropped=6, queued=0)
    assert flush() is True  # nothing was lost since the previous flush


def test_flush_returns_false_at_its_timeout_while_a_handler_is_busy(
    blocking: BlockingHandler,
) -> None:
    add_handler(blocking)
    step(1)
    assert blocking.entered.wait(10)
    assert flush(timeout_millis=50) is False
    blocking.release.set()
    assert flush() is True


def test_a_raising_handler_counts_as_failed_and_keeps_receiving() -> None:
    class Raising(InstrumentationHandler):
        def on_span(self, span: object) -> None:
            raise RuntimeError("broken")

    handler = Raising()
    add_handler(handler)
    try:
        step(1)
        step(2)
        assert flush()  # delivered: the failure is the handler's own
        assert handler_stats(handler) == HandlerStats(delivered=2, failed=2, dropped=0, queued=0)
    finally:
        remove_handler(handler)


def test_async_handlers_run_on_a_loop_of_their_own_thread() -> None:
    class AsyncHandler(InstrumentationHandler):
        def __init__(self) -> None:
            self.seen: list[tuple[object, int]] = []

        async def on_span(self, span: object) -> None:  # type: ignore[override]
            await asyncio.sleep(0)
            self.seen.append((span.input, threading.get_ident()))  # type: ignore[attr-defined]

    handler = AsyncHandler()
    add_handler(handler)
    try:
        for i in range(3):
            step(i)
        assert flush()
    finally:
        remove_handler(handler)
    assert [value for value, _ in handler.seen] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert threading.get_ident() not in {thread for _, thread in handler.seen}


def test_wrap_values_reach_handlers_through_the_same_queue() -> None:
    class Values(InstrumentationHandler):
        def __init__(self) -> None:
            self.values: list[tuple[str, object]] = []
            self.threads: set[int] = set()

        def on_value(self, record: WrapRecord) -> None:
            self.threads.add(threading.get_ident())
            self.values.append((record.name, record.value))

    @wrap
    def answer() -> str:
        return wrap("Paris", purpose="output", name="answer")

    handler = Values()
    add_handler(handler)
    try:
        answer()
        assert flush()
    finally:
        remove_handler(handler)
    assert handler.values == [("answer", "Paris")]
    assert threading.get_ident() not in handler.threads


def test_handler_stats_of_a_handler_never_added_are_zero() -> None:
    assert handler_stats(InstrumentationHandler()) == HandlerStats(
        delivered=0, failed=0, dropped=0, queued=0
    )


@pytest.mark.parametrize("size", [0, -1, 1.5, "10", True])
def test_add_handler_refuses_a_bad_queue_size(size: object) -> None:
    with pytest.raises(ConfigurationError, match="max_queue_size"):
        add_handler(InstrumentationHandler(), max_queue_size=size)  # type: ignore[arg-type]
