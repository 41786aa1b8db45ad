"""Capture overhead: idle wrap() and @wrap, large values idle and captured, the codec's fast
path, @wrap under capture, memory per span, import time.

Run: ``.venv/bin/python bench/bench_capture.py``. Every figure is a ratio to a baseline
measured in the same run, so a noisy machine shifts both sides alike.
"""

from __future__ import annotations

import functools
import gc
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_per_call, interleaved_best, median, parser, report

MB = 1_000_000


def _cpu_rounds(
    sides: dict[str, Callable[[], object]], number: int, rounds: int
) -> dict[str, list[float]]:
    """Seconds of CPU per call of each side, round by round, the sides in alternation.

    CPU time of the process, not the wall clock: on a machine shared with other work, a
    round preempted by another process would count that process's time against whichever
    side it fell on.
    """
    samples: dict[str, list[float]] = {label: [] for label in sides}
    for _ in range(rounds):
        for label, fn in sides.items():
            started = time.process_time()
            for _ in range(number):
                fn()
            samples[label].append((time.process_time() - started) / number)
    return samples


def _report_paired(
    label: str, ours: list[float], base: list[float], unit: str, scale: float, goal: float
) -> bool:
    """Report the median of the round-by-round ratios (each round times both sides within
    a few milliseconds, so both see the same load), with the medians of each side."""
    ratios = sorted(o / b for o, b in zip(ours, base, strict=True))
    ratio = median(ratios)
    print(
        f"  ({len(ratios)} interleaved rounds, CPU time: ratio round by round "
        f"{ratios[0]:.2f}-{ratios[-1]:.2f}x, median {ratio:.2f}x; best of each side "
        f"{min(ours) / min(base):.2f}x)",
        flush=True,
    )
    # report() prints the ratio of the two figures it is given: the median ratio, with the
    # ours side scaled from the baseline's median so that the line reads consistently.
    return report(label, ratio * median(base) * scale, median(base) * scale, unit, goal)


_NO_VALUE = object()


def bench_idle_wrap() -> bool:
    from evaltrace import wrap
    from evaltrace.capture import context

    # wrap's own signature: an optional positional value, optional purpose= and name=, and
    # its other options taken as **options.
    def same_signature(
        data: object = _NO_VALUE, /, *, purpose: Any = None, name: Any = None, **options: Any
    ) -> object:
        return data

    def keywords_only(data: object, *, purpose: str, name: str) -> object:
        return data

    value = {"q": "hello"}
    assert not context.armed, "run first: nothing may have observed wrap values yet"
    ok = True
    for purpose in ("output", "entry"):
        samples = _cpu_rounds(
            {
                "wrap": lambda p=purpose: wrap(value, purpose=p, name="answer"),  # type: ignore[misc]
                "same": lambda p=purpose: same_signature(value, purpose=p, name="answer"),  # type: ignore[misc]
                "keywords": lambda p=purpose: keywords_only(value, purpose=p, name="answer"),  # type: ignore[misc]
            },
            10_000,
            101,
        )
        ok &= _report_paired(
            f"idle wrap(value, purpose={purpose!r}, name) vs a function of its signature",
            samples["wrap"],
            samples["same"],
            "ns",
            1e9,
            1.5,
        )
        ratios = sorted(o / b for o, b in zip(samples["wrap"], samples["keywords"], strict=True))
        print(
            f"  (vs a function with required keyword-only purpose= and name=, no defaults, "
            f"no **options: median {median(ratios):.2f}x, {ratios[0]:.2f}-{ratios[-1]:.2f}x)",
            flush=True,
        )
    return ok


def _calls_per_round(fn: Callable[[], object], seconds: float = 0.05) -> int:
    """How many calls of ``fn`` fill about ``seconds`` (at least one)."""
    started = time.perf_counter()
    fn()
    once = time.perf_counter() - started
    return max(1, min(10_000, int(seconds / max(once, 1e-9))))


def _echo() -> Callable[[object], object]:
    from evaltrace import wrap

    @wrap
    def echo(value: object) -> object:
        return value

    return echo


def _assert_idle() -> None:
    from evaltrace.capture import config
    from evaltrace.capture.context import _CURRENT

    assert _CURRENT.get() is None and not config.runtime().spans_leave_process


def _versus(
    label: str, ours: Callable[[], object], base: Callable[[], object], goal: float
) -> bool:
    """Time both sides in alternation, each with as many calls per round as fill ~50 ms."""
    ours_number, base_number = _calls_per_round(ours), _calls_per_round(base)
    ours_s = base_s = float("inf")
    for _ in range(5):
        ours_s = min(ours_s, best_per_call(ours, ours_number, repeat=1))
        base_s = min(base_s, best_per_call(base, base_number, repeat=1))
    return report(label, ours_s * 1e6, base_s * 1e6, "us", goal)


