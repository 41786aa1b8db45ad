"""Capture lifecycle: memory kept after a capture closes, flush and exit with slow consumers.

Run: ``.venv/bin/python bench/bench_capture_lifecycle.py``. Figures:

- *Task outliving its capture*: ``tracemalloc`` growth per 1,000 ``@wrap`` calls made by an
  asyncio task that was started inside ``capture_traces()`` and keeps running after the block
  exited, vs the same task started outside any capture (the baseline, measured in the same run).
- *Flush and exit with a dead collector*: a fresh interpreter makes 2,000 spans with
  ``OTLPSpanExporter`` to a closed port on 127.0.0.1 and exits, once directly and once after
  ``flush(timeout_millis=2000)`` (its result and duration printed); the exit delay is the
  time from its last statement to the end of the process (the first scenario, with no
  exporter or handler, gives the interpreter's own teardown).
- *Slow async handler*: 20,000 spans to an ``async def on_span`` that blocks 5 ms per span; the
  memory its backlog holds and the exit delay.
- *Slow sync handler*: 1,000 spans to a ``def on_span`` that blocks 5 ms per span; the time the
  app's own loop of calls takes (the handler's work lands on the app's thread when it is run
  there), and the exit delay.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser

CALLS = 1_000
EXIT_GOAL_S = 6.0
"""Exit delay allowed: the default shutdown timeout (5 s) plus interpreter teardown."""


def _outliving_task_bytes(open_capture: bool) -> float:
    from evaltrace import capture_traces, wrap

    @wrap
    def step(i: int) -> int:
        return i

    async def background(go: asyncio.Event) -> float:
        await go.wait()
        for i in range(100):  # warm caches before measuring
            step(i)
        gc.collect()
        tracemalloc.start()
        for i in range(CALLS):
            step(i)
            if i % 50 == 0:
                await asyncio.sleep(0)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return float(grown)

    async def main() -> float:
        go = asyncio.Event()
        if open_capture:
            with capture_traces():
                task = asyncio.create_task(background(go))
                await asyncio.sleep(0)
        else:
            task = asyncio.create_task(background(go))
        go.set()
        return await task

    return asyncio.run(main())


def bench_outliving_task() -> bool:
    ours = sorted(_outliving_task_bytes(True) for _ in range(3))[1]
    base = sorted(_outliving_task_bytes(False) for _ in range(3))[1]
    kept = ours - base
    ok = kept < 4096
    print(
        f"{'memory per 1,000 calls of a task outliving its capture':<58} ours {ours:>10.0f} B     "
        f"baseline {base:>10.0f} B     kept {kept:>8.0f} B (goal < 4096 B) "
        f"{'ok' if ok else 'OVER GOAL'}",
        flush=True,
    )
    return ok


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


_PRELUDE = """
import time, tracemalloc
import evaltrace

@evaltrace.wrap
def step(i):
    return i
"""

_SCRIPTS = {
    "no exporter, no handler": """
for i in range(200):
    step(i)
""",
    "dead collector, 2,000 spans, no flush": """
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
evaltrace.init(exporters=[OTLPSpanExporter(endpoint="http://127.0.0.1:{port}/v1/traces")])
for i in range(2_000):
    step(i)
""",
    "dead collector, 2,000 spans, flush(2000)": """
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
evaltrace.init(exporters=[OTLPSpanExporter(endpoint="http://127.0.0.1:{port}/v1/traces")])
for i in range(2_000):
    step(i)
started = time.monotonic()
ok = evaltrace.flush(timeout_millis=2000)
print(f"flush(timeout_millis=2000) returned {{ok}} after {{time.monotonic() - started:.1f}} s")
""",
    "slow async handler (5 ms per span, 20,000 spans)": """
class Slow(evaltrace.InstrumentationHandler):
    async def on_span(self, span):
        time.sleep(0.005)
evaltrace.trace.add_handler(Slow())
tracemalloc.start()
for i in range(20_000):
    step(i)
print(f"memory held after 20,000 spans: {{tracemalloc.get_traced_memory()[0] / 1e6:.1f}} MB")
""",
    "slow sync handler (5 ms per span, 1,000 spans)": """
class Slow(evaltrace.InstrumentationHandler):
    def on_span(self, span):
        time.sleep(0.005)
evaltrace.trace.add_handler(Slow())
started = time.monotonic()
for i in range(1_000):
    step(i)
print(f"the app's 1,000 calls took {{time.monotonic() - started:.2f}} s")
""",
}


def _exit_delay(body: str) -> tuple[float, str]:
    code = textwrap.dedent(_PRELUDE) + textwrap.dedent(body).format(port=_closed_port())
    code += "\nprint(f'MARK {time.time()!r}', flush=True)\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    out, err = proc.communicate(timeout=600)
    ended = time.time()
    lines = out.decode().splitlines()
    marks = [line for line in lines if line.startswith("MARK ")]
    if proc.returncode != 0 or not marks:
        raise RuntimeError(f"scenario failed ({proc.returncode}): {err.decode()[-2000:]}")
    notes = "; ".join(line for line in lines if not line.startswith("MARK "))
    return ended - float(marks[-1].split()[1]), notes


def bench_exit_delays() -> bool:
    ok = True
    base = 0.0
    for label, body in _SCRIPTS.items():
        delay, notes = _exit_delay(body)
        if not base:
            base = delay
        within = delay <= EXIT_GOAL_S
        ok = ok and within
        print(
            f"exit delay, {label:<46} {delay:6.2f} s (goal <= {EXIT_GOAL_S} s) "
            f"{'ok' if within else 'OVER GOAL'}" + (f"  [{notes}]" if notes else ""),
            flush=True,
        )
    return ok


def main() -> int:
    results = [bench_outliving_task(), bench_exit_delays()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    parser(__doc__).parse_args()
    sys.exit(main())
