"""``evaltrace serve`` under load: spans forwarded/received, sustained intake, added latency,
memory with the downstream down, and forwarding with a slow judge.

Run: ``.venv/bin/python bench/bench_serve.py [RUNS]`` (3 runs by default; each figure is
printed as min / median / max over the runs). Everything is a whole process on 127.0.0.1,
stopped by process id: the gateway (``python -m evaltrace serve``), the downstream collector
(a sink that decodes each protobuf request with ``opentelemetry-proto`` and counts its spans),
and the load, sent from this process with aiohttp (pre-encoded OTLP/HTTP protobuf requests of
512 spans, 128 traces of 4 spans, as an SDK's batch processor sends them, 4 at a time).

Figures (goals of issue 25):

* forwarded / received, downstream healthy, 10^5 spans: 100%;
* sustained intake, 1% of traces scored by a no-I/O evaluator: spans/s accepted while
  sending 10^5 spans as fast as 4 connections go, and end to end (until the sink has them all)
  (goal >= 10,000 spans/s);
* added forwarding latency p99 at half that load: p99 of (sink arrival - send) through the
  gateway minus the same sent straight to the sink (goal <= 20 ms); and the same through a
  gateway that only forwards (no evaluators), which says what scoring adds to it;
* memory (VmRSS) of the gateway after 10^6 spans offered with the downstream down, vs after
  10^5 (goal <= 1.2x), with the forward queue and assembly bounded at 8 MiB each (so that the
  bound is reached within the first 10^5 spans; the defaults are 64 MiB);
* forward rate with a judge taking 2 s per call vs a no-I/O evaluator, same sampling (goal
  within +-10%): the median of 5 pairs of gateways run back to back, first alternating.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser

SPANS_PER_REQUEST = 512
SPANS_PER_TRACE = 4
CONNECTIONS = 4

SINK = """
import asyncio, json, sys, time
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

spans = 0
arrivals = {}

async def traces(request):
    global spans
    message = ExportTraceServiceRequest.FromString(await request.read())
    now = time.monotonic()
    for resource_spans in message.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            spans += len(scope_spans.spans)
            for span in scope_spans.spans:
                if not span.parent_span_id and span.span_id == b"\\x00" * 7 + b"\\x01":
                    arrivals[span.trace_id.hex()] = now  # the first trace of a request
    return web.Response(body=b"", content_type="application/x-protobuf")

async def count(request):
    return web.json_response({"spans": spans})

async def seen(request):
    return web.json_response(arrivals)

async def main():
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", traces)
    app.router.add_get("/count", count)
    app.router.add_get("/arrivals", seen)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", int(sys.argv[1]))
    await site.start()
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

CHECKS = """
import asyncio
from evaltrace.evals import Evaluation

def says_paris(evaluable):
    return Evaluation(score=1.0 if "Paris" in str(evaluable.eval_output) else 0.0)

async def slow_judge(evaluable):
    await asyncio.sleep(2.0)  # a judge taking 2 s per call
    return Evaluation(score=1.0)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def requests(count: int, *, seed: int, size: int = SPANS_PER_REQUEST) -> list[bytes]:
    """``count`` export requests of distinct traces; each request's first trace is marked."""
    now = time.time_ns()
    service = KeyValue(key="service.name", value=AnyValue(string_value="bench"))
    made = []
    for number in range(count):
        spans = []
        for trace in range(size // SPANS_PER_TRACE):
            # random-looking ids, as W3C trace ids are: the rate sampler reads the last 8 bytes
            name = f"{seed}-{number}-{trace}".encode()
            trace_id = hashlib.blake2b(name, digest_size=16).digest()
            for child in range(SPANS_PER_TRACE):
                span_id = (child + 1 if trace == 0 else trace * 16 + child + 1).to_bytes(8, "big")
                root_id = (1 if trace == 0 else trace * 16 + 1).to_bytes(8, "big")
                spans.append(
                    Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_span_id=b"" if child == 0 else root_id,
                        name="answer" if child == 0 else f"step {child}",
                        kind=Span.SPAN_KIND_INTERNAL,
                        start_time_unix_nano=now,
                        end_time_unix_nano=now + 1_000_000,
                        attributes=[
                            KeyValue(key="input.value", value=AnyValue(string_value="capital?")),
                            KeyValue(key="output.value", value=AnyValue(string_value="Paris")),
                        ],
                    )
                )
        message = ExportTraceServiceRequest(
            resource_spans=[
                ResourceSpans(
                    resource=Resource(attributes=[service]), scope_spans=[ScopeSpans(spans=spans)]
                )
            ]
        )
        made.append(message.SerializeToString())
    return made


