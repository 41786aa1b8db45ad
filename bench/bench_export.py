"""Export cost: ``@wrap`` under the OTLP exporter vs without export; spans/s exported; memory
while the collector is down.

Run: ``.venv/bin/python bench/bench_export.py``. The OTLP receiver (``evaltrace.testing.
OTLPReceiver``) runs in a process of its own on 127.0.0.1, so that decoding what it receives
does not share the benchmark's GIL; it is stopped by process id at the end. Each measured app
runs in a fresh interpreter (a process has one global tracer provider), the two sides in
alternation, best of several rounds each.

In a tight loop of calls that do nothing else, export costs what the SDK's protobuf encoding
costs, in pure Python, sharing the GIL with the app: the same loop written with the SDK alone
(a span and two attributes per call, ``BatchSpanProcessor`` and the OTLP exporter, against no
processor) is measured too, and the goal there is evaltrace's export overhead at most the
SDK's own. With 1 ms of waiting per call, as for a model's answer, the cost hides.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report

RECEIVER = """
import time
from evaltrace.testing import OTLPReceiver
receiver = OTLPReceiver().start()
print(receiver.endpoint, flush=True)
while True:
    time.sleep(3600)
"""

# The app's own SDK provider makes @wrap record spans in both variants; "export" adds the OTLP
# exporter (through evaltrace's queue and batching thread), "none" adds nothing.
APP = """
import json, sys, time
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
import evaltrace

mode, calls, io_wait = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if mode == "export":
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    evaltrace.init(exporters=[OTLPSpanExporter(endpoint=sys.argv[4] + "/v1/traces")])

@evaltrace.wrap
def answer(question, k=3):
    if io_wait:
        time.sleep(io_wait)  # the app waiting on I/O, as for a model's answer
    return "Paris"

for i in range(min(calls, 2000)):  # warm-up
    answer("What is the capital of France?")
assert evaltrace.flush(timeout_millis=60_000)
best = float("inf")
for _ in range(5):
    started = time.perf_counter()
    for i in range(calls):
        answer("What is the capital of France?")
    app = time.perf_counter() - started
    delivered = evaltrace.flush(timeout_millis=60_000)
    total = time.perf_counter() - started
    best = min(best, app)
stats = evaltrace.export_stats()
print(json.dumps({"per_call": best / calls, "total": total, "delivered": delivered,
                  "dropped": stats.dropped, "failed": stats.failed}))
"""

# The same calls written with the OpenTelemetry SDK alone, as an app without evaltrace would
# trace them: a span and two attributes each, "export" through the SDK's BatchSpanProcessor
# and OTLP exporter, "none" with no processor.
RAW = """
import json, sys, time
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