def _big_dict() -> dict[str, int]:
    return {f"key{i}": i for i in range(200_000)}


def bench_idle_decorated_call() -> bool:
    from opentelemetry.trace import NoOpTracer

    echo = _echo()
    tracer = NoOpTracer()

    def plain(value: object) -> object:
        return value

    def under_noop_span(value: object) -> object:
        with tracer.start_as_current_span("echo"):
            return plain(value)

    value = "y" * 100
    _assert_idle()
    return _versus(
        "idle @wrap call vs the same call in a no-op tracer span",
        lambda: echo(value),
        lambda: under_noop_span(value),
        1.5,
    )


def _passthrough(fn: Callable[..., object]) -> Callable[..., object]:
    """A minimal pure-Python pass-through decorator: the floor of any decorator."""

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> object:
        return fn(*args, **kwargs)

    return inner


def bench_idle_decorator_floor() -> bool:
    echo = _echo()
    floor = _passthrough(echo.__wrapped__)  # type: ignore[attr-defined]
    value = "y" * 100
    _assert_idle()
    ours, base = interleaved_best(lambda: echo(value), lambda: floor(value), 100_000)
    return report(
        "idle @wrap vs a pass-through decorator (*args, **kwargs)",
        ours * 1e9,
        base * 1e9,
        "ns",
        1.3,
    )


def explain_idle_decorator() -> None:
    """What bounds idle @wrap: the same function under each kind of wrapper."""
    from evaltrace import wrap

    def echo(value: object) -> object:
        return value

    @wrap
    def echo_any(*values: object) -> object:  # *args: the generic wrapper
        return values[0]

    candidates: dict[str, Callable[[], object]] = {}
    value = "y" * 100
    candidates["the function itself"] = lambda: echo(value)
    floor = _passthrough(echo)
    candidates["pass-through decorator, (*args, **kwargs)"] = lambda: floor(value)
    traced = wrap(echo)
    candidates["@wrap: a wrapper of the function's own parameters"] = lambda: traced(value)
    candidates["@wrap of a function taking *args: the generic wrapper"] = lambda: echo_any(value)
    try:
        import wrapt
    except ImportError:
        pass
    else:
        unseen = [True]

        def relay(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> object:
            if unseen[0]:
                return wrapped(*args, **kwargs)
            return None

        wrapped = wrapt.FunctionWrapper(echo, relay)
        candidates["wrapt.FunctionWrapper (C) calling a Python relay"] = lambda: wrapped(value)
    _assert_idle()
    _print_parts(
        "what bounds idle @wrap (ns per call):", _best_of(candidates, 20_000, 20), "ns", 1e9
    )


def bench_idle_large_string() -> bool:
    echo = _echo()
    big, small = "x" * (10 * MB), "y" * 100
    _assert_idle()
    return _versus(
        "idle @wrap(10 MB str) vs idle @wrap(100 B str)",
        lambda: echo(big),
        lambda: echo(small),
        1.5,
    )


def bench_idle_large_dict() -> bool:
    echo = _echo()
    big, small = _big_dict(), {f"key{i}": i for i in range(10)}
    _assert_idle()
    return _versus(
        "idle @wrap(200k-key dict) vs idle @wrap(10-key dict)",
        lambda: echo(big),
        lambda: echo(small),
        1.5,
    )


def _two_values_at_the_limit(value: object) -> Callable[[], object]:
    """The floor of recording input and output at the size limit: two ``json.dumps``."""

    def write() -> object:
        return (
            json.dumps(value, ensure_ascii=False, separators=(",", ":")),
            json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        )

    return write


def _assert_truncated_on_the_span(handler: Any) -> None:
    """Check that the timed calls really recorded both values, as truncation markers."""
    attributes = handler.raw_spans[-1].attributes
    for key in ("input.value", "output.value"):
        assert json.loads(attributes[key])["__evaltrace_truncated__"] is True
    handler.clear()


def bench_captured_large_string() -> bool:
    from evaltrace import capture_traces
    from evaltrace.capture import config

    echo = _echo()
    limit = config.runtime().settings.max_value_bytes
    big = "x" * (10 * MB)
    with capture_traces() as handler:
        ok = _versus(
            "captured @wrap(10 MB str) vs 2 json.dumps of a limit-sized str",
            lambda: echo(big),
            _two_values_at_the_limit("x" * limit),
            4.0,
        )
        _assert_truncated_on_the_span(handler)
    return ok


def bench_captured_large_dict() -> bool:
    from evaltrace import capture_traces
    from evaltrace.capture import config

    echo = _echo()
    limit = config.runtime().settings.max_value_bytes
    big = _big_dict()
    at_limit: dict[str, int] = {}
    size = 2
    for key, value in big.items():
        size += len(json.dumps(key)) + len(json.dumps(value)) + 2
        if size > limit:
            break
        at_limit[key] = value
    with capture_traces() as handler:
        ok = _versus(
            "captured @wrap(200k-key dict) vs 2 json.dumps of a limit-sized dict",
            lambda: echo(big),
            _two_values_at_the_limit(at_limit),
            4.0,
        )
        _assert_truncated_on_the_span(handler)
    return ok


def bench_encode_flat_arguments() -> bool:
    from evaltrace.capture.codec import Codec

    codec = Codec()
    arguments = {"question": "What is the capital of France?", "k": 3, "model": "gpt-4o"}

    def dumps() -> str:
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))

    assert codec.encode_text(arguments) == dumps()
    ours, base = interleaved_best(lambda: codec.encode_text(arguments), dumps, 20_000)
    return report(
        "codec text of flat arguments (redaction checks) vs json.dumps",
        ours * 1e9,
        base * 1e9,
        "ns",
        1.0,
    )