def first_trace(body: bytes) -> str:
    message = ExportTraceServiceRequest.FromString(body)
    return message.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()


class Process:
    """A child process stopped by its id."""

    def __init__(self, args: list[str], *, cwd: str | None = None, ready: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "EVALTRACE_"))}
        self.process = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        self.lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("a process did not start:\n" + "".join(self.lines))
            self.lines.append(line)
            if ready in line:
                break
        os.set_blocking(self.process.stdout.fileno(), False)

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> str:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), True)
        return "".join(self.lines) + self.process.stdout.read()


def start_sink() -> tuple[Process, str]:
    port = free_port()
    return Process([sys.executable, "-c", SINK, str(port)], ready="ready"), (
        f"http://127.0.0.1:{port}"
    )


def start_gateway(
    folder: str, forward: str, evaluator: str | None, *extra: str
) -> tuple[Process, str]:
    """The gateway, scoring 1% with ``evaluator`` (``None``: forwarding only)."""
    port = free_port()
    Path(folder, "checks.py").write_text(CHECKS)
    Path(folder, "online.json").write_text(
        json.dumps({"evaluators": [f"checks.py:{evaluator}"], "sample": 0.01})
    )
    args = [sys.executable, "-m", "evaltrace", "serve", "--listen", f"127.0.0.1:{port}"]
    args += ["--forward", forward]
    if evaluator is not None:
        args += ["--evaluators", "online.json", "--quiet-period", "0.5"]
    process = Process([*args, *extra], cwd=folder, ready="listening on")
    return process, f"http://127.0.0.1:{port}"


