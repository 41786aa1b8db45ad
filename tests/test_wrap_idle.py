"""Bounded work when nothing records: @wrap and wrap(value) encode only what someone sees."""

from __future__ import annotations

import inspect
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider

from evaltrace import capture_traces, wrap
from evaltrace.capture import config, context, eval_inputs, propagate
from evaltrace.capture.config import Runtime, Settings
from evaltrace.capture.listeners import LISTENERS
from evaltrace.capture.processor import ScopeSpanProcessor
from evaltrace.trace import ObserveSpan


class Watched:
    """An argument whose every conversion to text is counted."""

    def __init__(self) -> None:
        self.conversions = 0

    def __repr__(self) -> str:
        self.conversions += 1
        return "Watched()"


@wrap
def echo(value: object) -> object:
    return value


@wrap
def numbers(value: object) -> Iterator[object]:
    yield value
    yield value


@wrap
async def echo_async(value: object) -> object:
    return value


def _runtime(settings: Settings) -> Runtime:
    """A runtime as evaltrace builds it in an app that configured nothing."""
    provider = TracerProvider()
    processor = ScopeSpanProcessor(config.settings().shutdown_timeout_millis)
    provider.add_span_processor(processor)
    return Runtime(settings, provider, processor, owns_provider=True)


@pytest.fixture
def idle_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """No exporter and no handler: spans leave nowhere; captures are opened by the test."""
    rt = _runtime(config.settings())
    monkeypatch.setattr(config, "RUNTIME", rt)
    monkeypatch.setattr(LISTENERS, "current", ())
    yield rt
    rt.provider.shutdown()


@pytest.mark.usefixtures("idle_process")
def test_idle_decorated_call_never_encodes_its_arguments_or_result() -> None:
    watched = Watched()

    assert echo(watched) is watched
    assert list(numbers(watched)) == [watched, watched]

    assert watched.conversions == 0


@pytest.mark.anyio
@pytest.mark.usefixtures("idle_process")
async def test_idle_async_decorated_call_never_encodes_its_arguments_or_result() -> None:
    watched = Watched()

    assert await echo_async(watched) is watched

    assert watched.conversions == 0


@pytest.mark.usefixtures("idle_process")
def test_idle_decorated_call_opens_no_span_that_nobody_would_see() -> None:
    @wrap
    def current_span() -> otel_trace.Span:
        return otel_trace.get_current_span()

    assert not current_span().get_span_context().is_valid


@pytest.mark.usefixtures("idle_process")
def test_decorated_call_under_a_capture_records_its_arguments() -> None:
    watched = Watched()

    with capture_traces() as handler:
        echo(watched)

    assert watched.conversions == 2  # input and output
    (span,) = handler.spans
    assert span.input == {"value": "Watched()"}


@pytest.mark.usefixtures("idle_process")
def test_capture_opened_inside_an_idle_decorated_call_captures_the_calls_it_makes() -> None:
    @wrap
    def main() -> list[ObserveSpan]:
        with capture_traces() as handler:
            echo(1)
        return handler.spans  # type: ignore[return-value]

    (span,) = main()
    assert (span.name, span.input, span.parent_span_id) == ("echo", {"value": 1}, None)


def test_thread_without_the_context_is_counted_but_not_encoded_while_a_capture_is_open(
    idle_process: Runtime,
) -> None:
    watched = Watched()
    counted_before = idle_process.processor.unattributed_spans
    with capture_traces() as handler:
        echo("inside")
        thread = threading.Thread(target=echo, args=(watched,))
        thread.start()
        thread.join()

    assert [span.input for span in handler.spans] == [{"value": "inside"}]
    assert idle_process.processor.unattributed_spans - counted_before == 1
    assert watched.conversions == 0