mode, calls = sys.argv[1], int(sys.argv[2])
provider = TracerProvider()
if mode == "export":
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter(endpoint=sys.argv[4] + "/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=calls))
tracer = provider.get_tracer("bench")

def answer(question, k=3):
    with tracer.start_as_current_span("answer") as span:
        span.set_attribute("input.value", question)
        span.set_attribute("output.value", "Paris")
        return "Paris"

for i in range(min(calls, 2000)):  # warm-up
    answer("What is the capital of France?")
assert provider.force_flush(60_000)
best = float("inf")
for _ in range(5):
    started = time.perf_counter()
    for i in range(calls):
        answer("What is the capital of France?")
    best = min(best, time.perf_counter() - started)
    assert provider.force_flush(60_000)
print(json.dumps({"per_call": best / calls}))
"""

# Memory while the collector is down: spans keep coming, the queue stays at its bound.
DOWN = """
import json, sys, tracemalloc
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
import evaltrace

evaltrace.init(exporters=[OTLPSpanExporter(endpoint=sys.argv[1] + "/v1/traces")])

@evaltrace.wrap
def answer(question, k=3):
    return "Paris " * 20

tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
grown = {}
done = 0
for mark in (5_000, 50_000, 200_000):
    while done < mark:
        answer("What is the capital of France?")
        done += 1
    grown[mark] = tracemalloc.get_traced_memory()[0] - base
stats = evaltrace.export_stats()
print(json.dumps({"grown": grown, "dropped": stats.dropped, "queued": stats.queued}))
"""


def start_receiver() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def run(code: str, *args: str, **extra: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    env.update(extra)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def raw_sdk_overhead(endpoint: str, calls: int) -> float:
    """The OpenTelemetry SDK's own export overhead, tight loop: export / none, best of 3 each."""
    exported, none = [], []
    for _ in range(3):
        exported.append(float(run(RAW, "export", str(calls), "0", endpoint)["per_call"]))  # type: ignore[arg-type]
        none.append(float(run(RAW, "none", str(calls))["per_call"]))  # type: ignore[arg-type]
    print(
        f"{'  the raw SDK, BatchSpanProcessor + OTLP vs no processor':<58} ours "
        f"{min(exported) * 1e6:>10.3f} us    baseline {min(none) * 1e6:>10.3f} us    ratio "
        f"{min(exported) / min(none):5.2f}x (context)",
        flush=True,
    )
    return min(exported) / min(none)


def overhead(
    endpoint: str, calls: int, io_wait: float, label: str, goal: float
) -> tuple[float, bool]:
    ours, base, totals = [], [], []
    for _ in range(3):
        # A queue that holds every span of a round: the cost of exporting them all is measured.
        exported = run(
            APP, "export", str(calls), str(io_wait), endpoint, OTEL_BSP_MAX_QUEUE_SIZE=str(calls)
        )
        assert exported["delivered"] and exported["dropped"] == exported["failed"] == 0, exported
        ours.append(float(exported["per_call"]))  # type: ignore[arg-type]
        totals.append(float(exported["total"]))  # type: ignore[arg-type]
        none = run(APP, "none", str(calls), str(io_wait))
        base.append(float(none["per_call"]))  # type: ignore[arg-type]
    ok = report(label, min(ours) * 1e6, min(base) * 1e6, "us", goal)
    if not io_wait:
        best_total = min(totals)
        print(
            f"{'spans exported end to end (calls + flush), per second':<58} "
            f"{calls / best_total:>10,.0f} spans/s ({calls:,} spans in "
            f"{best_total * 1000:.0f} ms)",
            flush=True,
        )
    return min(ours) / min(base), ok


def memory_while_down(endpoint: str) -> bool:
    outcome = run(DOWN, endpoint)
    grown = {int(k): int(v) for k, v in outcome["grown"].items()}  # type: ignore[attr-defined]
    for mark, size in grown.items():
        print(f"  collector down: {mark:>7,} spans -> {size / 1e6:6.2f} MB held", flush=True)
    print(f"  dropped {outcome['dropped']:,}, queued {outcome['queued']:,}", flush=True)
    return report(
        "memory held at 200k spans vs at 5k spans, collector down",
        grown[200_000] / 1e6,
        grown[5_000] / 1e6,
        "MB",
        1.2,
    )


def main() -> int:
    receiver, endpoint = start_receiver()
    try:
        # A tight loop of calls doing nothing else measures the exporter's encoding, which
        # shares the GIL with the app: the figure with a goal is evaltrace's export overhead
        # against the SDK's own on the same loop; with I/O in the calls it hides.
        ours, _ = overhead(
            endpoint, 20_000, 0.0, "@wrap with OTLP export (batched) vs without, tight loop", 1.2
        )
        raw = raw_sdk_overhead(endpoint, 20_000)
        ok = report(
            "  that overhead vs the raw SDK's (BatchSpanProcessor + OTLP)", ours, raw, "x", 1.0
        )
        _, waits = overhead(endpoint, 1_000, 0.001, "the same, each call waiting 1 ms on I/O", 1.2)
        ok = waits and ok
    finally:
        os.kill(receiver.pid, signal.SIGTERM)
        receiver.wait(10)
    down, closed = start_receiver()
    os.kill(down.pid, signal.SIGTERM)  # nothing listens on its port from now on
    down.wait(10)
    ok = memory_while_down(closed) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    parser(__doc__).parse_args()
    sys.exit(main())