CODEC_BEFORE = "2a1c12c"
"""The last commit whose codec walked every value and wrote it with ``json``."""


def _codec_before() -> Any:
    """The codec module as it was at :data:`CODEC_BEFORE`, read with ``git show``."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "show", f"{CODEC_BEFORE}:src/evaltrace/capture/serialize.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="evaltrace-bench-"))
    path = folder / "_codec_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("_codec_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


class Citation(BaseModel):
    """A pydantic model inside the nested argument."""

    source: str
    page: int
    score: float
    quoted_at: datetime
    tags: list[str]


def _nested_argument() -> dict[str, Any]:
    """3 levels, 50 keys at the top, strings, numbers, bools, None, lists and a model."""
    leaf = {"id": 7, "label": "invoice", "amount": 12.5, "paid": False}
    middle = {f"part{i}": leaf if i % 2 else ["a", 2, 3.0, None] for i in range(5)}
    kinds: list[Any] = [
        "What did the customer ask about their last order?",
        123_456,
        0.25,
        True,
        None,
        middle,
        ["retrieved", "documents", 3],
    ]
    value: dict[str, Any] = {f"field_{i}": kinds[i % len(kinds)] for i in range(49)}
    value["citation"] = Citation(
        source="faq.md", page=3, score=0.91, quoted_at=datetime(2024, 5, 1), tags=["billing"]
    )
    return value


def bench_nested_argument_codec() -> bool:
    from evaltrace import capture_traces
    from evaltrace.capture import config

    echo = _echo()
    runtime = config.runtime()
    today = runtime.codec
    old = _codec_before().Codec

    class Before(old):  # type: ignore[misc, valid-type]
        """The old codec, answering what @wrap asks of today's: no key is known plain, so
        every input goes through its encode_text, as it did then."""

        def plain_keys(self, keys: object) -> bool:
            return False

    before = Before(
        max_bytes=today.max_bytes, redact_keys=today.redact_keys, max_depth=today.max_depth
    )
    value = _nested_argument()
    assert json.loads(today.encode_text(value)) == json.loads(before.encode_text(value))

    def call_with(codec: Any) -> Callable[[], object]:
        def call() -> object:
            runtime.codec = codec
            return echo(value)

        return call

    try:
        with capture_traces():
            ok = _versus(
                "captured @wrap(nested dict + model): codec today vs before",
                call_with(today),
                call_with(before),
                1.0,
            )
            ours, base = interleaved_best(
                lambda: today.encode_text(value), lambda: before.encode_text(value), 500
            )
            ok = (
                report(
                    "codec text of the nested dict: today vs before",
                    ours * 1e6,
                    base * 1e6,
                    "us",
                    1.0,
                )
                and ok
            )
    finally:
        runtime.codec = today
    return ok


def bench_decorated_call() -> bool:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from evaltrace import capture_traces, wrap

    @wrap
    def answer(question: str, k: int = 3) -> str:
        return "Paris"

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")

    def raw_answer(question: str, k: int = 3) -> str:
        with tracer.start_as_current_span("answer") as span:
            span.set_attribute("input.value", question)
            result = "Paris"
            span.set_attribute("output.value", result)
            return result

    # Each round keeps its spans until the next round of the same side starts, as each side
    # would in a test; both then start from an empty store, so neither pays for a store the
    # other filled.
    number, rounds = 200, 101
    samples: dict[str, list[float]] = {"ours": [], "raw": []}
    with capture_traces() as handler:
        for _ in range(rounds):
            for label, call in (("ours", answer), ("raw", raw_answer)):
                handler.clear()
                exporter.clear()
                started = time.process_time()
                for _ in range(number):
                    call("What is the capital of France?")
                samples[label].append((time.process_time() - started) / number)
                kept = len(handler) if label == "ours" else len(exporter.get_finished_spans())
                assert kept == number, f"{label}: {kept} spans kept of {number}"
        handler.clear()
        answer("What is the capital of France?")
        (span,) = handler.raw_spans
        assert span.attributes is not None and len(span.attributes) == 5
    exporter.clear()
    return _report_paired(
        "@wrap call under capture_traces vs raw OTel span + 2 attrs",
        samples["ours"],
        samples["raw"],
        "us",
        1e6,
        1.0,
    )


def _best_of(
    candidates: dict[str, Callable[[], object]], number: int, rounds: int
) -> dict[str, float]:
    """Best seconds of CPU per call of each candidate, all timed in alternation."""
    return {label: min(times) for label, times in _cpu_rounds(candidates, number, rounds).items()}


def _print_parts(title: str, parts: dict[str, float], unit: str, scale: float) -> None:
    print(f"  {title}", flush=True)
    for label, seconds in parts.items():
        print(f"    {label:<66} {seconds * scale:8.2f} {unit}", flush=True)


def explain_idle_wrap() -> None:
    """What bounds idle wrap(): its call shape with each of its checks added in turn."""
    from evaltrace import wrap

    idle = {"input": set(), "output": {"answer"}, "state": set()}
    value = {"q": "hello"}

    def plain(data: object, *, purpose: str, name: str) -> object:
        return data

    def options(
        data: object = None, /, *, purpose: Any = None, name: Any = None, **more: Any
    ) -> object:
        return data

    def checked(
        data: object = None, /, *, purpose: Any = None, name: Any = None, **more: Any
    ) -> object:
        try:
            if name in idle[purpose] and not more:
                return data
        except (KeyError, TypeError):
            pass
        return None

    def callable_too(
        data: object = None, /, *, purpose: Any = None, name: Any = None, **more: Any
    ) -> object:
        try:
            if name in idle[purpose] and not more and not callable(data):
                return data
        except (KeyError, TypeError):
            pass
        return None

    parts = _best_of(
        {
            "plain function, same call": lambda: plain(value, purpose="output", name="answer"),
            "+ optional keywords taken as **options": lambda: options(
                value, purpose="output", name="answer"
            ),
            "+ name known under its purpose, no other option": lambda: checked(
                value, purpose="output", name="answer"
            ),
            "+ callable(data) (a callable gets a recording stand-in)": lambda: callable_too(
                value, purpose="output", name="answer"
            ),
            "evaltrace.wrap (the same, plus its sentinel default)": lambda: wrap(
                value, purpose="output", name="answer"
            ),
        },
        20_000,
        30,
    )
    _print_parts("what bounds idle wrap (ns per call):", parts, "ns", 1e9)


def explain_decorated_call() -> None:
    """What bounds captured @wrap: the span machinery each side uses, and what ours adds."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from evaltrace import capture_traces
    from evaltrace.capture import config

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    raw = provider.get_tracer("bench")
    runtime = config.runtime()
    ours = runtime.tracer
    codec = runtime.codec
    arguments = {"question": "What is the capital of France?", "k": 3}
    five = {
        "openinference.span.kind": "CHAIN",
        "input.value": codec.encode_text(arguments),
        "input.mime_type": "application/json",
        "output.value": '"Paris"',
        "output.mime_type": "application/json",
    }

    def raw_span() -> None:
        raw.start_span("answer").end()

    def raw_with_statement() -> None:
        with raw.start_as_current_span("answer"):
            pass

    def raw_two_attributes() -> None:
        with raw.start_as_current_span("answer") as span:
            span.set_attribute("input.value", "What is the capital of France?")
            span.set_attribute("output.value", "Paris")

    def our_span() -> None:
        ours.start_span("answer").end()

    def our_span_attached() -> None:
        span = ours.start_span("answer")
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        otel_context.detach(token)
        span.end()

    finish = sys.modules["evaltrace.capture.wrap"]._finish

    def our_five_attributes() -> None:
        span = ours.start_span("answer")
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        otel_context.detach(token)
        finish(span, five, strings=True)  # as @wrap ends its span

    def our_five_set_attributes() -> None:
        span = ours.start_span("answer")
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        otel_context.detach(token)
        span.set_attributes(five)
        span.end()

    prefixes = codec.field_prefixes(list(arguments))
    assert prefixes is not None

    def encode_both() -> None:
        codec.encode_fields(prefixes, tuple(arguments.values()))
        codec.encode_text("Paris")

    with capture_traces() as handler:
        parts = _best_of(
            {
                "raw: span, SimpleSpanProcessor into InMemorySpanExporter": raw_span,
                "raw: + start_as_current_span's context managers": raw_with_statement,
                "raw: + 2 set_attribute (the whole baseline)": raw_two_attributes,
                "ours: span, ScopeSpanProcessor into the capture": our_span,
                "ours: + context attached and detached": our_span_attached,
                "ours: + 5 attributes stored as the span ends (what @wrap does)": (
                    our_five_attributes
                ),
                "ours: + the same 5 through span.set_attributes": our_five_set_attributes,
                "ours alone: both values encoded (arguments from their fields)": encode_both,
            },
            1_000,
            20,
        )
        handler.clear()
    exporter.clear()
    _print_parts("what bounds captured @wrap (us per call):", parts, "us", 1e6)


