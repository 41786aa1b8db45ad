from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider

from evaltrace import capture_traces, wrap
from evaltrace.capture import config
from evaltrace.capture import conventions as conv
from evaltrace.capture.codec import Codec
from evaltrace.capture.config import Runtime
from evaltrace.capture.processor import ScopeSpanProcessor


@wrap
def add(a: int, b: int = 2) -> int:
    return a + b


@wrap(name="multiply", kind="tool")
async def mul(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a * b


@wrap
def count(n: int) -> Iterator[int]:
    yield from range(n)


@wrap(kind="llm")
async def stream(words: list[str]) -> AsyncIterator[str]:
    for word in words:
        await asyncio.sleep(0)
        yield word


class Agent:
    @wrap(kind="agent")
    def run(self, question: str) -> str:
        return self.helper(question)

    @wrap
    def helper(self, question: str) -> str:
        return question.upper()

    @classmethod
    @wrap
    def build(cls, size: int) -> int:
        return size

    @staticmethod
    @wrap
    def pure(x: int) -> int:
        return x


class Boom(Exception):
    pass


@wrap
def explode(x: int) -> int:
    raise Boom(f"bad {x}")


@wrap
async def explode_async() -> None:
    raise Boom("async bad")


def test_sync_function_records_bound_arguments_with_defaults_and_output() -> None:
    with capture_traces() as handler:
        assert add(1) == 3
    (span,) = handler.spans
    assert span.name == "add"
    assert span.kind == "chain"
    assert span.input == {"a": 1, "b": 2}
    assert span.output == 3
    raw = handler.raw_spans[0].attributes
    assert raw[conv.INPUT_MIME_TYPE] == "application/json"
    assert raw[conv.OUTPUT_MIME_TYPE] == "application/json"
    assert raw[conv.SPAN_KIND] == "CHAIN"
    assert json.loads(raw[conv.INPUT_VALUE]) == {"a": 1, "b": 2}


@pytest.mark.anyio
async def test_async_function_uses_given_name_and_kind() -> None:
    async with capture_traces() as handler:
        assert await mul(3, b=4) == 12
    (span,) = handler.spans
    assert (span.name, span.kind, span.input, span.output) == (
        "multiply",
        "tool",
        {"a": 3, "b": 4},
        12,
    )


def test_generator_span_covers_iteration_and_records_items() -> None:
    with capture_traces() as handler:
        gen = count(3)
        assert handler.spans == []  # nothing runs before the first next()
        assert list(gen) == [0, 1, 2]
    (span,) = handler.spans
    assert span.output == [0, 1, 2]
    assert span.input == {"n": 3}


def test_generator_closed_early_keeps_items_seen_so_far() -> None:
    with capture_traces() as handler:
        gen = count(10)
        assert next(gen) == 0
        assert next(gen) == 1
        gen.close()
    (span,) = handler.spans
    assert span.output == [0, 1]
    assert span.status != "error"


@pytest.mark.anyio
async def test_async_generator_records_items() -> None:
    async with capture_traces() as handler:
        got = [w async for w in stream(["a", "b"])]
    assert got == ["a", "b"]
    (span,) = handler.spans
    assert (span.kind, span.output) == ("llm", ["a", "b"])


def test_methods_drop_self_and_cls_and_nest() -> None:
    with capture_traces() as handler:
        assert Agent().run("hi") == "HI"
        assert Agent.build(3) == 3
        assert Agent.pure(4) == 4
    by_name = {s.name: s for s in handler.spans}
    assert by_name["run"].input == {"question": "hi"}
    assert by_name["helper"].input == {"question": "hi"}
    assert by_name["build"].input == {"size": 3}
    assert by_name["pure"].input == {"x": 4}
    assert by_name["helper"].parent_span_id == by_name["run"].span_id
    assert by_name["run"].kind == "agent"
    (root,) = [n for n in handler.trace if n.span.name == "run"]
    assert [c.span.name for c in root.children] == ["helper"]


def test_exception_propagates_unchanged_and_span_is_error() -> None:
    with capture_traces() as handler, pytest.raises(Boom, match="bad 7") as info:
        explode(7)
    assert type(info.value) is Boom
    (span,) = handler.spans
    assert span.status == "error"
    assert span.error is not None
    assert span.error.type.endswith("Boom")
    assert "bad 7" in span.error.message


@pytest.mark.anyio
async def test_async_exception_propagates_and_span_is_kept() -> None:
    async with capture_traces() as handler:
        with pytest.raises(Boom):
            await explode_async()
    (span,) = handler.spans
    assert span.status == "error"


def test_generator_exception_is_recorded_and_reraised() -> None:
    @wrap
    def failing() -> Iterator[int]:
        yield 1
        raise Boom("in generator")

    with capture_traces() as handler, pytest.raises(Boom):
        list(failing())
    (span,) = handler.spans
    assert span.status == "error"


def test_generator_send_and_throw_reach_the_inner_generator() -> None:
    @wrap
    def echo() -> Iterator[str]:
        received = "start"
        while True:
            try:
                received = yield received
            except KeyError:
                received = "caught"

    with capture_traces():
        gen = echo()
        assert next(gen) == "start"
        assert gen.send("x") == "x"
        assert gen.throw(KeyError("k")) == "caught"
        gen.close()


def test_nested_decorated_calls_form_a_tree_ordered_by_start() -> None:
    @wrap
    def outer() -> int:
        return add(1) + add(2)

    with capture_traces() as handler:
        outer()
    (root,) = handler.trace
    assert root.span.name == "outer"
    assert [c.span.input for c in root.children] == [{"a": 1, "b": 2}, {"a": 2, "b": 2}]


def test_unknown_kind_is_rejected_at_decoration() -> None:
    with pytest.raises(ValueError, match="unknown span kind 'robot'"):
        wrap(kind="robot")


def test_decorating_a_non_callable_without_purpose_explains_usage() -> None:
    with pytest.raises(TypeError, match="needs purpose= and name="):
        wrap(42)


def test_decorated_function_keeps_metadata() -> None:
    assert add.__name__ == "add"
    assert add.__wrapped__(1, 1) == 2  # type: ignore[attr-defined]


# Exceptions: hostile ones never break the app, messages are redacted


class Hostile(Exception):
    """An exception whose text cannot be taken."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def _assert_failed_safely(handler: object, error: BaseException) -> None:
    (raw,) = handler.raw_spans  # type: ignore[attr-defined]
    (span,) = handler.spans  # type: ignore[attr-defined]
    assert span.status == "error"
    assert raw.status.description == "Hostile: <unprintable Hostile>"
    (event,) = [e for e in raw.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("Hostile")
    assert event.attributes["exception.message"] == "<unprintable Hostile>"
    assert "Traceback" in event.attributes["exception.stacktrace"]
    assert raw.end_time is not None
    assert not otel_trace.get_current_span().get_span_context().is_valid


def test_hostile_exception_propagates_unchanged_from_a_sync_function() -> None:
    error = Hostile()

    @wrap
    def fail() -> None:
        raise error

    with capture_traces() as handler, pytest.raises(Hostile) as info:
        fail()
    assert info.value is error
    _assert_failed_safely(handler, error)


@pytest.mark.anyio
async def test_hostile_exception_propagates_unchanged_from_an_async_function() -> None:
    error = Hostile()

    @wrap
    async def fail() -> None:
        await asyncio.sleep(0)
        raise error

    async with capture_traces() as handler:
        with pytest.raises(Hostile) as info:
            await fail()
    assert info.value is error
    _assert_failed_safely(handler, error)


def test_hostile_exception_propagates_unchanged_from_a_generator() -> None:
    error = Hostile()

    @wrap
    def fail() -> Iterator[int]:
        yield 1
        raise error

    with capture_traces() as handler, pytest.raises(Hostile) as info:
        list(fail())
    assert info.value is error
    _assert_failed_safely(handler, error)


@pytest.mark.anyio
async def test_hostile_exception_propagates_unchanged_from_an_async_generator() -> None:
    error = Hostile()

    @wrap
    async def fail() -> AsyncIterator[int]:
        yield 1
        raise error

    async with capture_traces() as handler:
        with pytest.raises(Hostile) as info:
            _ = [item async for item in fail()]
    assert info.value is error
    _assert_failed_safely(handler, error)


def test_exception_message_is_redacted_on_the_span() -> None:
    @wrap
    def connect() -> None:  # the traceback quotes this source line, secrets included
        raise ConnectionError("cannot reach postgresql://app:hunter2@db/x (password=hunter2)")

    with capture_traces() as handler, pytest.raises(ConnectionError, match="hunter2"):
        connect()
    (raw,) = handler.raw_spans
    (event,) = [e for e in raw.events if e.name == "exception"]
    message = "cannot reach postgresql://app:[REDACTED]@db/x (password=[REDACTED])"
    assert raw.status.description == f"ConnectionError: {message}"
    assert event.attributes["exception.message"] == message
    assert handler.spans[0].error.message == message
    stacktrace = event.attributes["exception.stacktrace"]
    assert "hunter2" not in stacktrace
    assert "raise ConnectionError" in stacktrace


class BrokenProcessor(SpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor is broken")


def test_a_span_processor_that_fails_at_the_end_never_reaches_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = TracerProvider()
    processor = ScopeSpanProcessor(config.settings().shutdown_timeout_millis)
    provider.add_span_processor(processor)
    provider.add_span_processor(BrokenProcessor())  # the app's own, on the app's provider
    monkeypatch.setattr(config, "RUNTIME", Runtime(config.settings(), provider, processor, False))

    with capture_traces() as handler:
        with pytest.raises(Boom, match="bad 3"):
            explode(3)
        assert add(1) == 3
    assert [span.name for span in handler.spans] == ["explode", "add"]


def _with_defaults(a: int, b: int = 2, *, c: int = 3, d: int | None = None) -> None:
    return None


def _three(a: int, b: int = 2, c: int = 3) -> None:
    return None


def _with_var_keywords(a: int, b: int = 2, **extra: int) -> None:
    return None


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "recorded"),
    [
        (_with_defaults, (1,), {}, {"a": 1, "b": 2, "c": 3, "d": None}),
        (_with_defaults, (1, 5), {}, {"a": 1, "b": 5, "c": 3, "d": None}),
        (_with_defaults, (1,), {"c": 7}, {"a": 1, "c": 7, "b": 2, "d": None}),
        (_with_defaults, (), {"a": 1, "b": 4}, {"a": 1, "b": 4, "c": 3, "d": None}),
        (_with_var_keywords, (1,), {"z": 9}, {"a": 1, "z": 9, "b": 2}),
        (_three, (1,), {"c": 7}, {"a": 1, "c": 7, "b": 2}),
        (_three, (1,), {"b": 5}, {"a": 1, "b": 5, "c": 3}),
    ],
    ids=[
        "positional",
        "all positional",
        "keyword-only given",
        "by keyword",
        "extra keywords",
        "a later one given by keyword",
        "an earlier one given by keyword",
    ],
)
def test_recorded_input_holds_every_argument_with_the_defaults_filled_in(
    fn: object, args: tuple[object, ...], kwargs: dict[str, object], recorded: dict[str, object]
) -> None:
    traced = wrap(fn)

    with capture_traces() as handler:
        traced(*args, **kwargs)  # type: ignore[operator]

    (span,) = handler.spans
    assert span.input == recorded
    assert list(span.input) == list(recorded)  # type: ignore[arg-type]


def test_input_is_recorded_as_it_was_when_the_call_started() -> None:
    @wrap
    def consume(items: list[int]) -> int:
        items.append(4)
        return len(items)

    with capture_traces() as handler:
        consume([1, 2, 3])

    (span,) = handler.spans
    assert span.input == {"items": [1, 2, 3]}


def _runtime_with_limits(monkeypatch: pytest.MonkeyPatch, limits: SpanLimits) -> None:
    provider = TracerProvider(span_limits=limits)
    processor = ScopeSpanProcessor(config.settings().shutdown_timeout_millis)
    provider.add_span_processor(processor)
    monkeypatch.setattr(config, "RUNTIME", Runtime(config.settings(), provider, processor, True))


def test_a_span_attribute_length_limit_cuts_the_recorded_input_and_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _runtime_with_limits(monkeypatch, SpanLimits(max_span_attribute_length=8))

    @wrap
    def shout(text: str) -> str:
        return text.upper()

    with capture_traces() as handler:
        shout("a long question")

    (raw,) = handler.raw_spans
    assert raw.attributes is not None
    assert raw.attributes[conv.INPUT_VALUE] == '{"text":'
    assert raw.attributes[conv.OUTPUT_VALUE] == '"A LONG '


def test_a_span_attribute_count_limit_keeps_the_newest_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _runtime_with_limits(monkeypatch, SpanLimits(max_span_attributes=2))

    @wrap
    def shout(text: str) -> str:
        return text.upper()

    with capture_traces() as handler:
        shout("q")

    (raw,) = handler.raw_spans
    assert raw.attributes is not None
    assert dict(raw.attributes) == {conv.OUTPUT_VALUE: '"Q"', conv.OUTPUT_MIME_TYPE: conv.MIME_JSON}
    assert raw.dropped_attributes == 3


def test_attributes_the_function_puts_on_its_own_span_are_kept_with_the_recorded_ones() -> None:
    @wrap
    def tagged(text: str) -> str:
        otel_trace.get_current_span().set_attribute("app.tag", 7)
        return text

    with capture_traces() as handler:
        tagged("q")

    (raw,) = handler.raw_spans
    assert raw.attributes is not None
    assert list(raw.attributes) == [
        "app.tag",
        conv.SPAN_KIND,
        conv.INPUT_VALUE,
        conv.INPUT_MIME_TYPE,
        conv.OUTPUT_VALUE,
        conv.OUTPUT_MIME_TYPE,
    ]
    assert raw.attributes["app.tag"] == 7


def test_a_span_the_function_ended_itself_gets_no_attributes_afterwards() -> None:
    @wrap
    def ends_its_span(text: str) -> str:
        otel_trace.get_current_span().end()
        return text

    with capture_traces() as handler:
        ends_its_span("q")

    (raw,) = handler.raw_spans
    assert raw.attributes is not None
    assert dict(raw.attributes) == {}


def test_secret_parameters_and_secret_values_are_redacted_in_the_recorded_input() -> None:
    @wrap
    def connect(user: str, password: str, url: str = "postgresql://app:pw@db/x") -> None:
        return None

    with capture_traces() as handler:
        connect("ada", "hunter2")
        connect("ada", "hunter2", "https://example.org")

    first, second = (span.input for span in handler.spans)
    assert first == {
        "user": "ada",
        "password": "[REDACTED]",
        "url": "postgresql://app:[REDACTED]@db/x",
    }
    assert second == {"user": "ada", "password": "[REDACTED]", "url": "https://example.org"}


def test_a_new_codec_decides_afresh_which_parameters_are_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @wrap
    def lookup(customer: str) -> None:
        return None

    with capture_traces() as handler:
        lookup("ada")
        rt = config.runtime()
        monkeypatch.setattr(rt, "codec", Codec(redact_keys=frozenset({"customer"})))
        lookup("ada")

    assert [span.input for span in handler.spans] == [
        {"customer": "ada"},
        {"customer": "[REDACTED]"},
    ]


class _Service:
    def ask(self, question: object, k: object = 3, *, model: object = "m") -> None:
        return None

    @classmethod
    def make(cls, spec: object) -> None:
        return None


@pytest.mark.parametrize(
    "value",
    [
        "What is the capital of France?",
        "café ☕",
        'quote " backslash \\ newline \n tab \t bell \x07',
        "Bearer abc.def",
        "see postgresql://app:pw@db/x",
        "x" * 3_000,
        0,
        -(2**53),
        2**80,
        True,
        None,
        0.1,
        float("inf"),
        [1, "two"],
        {"password": "hunter2"},
    ],
    ids=lambda value: type(value).__name__ + ":" + repr(value)[:20],
)
def test_recorded_input_text_is_the_codec_text_of_the_bound_arguments(value: object) -> None:
    @wrap
    def answer(question: object, k: object = 3) -> None:
        return None

    service = _Service()
    traced_ask = wrap(_Service.ask)
    traced_make = wrap(_Service.make.__func__)  # type: ignore[attr-defined]
    codec = config.runtime().codec

    with capture_traces() as handler:
        answer(value)
        answer(value, value)
        traced_ask(service, value)
        traced_make(_Service, value)

    texts = [raw.attributes[conv.INPUT_VALUE] for raw in handler.raw_spans]  # type: ignore[index]
    assert texts == [
        codec.encode_text({"question": value, "k": 3}),
        codec.encode_text({"question": value, "k": value}),
        codec.encode_text({"question": value, "k": 3, "model": "m"}),
        codec.encode_text({"spec": value}),
    ]
