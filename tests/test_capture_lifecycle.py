"""A capture that has closed receives and holds nothing; blocks exit in order, in their context."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import threading
import weakref
from collections.abc import Callable

import pytest

from evaltrace import capture_traces, wrap
from evaltrace.capture import propagate
from evaltrace.capture.config import runtime
from evaltrace.errors import CaptureBlockError, EvaltraceError


@wrap
def step(i: int) -> int:
    wrap(i, purpose="state", name="reached")
    return i


@pytest.mark.anyio
async def test_a_task_outliving_its_capture_files_nothing_more_into_it() -> None:
    go = asyncio.Event()

    async def background() -> None:
        step(1)
        await go.wait()
        step(2)

    with capture_traces() as handler:
        task = asyncio.create_task(background())
        await asyncio.sleep(0)  # the task runs step(1) inside the block
    go.set()
    await task
    assert [s.input for s in handler.spans] == [{"i": 1}]
    assert [v.value for v in handler.named_values] == [1]


def test_a_span_that_ends_after_its_capture_closed_is_not_delivered() -> None:
    tracer = runtime().tracer
    with capture_traces() as handler:
        span = tracer.start_span("still running")
    span.end()
    assert handler.spans == []


@pytest.mark.anyio
async def test_dropping_the_handler_of_a_closed_capture_frees_it_while_the_task_runs() -> None:
    go, finished = asyncio.Event(), asyncio.Event()

    async def background() -> None:
        await go.wait()
        for i in range(10):
            step(i)
        finished.set()
        await asyncio.Event().wait()  # keeps its context (and the closed capture) alive

    with capture_traces() as handler:
        task = asyncio.create_task(background())
    gone = weakref.ref(handler)
    del handler
    go.set()
    await finished.wait()
    gc.collect()
    try:
        assert gone() is None
    finally:
        task.cancel()


@pytest.mark.anyio
async def test_calls_after_a_capture_closed_leave_nothing_in_the_processor() -> None:
    processor = runtime().processor
    go, finished = asyncio.Event(), asyncio.Event()

    async def background() -> None:
        await go.wait()
        for i in range(100):
            step(i)
        finished.set()

    with capture_traces():
        task = asyncio.create_task(background())
    sizes_at_exit = (len(processor._by_trace), len(processor._by_span))
    go.set()
    await finished.wait()
    await task
    assert (len(processor._by_trace), len(processor._by_span)) == sizes_at_exit
    assert processor._by_trace == {}  # no capture open: nothing is pinned


def test_calls_outside_any_capture_leave_nothing_in_the_processor() -> None:
    processor = runtime().processor
    for i in range(100):
        step(i)
    assert processor._by_trace == {} and processor._by_span == {}


@pytest.mark.anyio
async def test_a_task_outliving_an_inner_capture_still_feeds_the_open_outer_one() -> None:
    go, done = asyncio.Event(), asyncio.Event()

    async def background() -> None:
        await go.wait()
        step(2)
        done.set()

    with capture_traces() as outer:
        with capture_traces() as inner:
            task = asyncio.create_task(background())
        go.set()
        await done.wait()
    await task
    assert inner.spans == []
    assert [s.input for s in outer.spans] == [{"i": 2}]


# Blocks exited out of order or in another context --------------------------------------


def test_exit_without_enter_is_a_capture_block_error() -> None:
    block = capture_traces()
    with pytest.raises(CaptureBlockError, match="never entered"):
        block.__exit__(None, None, None)


def test_entering_an_open_block_again_is_a_capture_block_error() -> None:
    block = capture_traces()
    with block, pytest.raises(CaptureBlockError, match="already open"):
        block.__enter__()


def in_fresh_context(test: Callable[[], None]) -> Callable[[], None]:
    """Run a test that leaves a misused block behind in a context of its own."""

    @functools.wraps(test)
    def run() -> None:
        contextvars.Context().run(test)

    return run


@in_fresh_context
def test_exiting_an_outer_block_before_the_inner_one_is_a_capture_block_error() -> None:
    outer, inner = capture_traces(), capture_traces()
    outer_handler = outer.__enter__()
    inner_handler = inner.__enter__()
    with pytest.raises(CaptureBlockError, match="reverse order"):
        outer.__exit__(None, None, None)
    step(1)  # the inner capture is still open; the outer one has closed
    inner.__exit__(None, None, None)
    step(2)
    assert [s.input for s in inner_handler.spans] == [{"i": 1}]
    assert outer_handler.spans == []


@pytest.mark.anyio
async def test_a_block_exited_in_another_task_is_a_capture_block_error_and_closes() -> None:
    block = capture_traces()
    handler = block.__enter__()  # entered in this task's context

    async def exit_elsewhere() -> None:
        block.__exit__(None, None, None)

    with pytest.raises(CaptureBlockError, match="another task or thread"):
        await asyncio.create_task(exit_elsewhere())
    step(1)  # this context still names the capture, but it has closed
    assert handler.spans == []


@in_fresh_context
def test_a_block_exited_in_another_context_is_not_a_raw_value_error() -> None:
    block = capture_traces()
    block.__enter__()
    with pytest.raises(EvaltraceError) as caught:
        contextvars.copy_context().run(block.__exit__, None, None, None)
    assert isinstance(caught.value, CaptureBlockError)


def test_a_block_exited_in_another_thread_is_a_capture_block_error() -> None:
    block = capture_traces()
    errors: list[BaseException] = []

    def enter_only() -> None:
        block.__enter__()

    def exit_only() -> None:
        try:
            block.__exit__(None, None, None)
        except BaseException as exc:
            errors.append(exc)

    for target in (enter_only, exit_only):
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    assert [type(e) for e in errors] == [CaptureBlockError]


@in_fresh_context
def test_a_misused_block_keeps_the_apps_own_exception_and_adds_a_note() -> None:
    outer, inner = capture_traces(), capture_traces()
    outer.__enter__()
    inner.__enter__()
    failure = KeyError("the app's own error")
    outer.__exit__(KeyError, failure, None)  # the app's exception keeps propagating
    inner.__exit__(None, None, None)
    assert any("reverse order" in note for note in getattr(failure, "__notes__", []))


def test_a_block_can_be_entered_again_after_it_exited() -> None:
    block = capture_traces()
    with block as handler:
        step(1)
    with block:
        step(2)
    assert [s.input for s in handler.spans] == [{"i": 1}, {"i": 2}]


def test_propagate_refuses_a_non_callable_at_once() -> None:
    with pytest.raises(TypeError, match=r"propagate\(fn\) takes a callable.*got int"):
        propagate(5)  # type: ignore[arg-type]