def bench_memory_per_span() -> bool:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from evaltrace import capture_traces, wrap

    @wrap
    def answer(question: str) -> str:
        return "Paris"

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    n = 20_000

    def measure(work: object) -> float:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        keep = work()  # type: ignore[operator]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del keep
        return (after - before) / n

    def ours() -> object:
        with capture_traces() as handler:
            for _ in range(n):
                answer("What is the capital of France?")
        return handler

    def raw() -> object:
        for _ in range(n):
            with tracer.start_as_current_span("answer") as span:
                span.set_attribute("input.value", '{"question":"What is the capital of France?"}')
                span.set_attribute("output.value", '"Paris"')
        return exporter

    ours_bytes = median([measure(ours) for _ in range(3)])
    exporter.clear()
    raw_bytes = median([measure(raw) for _ in range(1)])
    return report(
        "memory per captured span vs InMemorySpanExporter span", ours_bytes, raw_bytes, "B", 1.5
    )


def _import_env(cache: str) -> dict[str, str]:
    """The environment of the import-time interpreters: bytecode cached, in a private folder.

    An installed evaltrace has its bytecode compiled (pip compiles it on install), as the
    baseline's packages do. A source checkout run with ``PYTHONDONTWRITEBYTECODE=1`` has none,
    so every import would compile evaltrace's sources while the baseline's bytecode is
    cached. Both sides read bytecode from one private cache, filled by a first, unmeasured
    import of each statement.
    """
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _import_us(statement: str, env: dict[str, str]) -> float:
    """Microseconds spent importing what ``statement`` imports beyond interpreter startup."""

    def top_level(code: str) -> dict[str, int]:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stderr
        entries: dict[str, int] = {}
        for line in out.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
            if not line.split("|")[2].startswith("  "):
                entries[name] = int(cumulative)
        return entries

    startup = set(top_level("pass"))
    return float(sum(us for name, us in top_level(statement).items() if name not in startup))


