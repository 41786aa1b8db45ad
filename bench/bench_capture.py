"""Capture overhead: idle wrap(), @wrap under capture, memory per span, import time.

Run: ``.venv/bin/python bench/bench_capture.py``. Every figure is a ratio to a baseline
measured in the same run, so a noisy machine shifts both sides alike.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import interleaved_best, median, report


def bench_idle_wrap() -> bool:
    from evaltrace import wrap

    def plain(data: object, *, purpose: str, name: str) -> object:
        return data

    value = {"q": "hello"}
    ours, base = interleaved_best(
        lambda: wrap(value, purpose="output", name="answer"),
        lambda: plain(value, purpose="output", name="answer"),
        100_000,
    )
    return report(
        "idle wrap(value, purpose, name) vs plain function", ours * 1e9, base * 1e9, "ns", 3.0
    )


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

    number = 2_000
    with capture_traces() as handler:
        ours, base = interleaved_best(
            lambda: answer("What is the capital of France?"),
            lambda: raw_answer("What is the capital of France?"),
            number,
        )
    assert len(handler.raw_spans) == number * 9
    exporter.clear()
    return report(
        "@wrap call under capture_traces vs raw OTel span + 2 attrs",
        ours * 1e6,
        base * 1e6,
        "us",
        1.3,
    )


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


def _import_us(statement: str) -> float:
    """Microseconds spent importing what ``statement`` imports beyond interpreter startup."""

    def top_level(code: str) -> dict[str, int]:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            check=True,
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
    ours = median([_import_us("import evaltrace") for _ in range(9)])
    base = median([_import_us("import opentelemetry.sdk.trace, pydantic, anyio") for _ in range(9)])
    return report(
        "import evaltrace vs import opentelemetry.sdk.trace, pydantic, anyio",
        ours / 1000,
        base / 1000,
        "ms",
        1.3,
    )


def main() -> int:
    results = [
        bench_idle_wrap(),
        bench_decorated_call(),
        bench_memory_per_span(),
        bench_import_time(),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
