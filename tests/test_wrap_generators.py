"""Decorated generators and async generators: the protocols pass through, the items are kept."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from evaltrace import capture_traces, wrap
from evaltrace.capture import config
from evaltrace.capture.config import Runtime
from evaltrace.capture.processor import ScopeSpanProcessor


class Boom(Exception):
    pass


@wrap
def echo() -> Generator[str, str, None]:
    received = "start"
    while True:
        try:
            received = yield received
        except KeyError:
            received = "caught"


@wrap
async def echo_async() -> AsyncGenerator[str, str]:
    received = "start"
    while True:
        try:
            received = yield received
        except KeyError:
            received = "caught"


@wrap
async def letters(word: str) -> AsyncIterator[str]:
    for letter in word:
        yield letter


@wrap
def countdown(n: int) -> Generator[int, None, str]:
    while n:
        yield n
        n -= 1
    return "liftoff"


@pytest.mark.anyio
async def test_async_generator_asend_and_athrow_reach_the_inner_generator() -> None:
    async with capture_traces() as handler:
        gen = echo_async()
        assert await gen.asend(None) == "start"
        assert await gen.asend("x") == "x"
        assert await gen.athrow(KeyError("k")) == "caught"
        await gen.aclose()

    (span,) = handler.spans
    assert span.output == ["start", "x", "caught"]
    assert span.status != "error"


@pytest.mark.anyio
async def test_async_generator_closed_early_keeps_items_seen_so_far() -> None:
    async with capture_traces() as handler:
        gen = letters("abcdef")
        assert await gen.__anext__() == "a"
        assert await gen.__anext__() == "b"
        await gen.aclose()

    (span,) = handler.spans
    assert span.output == ["a", "b"]
    assert span.status != "error"


@pytest.mark.anyio
async def test_async_generator_exception_is_recorded_and_reraised() -> None:
    @wrap
    async def failing() -> AsyncIterator[int]:
        yield 1
        raise Boom("in async generator")

    async with capture_traces() as handler:
        with pytest.raises(Boom, match="in async generator"):
            _ = [item async for item in failing()]

    (span,) = handler.spans
    assert span.status == "error"


@pytest.mark.anyio
async def test_exception_thrown_into_an_async_generator_that_does_not_catch_it_fails_the_span() -> (
    None
):
    async with capture_traces() as handler:
        gen = letters("ab")
        assert await gen.__anext__() == "a"
        with pytest.raises(Boom):
            await gen.athrow(Boom("from the consumer"))

    (span,) = handler.spans
    assert span.status == "error"


def test_generator_return_value_is_recorded_beside_its_items() -> None:
    with capture_traces() as handler:
        gen = countdown(2)
        assert list(gen) == [2, 1]

    (span,) = handler.spans
    assert span.output == {"items": [2, 1], "return": "liftoff"}


def test_generator_return_value_reaches_the_caller() -> None:
    def delegate() -> Generator[int, None, str]:
        return (yield from countdown(1))

    with capture_traces():
        gen = delegate()
        assert next(gen) == 1
        with pytest.raises(StopIteration) as stop:
            next(gen)

    assert stop.value.value == "liftoff"


def test_exception_thrown_into_a_generator_that_does_not_catch_it_fails_the_span() -> None:
    with capture_traces() as handler:
        gen = countdown(3)
        assert next(gen) == 3
        with pytest.raises(Boom):
            gen.throw(Boom("from the consumer"))

    (span,) = handler.spans
    assert span.status == "error"


def test_generator_send_reaches_the_inner_generator_and_items_are_recorded() -> None:
    with capture_traces() as handler:
        gen = echo()
        assert next(gen) == "start"
        assert gen.send("x") == "x"
        assert gen.throw(KeyError("k")) == "caught"
        gen.close()

    (span,) = handler.spans
    assert span.output == ["start", "x", "caught"]


@pytest.fixture
def two_items_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A runtime that keeps two items of each decorated generator."""
    settings = dataclasses.replace(config.settings(), max_generator_items=2)
    provider = TracerProvider()
    processor = ScopeSpanProcessor(settings.shutdown_timeout_millis)
    provider.add_span_processor(processor)
    monkeypatch.setattr(config, "RUNTIME", Runtime(settings, provider, processor, True))
    yield
    provider.shutdown()


@pytest.mark.usefixtures("two_items_kept")
def test_generator_items_past_the_limit_are_counted_not_kept() -> None:
    @wrap
    def numbers() -> Iterator[int]:
        yield from range(5)

    with capture_traces() as handler:
        assert list(numbers()) == [0, 1, 2, 3, 4]

    (span,) = handler.spans
    assert span.output == {"items": [0, 1], "items_dropped": 3}


@pytest.mark.anyio
@pytest.mark.usefixtures("two_items_kept")
async def test_async_generator_items_past_the_limit_are_counted_not_kept() -> None:
    @wrap
    async def numbers() -> AsyncIterator[int]:
        for number in range(5):
            yield number

    async with capture_traces() as handler:
        assert [n async for n in numbers()] == [0, 1, 2, 3, 4]

    (span,) = handler.spans
    assert span.output == {"items": [0, 1], "items_dropped": 3}


def test_idle_generator_passes_send_throw_and_return_value_through() -> None:
    gen = echo()
    assert next(gen) == "start"
    assert gen.send("x") == "x"
    assert gen.throw(KeyError("k")) == "caught"
    gen.close()
    assert list(countdown(2)) == [2, 1]


@pytest.mark.anyio
async def test_idle_async_generator_passes_asend_and_athrow_through() -> None:
    gen = echo_async()
    assert await gen.asend(None) == "start"
    assert await gen.asend("x") == "x"
    assert await gen.athrow(KeyError("k")) == "caught"
    await gen.aclose()


def test_generator_called_with_wrong_arguments_fails_and_ends_its_span() -> None:
    with capture_traces() as handler, pytest.raises(TypeError):
        next(countdown())  # type: ignore[call-arg]

    (span,) = handler.spans
    assert span.status == "error"


@pytest.mark.anyio
async def test_async_generator_called_with_wrong_arguments_fails_and_ends_its_span() -> None:
    async with capture_traces() as handler:
        with pytest.raises(TypeError):
            await letters().__anext__()  # type: ignore[call-arg]

    (span,) = handler.spans
    assert span.status == "error"