def bench_import_time() -> bool:
    baseline = "import opentelemetry.sdk.trace, pydantic, anyio"
    statements = ["import evaltrace", "from evaltrace import wrap, capture_traces"]
    times: dict[str, list[float]] = {statement: [] for statement in [baseline, *statements]}
    with tempfile.TemporaryDirectory(prefix="evaltrace-bench-pycache-") as cache:
        env = _import_env(cache)
        for statement in times:
            _import_us(statement, env)  # fills the bytecode cache
        for _ in range(9):  # interleaved, so a change in the machine's load shifts every side
            for statement, runs in times.items():
                runs.append(_import_us(statement, env))
    base = median(times[baseline]) / 1000
    results = [
        report(f"{statement} vs {baseline}", median(times[statement]) / 1000, base, "ms", 1.3)
        for statement in statements
    ]
    return all(results)


def main() -> int:
    results = [bench_idle_wrap()]
    explain_idle_wrap()  # before anything opens a capture, which ends the idle value hook
    results += [
        bench_idle_decorator_floor(),
        bench_idle_decorated_call(),
        bench_idle_large_string(),
        bench_idle_large_dict(),
        bench_captured_large_string(),
        bench_captured_large_dict(),
        bench_encode_flat_arguments(),
        bench_nested_argument_codec(),
        bench_decorated_call(),
        bench_memory_per_span(),
        bench_import_time(),
    ]
    explain_idle_decorator()
    explain_decorated_call()
    return 0 if all(results) else 1


if __name__ == "__main__":
    parser(__doc__).parse_args()
    sys.exit(main())