async def send(
    targets: str | list[str], bodies: list[bytes], *, rate: float | None = None
) -> tuple[float, int, int, dict[str, tuple[str, float]]]:
    """Send ``bodies`` over 4 connections (at ``rate`` spans/s when given), the n-th to
    ``targets[n % len(targets)]``.

    Returns the seconds taken, the spans accepted, the requests refused, and, by the first
    trace of each request, where it was sent and when (monotonic).
    """
    urls = [targets] if isinstance(targets, str) else targets
    accepted = refused = 0
    sent: dict[str, tuple[str, float]] = {}
    queue: asyncio.Queue[tuple[int, bytes]] = asyncio.Queue()
    for item in enumerate(bodies):
        queue.put_nowait(item)
    began = time.monotonic()
    headers = {"Content-Type": "application/x-protobuf"}
    connector = aiohttp.TCPConnector(limit=CONNECTIONS * len(urls))
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            nonlocal accepted, refused
            while not queue.empty():
                number, body = queue.get_nowait()
                spans = len(
                    ExportTraceServiceRequest.FromString(body)
                    .resource_spans[0]
                    .scope_spans[0]
                    .spans
                )
                url = urls[number % len(urls)]
                if rate is not None:
                    due = began + number * spans / rate
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    sent[first_trace(body)] = (url, time.monotonic())
                async with session.post(url + "/v1/traces", data=body) as response:
                    await response.read()
                    if response.status == 200:
                        accepted += spans
                    else:
                        refused += 1

        await asyncio.gather(*(worker() for _ in range(CONNECTIONS * len(urls))))
    return time.monotonic() - began, accepted, refused, sent


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def metric(base: str, name: str) -> float:
    with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(f"evaltrace_serve_{name}"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_for_sink(sink: str, spans: int, timeout: float = 120) -> float:
    """Seconds until the sink holds ``spans`` (or the timeout)."""
    began = time.monotonic()
    while get(sink + "/count")["spans"] < spans and time.monotonic() - began < timeout:
        time.sleep(0.02)
    return time.monotonic() - began


PAIRS = 5
"""Pairs of gateways (no-I/O evaluator, 2 s judge) per run for the forward-rate figure."""


def throughput(bodies: list[bytes], evaluator: str) -> dict[str, float]:
    """10^5 spans as fast as 4 connections go: intake rate, end-to-end rate, forwarded share."""
    with tempfile.TemporaryDirectory() as folder:
        sink, sink_url = start_sink()
        gateway, url = start_gateway(folder, sink_url, evaluator)
        try:
            began = time.monotonic()
            seconds, accepted, refused, _ = asyncio.run(send(url, bodies))
            wait_for_sink(sink_url, accepted)
            end_to_end = time.monotonic() - began
            time.sleep(1.0)  # the sampled traces' quiet period, then scoring
            received = metric(url, "spans_received_total")
            forwarded = get(sink_url + "/count")["spans"]
            app_forwarded = metric(url, 'spans_forwarded_total{kind="app"}')
            scored = metric(url, "traces_scored_total")
        finally:
            gateway.stop()
            sink.stop()
    return {
        "intake": accepted / seconds,
        "end_to_end": accepted / end_to_end,
        "forwarded_share": app_forwarded / received if received else 0.0,
        "sink_spans": forwarded,
        "received": received,
        "refused": refused,
        "scored": scored,
    }


def latency(rate: float, *, seed: int, evaluator: str | None = "says_paris") -> float:
    """Added p99 ms of send-to-sink through the gateway at ``rate`` spans/s.

    Requests of 64 spans go to the gateway at ``rate`` while, in the same seconds, every
    fifth one goes straight to the sink instead: both sides see the same noise. The figure is
    the gateway's p99 minus the direct p99. With ``evaluator=None`` the gateway only forwards
    (what forwarding alone adds, to compare with).
    """
    size = 64
    count = int(rate * 10 / size)  # 10 s
    with tempfile.TemporaryDirectory() as folder:
        sink, sink_url = start_sink()
        gateway, url = start_gateway(folder, sink_url, evaluator)
        try:
            targets = [url, url, url, url, sink_url]
            # warm up: connections, first forwards, the first scoring's imports
            asyncio.run(send(targets, requests(100, seed=seed + 1000, size=size), rate=rate))
            before = get(sink_url + "/count")["spans"]
            bodies = requests(count, seed=seed, size=size)
            _, accepted, _, sent = asyncio.run(send(targets, bodies, rate=rate * 5 / 4))
            wait_for_sink(sink_url, before + accepted)
            arrivals = get(sink_url + "/arrivals")
        finally:
            gateway.stop()
            sink.stop()
    p99 = {}
    for side, target in (("direct", sink_url), ("gateway", url)):
        delays = sorted(
            arrivals[key] - when for key, (where, when) in sent.items() if where == target
        )
        p99[side] = delays[int(len(delays) * 0.99) - 1] * 1000
        p50 = delays[len(delays) // 2] * 1000
        print(f"    {side}: {len(delays)} requests, p50 {p50:.1f} ms, p99 {p99[side]:.1f} ms")
    return p99["gateway"] - p99["direct"]


def memory(bodies: list[bytes]) -> tuple[float, float]:
    """RSS (MB) of the gateway after 10^5 and after 10^6 spans offered, downstream down."""
    down = f"http://127.0.0.1:{free_port()}"
    bound = str(8 * 1024 * 1024)
    with tempfile.TemporaryDirectory() as folder:
        gateway, url = start_gateway(
            folder,
            down,
            "says_paris",
            *("--forward-queue-bytes", bound, "--max-pending-bytes", bound),
        )
        try:
            per_round = len(bodies) * SPANS_PER_REQUEST  # just over 10^5
            rss = []
            for _ in range(-(-1_000_000 // per_round)):
                asyncio.run(send(url, bodies))
                time.sleep(1.0)  # assembly's quiet period passes
                rss.append(gateway.rss() / 1e6)
            dropped = metric(url, "spans_dropped_total")
            refused = metric(url, 'requests_total{protocol="http",status="503"}')
        finally:
            gateway.stop()
    print(f"    (503s answered: {refused:,.0f}; spans dropped after retrying: {dropped:,.0f})")
    return rss[0], rss[-1]


def spread(values: list[float]) -> str:
    return f"{min(values):,.2f} / {statistics.median(values):,.2f} / {max(values):,.2f}"


def main() -> int:
    arguments = parser(__doc__)
    arguments.add_argument("runs", nargs="?", type=int, default=3, help="repetitions (3)")
    runs = arguments.parse_args().runs
    count = -(-100_000 // SPANS_PER_REQUEST)  # 196 requests: 100,352 spans
    bodies = requests(count, seed=1)
    print(f"{count} requests of {SPANS_PER_REQUEST} spans ({count * SPANS_PER_REQUEST:,} spans)")
    figures: dict[str, list[float]] = {
        "share": [],
        "intake": [],
        "end_to_end": [],
        "latency": [],
        "latency_forward_only": [],
        "memory": [],
        "slow_ratio": [],
    }
    for run in range(runs):
        print(f"run {run + 1}/{runs}", flush=True)
        # One burst of 10^5 spans lasts about a second here, so one pair of them is at the
        # mercy of a load swing: the slow-judge figure is the median of PAIRS pairs, each
        # pair's two gateways run back to back, the first alternating.
        ratios = []
        for pair in range(PAIRS):
            sides = {}
            for evaluator in ("says_paris", "slow_judge")[:: 1 if pair % 2 == 0 else -1]:
                seed = (10 if evaluator == "says_paris" else 20) + run * PAIRS + pair
                sides[evaluator] = throughput(requests(count, seed=seed), evaluator)
            fast, slow = sides["says_paris"], sides["slow_judge"]
            if pair == 0:
                print(f"    no-I/O evaluator: {json.dumps({k: round(v) for k, v in fast.items()})}")
                print(f"    2 s judge:        {json.dumps({k: round(v) for k, v in slow.items()})}")
                figures["share"].append(fast["forwarded_share"] * 100)
                figures["intake"].append(fast["intake"])
                figures["end_to_end"].append(fast["end_to_end"])
            ratios.append(slow["end_to_end"] / fast["end_to_end"])
        print(f"    forward rate, 2 s judge / no-I/O, {PAIRS} pairs: {spread(ratios)}")
        figures["slow_ratio"].append(statistics.median(ratios))
        figures["latency"].append(latency(5_000.0, seed=30 + run))
        print("    the same through a gateway that only forwards:")
        figures["latency_forward_only"].append(latency(5_000.0, seed=40 + run, evaluator=None))
        after_1e5, after_1e6 = memory(bodies)
        print(f"    memory: {after_1e5:.1f} MB after 10^5 spans, {after_1e6:.1f} MB after 10^6")
        figures["memory"].append(after_1e6 / after_1e5)
    print("\nmin / median / max over", runs, "runs:")
    checks = [
        ("spans forwarded / received, healthy, 10^5 spans (%)", "share", lambda v: v >= 100),
        ("sustained intake, 1% scored (spans/s)", "intake", lambda v: v >= 10_000),
        ("end to end, 1% scored (spans/s)", "end_to_end", lambda v: True),
        ("added forwarding latency p99 at half load (ms)", "latency", lambda v: v <= 20),
        (
            "  the same, gateway only forwarding (no goal) (ms)",
            "latency_forward_only",
            lambda v: True,
        ),
        ("memory after 10^6 / after 10^5 spans, downstream down", "memory", lambda v: v <= 1.2),
        ("forward rate, 2 s judge / no-I/O evaluator", "slow_ratio", lambda v: 0.9 <= v <= 1.1),
    ]
    ok = True
    for label, key, goal in checks:
        met = goal(statistics.median(figures[key]))
        ok = ok and met
        print(f"{label:<58} {spread(figures[key]):>28}  {'ok' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