def test_thread_without_the_context_is_counted_before_the_capture_records_any_span(
    idle_process: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    # No span of the capture exists yet when the thread runs: it is still reported.
    watched = Watched()
    counted_before = idle_process.processor.unattributed_spans
    with caplog.at_level(logging.WARNING, logger="evaltrace"):
        with capture_traces() as handler:
            thread = threading.Thread(target=echo, args=(watched,))
            thread.start()
            thread.join()

    assert handler.spans == []
    assert idle_process.processor.unattributed_spans - counted_before == 1
    assert watched.conversions == 0
    # The process warns once; either this test or an earlier one in the process did.
    assert idle_process.processor.warned_unattributed


@pytest.mark.usefixtures("idle_process")
def test_thread_carrying_only_the_otel_context_is_captured_with_its_input() -> None:
    @wrap
    def fan_out() -> None:
        context = otel_context.get_current()

        def work() -> None:
            token = otel_context.attach(context)
            try:
                echo({"q": 1})
            finally:
                otel_context.detach(token)

        thread = threading.Thread(target=work)  # no evaltrace.propagate: the scope is not carried
        thread.start()
        thread.join()

    with capture_traces() as handler:
        fan_out()

    by_name = {span.name: span for span in handler.spans}
    assert by_name["echo"].input == {"value": {"q": 1}}
    assert by_name["echo"].parent_span_id == by_name["fan_out"].span_id


@pytest.mark.usefixtures("idle_process")
def test_wrap_value_in_an_inputs_scope_without_a_capture_is_not_encoded() -> None:
    watched = Watched()

    with eval_inputs({"question": "injected"}):
        assert wrap("live", purpose="input", name="question") == "injected"
        assert wrap(watched, purpose="output", name="answer") is watched

    assert watched.conversions == 0


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """A process whose values are limited to 1,000 bytes on spans."""
    rt = _runtime(Settings(max_value_bytes=1_000))
    monkeypatch.setattr(config, "RUNTIME", rt)
    yield rt
    rt.provider.shutdown()


@pytest.mark.usefixtures("small_limit")
def test_large_argument_under_a_capture_is_encoded_only_up_to_the_limit() -> None:
    watched = Watched()
    items = [watched] * 100_000

    with capture_traces() as handler:
        assert echo(items) is items

    (span,) = handler.spans
    assert span.input["__evaltrace_truncated__"] is True  # type: ignore[index]
    assert watched.conversions <= 2 * 1_000


def test_idle_wrap_and_decorated_calls_never_import_the_codec_writer() -> None:
    code = (
        "import sys\n"
        "from evaltrace import wrap\n"
        "@wrap\n"
        "def echo(value): return value\n"
        "echo({'q': [1, 2]})\n"
        "wrap({'q': [1, 2]}, purpose='output', name='answer')\n"
        "wrap(lambda: {'q': 1}, purpose='input', name='fetch')()\n"
        "print(sorted(m for m in ('pydantic', 'pydantic_core') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# The idle value hook: a known name returns at once, yet every bad call is still an error


@pytest.fixture
def unarmed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process in which nothing has observed wrap values yet (no capture, no exporter)."""
    monkeypatch.setattr(context, "armed", False)
    for names in context.IDLE_NAMES.values():
        names.clear()
    yield
    for names in context.IDLE_NAMES.values():
        names.clear()


@pytest.mark.usefixtures("unarmed")
def test_idle_value_hook_returns_the_value_for_a_name_it_has_seen() -> None:
    payload = {"q": [1, 2]}

    assert wrap(payload, purpose="output", name="answer") is payload
    assert wrap(payload, purpose="output", name="answer") is payload


@pytest.mark.usefixtures("unarmed")
@pytest.mark.parametrize("purpose", ["input", "output", "state", "entry"])
def test_idle_value_hook_answers_a_seen_name_of_every_purpose_without_the_checks(
    purpose: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = {"q": [1, 2]}
    assert wrap(payload, purpose=purpose, name="answer") is payload  # type: ignore[call-overload]

    def checked(*args: object) -> object:
        raise AssertionError(f"purpose={purpose!r}: a seen name went through the checks again")

    monkeypatch.setattr(sys.modules["evaltrace.capture.wrap"], "_wrap", checked)
    assert wrap(payload, purpose=purpose, name="answer") is payload  # type: ignore[call-overload]


@pytest.mark.usefixtures("unarmed")
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: wrap(purpose="output", name="answer"), TypeError, "needs the value"),
        (lambda: wrap(1, purpose="outptu", name="answer"), ValueError, "purpose must be"),
        (lambda: wrap(1, purpose=["output"], name="answer"), ValueError, "purpose must be"),
        (lambda: wrap(1, purpose="output", name=["answer"]), ValueError, "non-empty name="),
        (lambda: wrap(1, purpose="output", name="answer", kind="llm"), TypeError, "kind="),
        (
            lambda: wrap(1, purpose="output", name="answer", descripton="typo"),
            TypeError,
            "unexpected keyword argument 'descripton'",
        ),
    ],
    ids=["no value", "unknown purpose", "unhashable purpose", "unhashable name", "kind", "typo"],
)
def test_idle_value_hook_still_rejects_a_bad_call_after_a_good_one(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    wrap(1, purpose="output", name="answer")

    with pytest.raises(error, match=message):
        call()


@pytest.mark.usefixtures("unarmed")
def test_idle_value_hook_still_wraps_a_callable_under_a_name_it_has_seen() -> None:
    wrap({"id": 1}, purpose="input", name="order")

    fetch = wrap(lambda: {"id": 1}, purpose="input", name="order")

    with eval_inputs({"order": "injected"}):
        assert fetch() == "injected"


@pytest.mark.usefixtures("unarmed")
def test_a_name_seen_while_idle_is_recorded_once_a_capture_is_open() -> None:
    wrap("idle", purpose="output", name="answer")

    with capture_traces() as handler:
        wrap("recorded", purpose="output", name="answer")

    assert [record.value for record in handler.named_values] == ["recorded"]


# A capture that has closed: nothing is encoded for it


def _run_past_the_capture(work: Callable[[], None], outer_open: bool = False) -> list[object]:
    """Start a traced task inside two nested captures; it runs ``work`` once the inner one
    (and, unless ``outer_open``, the outer one too) has closed.

    Returns:
        The values the outer capture received.
    """
    started, release = threading.Event(), threading.Event()

    @wrap
    def task() -> None:
        started.set()
        release.wait()
        work()

    with capture_traces() as outer:
        with capture_traces():
            thread = threading.Thread(target=propagate(task))
            thread.start()
            started.wait()
        if outer_open:
            release.set()
            thread.join()
    release.set()
    thread.join()
    return [record.value for record in outer.named_values]


@pytest.mark.usefixtures("idle_process")
def test_a_task_that_outlived_its_capture_encodes_nothing_it_records() -> None:
    watched = Watched()
    fetch = wrap(lambda: watched, purpose="input", name="watched")

    _run_past_the_capture(fetch)

    assert watched.conversions == 0


@pytest.mark.usefixtures("idle_process")
def test_a_task_whose_inner_capture_closed_still_records_into_the_open_outer_one() -> None:
    fetch = wrap(lambda: {"id": 7}, purpose="input", name="order")

    assert _run_past_the_capture(fetch, outer_open=True) == [{"id": 7}]


# The idle decorated call: a wrapper of the function's own parameters, one flag read


def test_a_decorated_function_is_wrapped_by_a_function_of_its_own_parameters() -> None:
    @wrap
    def answer(question: str, k: int = 3, *, model: str = "m") -> str:
        return f"{question}:{k}:{model}"

    own = inspect.signature(answer, follow_wrapped=False).parameters.values()

    assert [p.name for p in own if p.kind is not p.VAR_POSITIONAL] == ["question", "k", "model"]
    assert all(p.kind is not p.VAR_KEYWORD for p in own)
    assert inspect.signature(answer) == inspect.signature(answer.__wrapped__)  # type: ignore[attr-defined]
    assert answer("q") == "q:3:m" and answer("q", 5, model="x") == "q:5:x"


def test_a_function_taking_star_args_keeps_the_generic_wrapper() -> None:
    @wrap
    def joined(*parts: str, sep: str = "-") -> str:
        return sep.join(parts)

    assert list(inspect.signature(joined, follow_wrapped=False).parameters) == ["args", "kwargs"]
    assert joined("a", "b") == "a-b"


def test_a_call_that_does_not_fit_the_parameters_raises_as_the_function_would() -> None:
    @wrap
    def answer(question: str) -> str:
        return question

    with pytest.raises(TypeError, match=r"\.answer\(\) takes 1 positional argument but 2"):
        answer("q", "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"\.answer\(\) got an unexpected keyword argument 'k'"):
        answer("q", k=2)  # type: ignore[call-arg]
    with capture_traces() as handler, pytest.raises(TypeError, match="takes 1 positional"):
        answer("q", "extra")  # type: ignore[call-arg]
    (span,) = handler.spans
    assert span.status == "error"


def test_a_call_missing_an_argument_under_a_capture_ends_its_span_in_error() -> None:
    @wrap
    def answer(question: str, k: int = 3) -> str:
        return question

    with capture_traces() as handler, pytest.raises(TypeError, match="question"):
        answer(k=2)  # type: ignore[call-arg]

    (span,) = handler.spans
    assert span.status == "error"


def test_defaults_reach_the_function_whether_a_span_is_made_or_not() -> None:
    marker: list[int] = []

    @wrap
    def answer(question: str, seen: list[int] = marker, /, *, k: int = 3) -> tuple[object, ...]:
        return (question, seen, k)

    idle = answer("q")
    with capture_traces() as handler:
        traced = answer("q")

    assert idle == traced == ("q", marker, 3) and idle[1] is marker
    (span,) = handler.spans
    assert span.input == {"question": "q", "seen": [], "k": 3}


SPANS_UNSEEN = """\
import evaltrace
from evaltrace.capture import context
from evaltrace.trace import InstrumentationHandler, add_handler, remove_handler

seen = [context.spans_unseen]
evaltrace.init()
seen.append(context.spans_unseen)
with evaltrace.capture_traces():
    seen.append(context.spans_unseen)
    with evaltrace.capture_traces():
        seen.append(context.spans_unseen)
    seen.append(context.spans_unseen)
seen.append(context.spans_unseen)
handler = InstrumentationHandler()
add_handler(handler)
seen.append(context.spans_unseen)
remove_handler(handler)
seen.append(context.spans_unseen)
evaltrace.shutdown()
seen.append(context.spans_unseen)
print(seen)
"""


def test_spans_count_as_unseen_only_while_no_capture_exporter_or_handler_could_see_one() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SPANS_UNSEEN], capture_output=True, text=True, check=False
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(
        [False, True, False, False, False, True, False, False, False]
    )


def test_an_exporter_makes_spans_seen() -> None:
    code = (
        "import evaltrace\n"
        "from evaltrace.capture import context\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        "evaltrace.init()\n"
        "before = context.spans_unseen\n"
        "exporter = InMemorySpanExporter()\n"
        "evaltrace.init(exporters=[exporter])\n"
        "@evaltrace.wrap\n"
        "def answer(question):\n"
        "    return question\n"
        "answer('q')\n"
        "evaltrace.flush()\n"
        "print(before, context.spans_unseen, [s.name for s in exporter.get_finished_spans()])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True False ['answer']"
