"""``evaltrace serve`` as a real subprocess on a free loopback port, for the tests.

:class:`ServeProcess` starts ``python -m evaltrace serve`` with the arguments given, waits
until it logs that it listens, reads its log as it goes, and stops it by its process id
(SIGTERM, then SIGKILL if it does not stop in time). :func:`app_spans` exports spans with the
OpenTelemetry SDK's own OTLP/HTTP exporter, as an app would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as ProtoResource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode

from evaltrace.serve import Gateway, GatewayConfig

CHECKS = """
from evaltrace.evals import Evaluation


def grounded(evaluable):
    said = str(evaluable.eval_output)
    return Evaluation(score=1.0 if "Paris" in said else 0.0, reasoning="mentions Paris")


def costly(evaluable):
    return Evaluation(score=1.0, details={"cost_usd": 1.0, "judge_calls": 1})
"""

SLOW_CHECKS = """
import asyncio
from evaltrace.evals import Evaluation


async def slow_judge(evaluable):
    await asyncio.sleep(2.0)
    return Evaluation(score=1.0)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServeProcess:
    """``evaltrace serve ARGS`` on a free loopback port, in ``folder``."""

    def __init__(self, folder: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.port = free_port()
        self.args = ["--listen", f"127.0.0.1:{self.port}", *args]
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "EVALTRACE_"))}
        self.env = {**clean, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        return self.url + "/v1/traces"

    def __enter__(self) -> ServeProcess:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evaltrace", "serve", *self.args],
            cwd=self.folder,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while not any("listening on" in line for line in self.lines):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("evaltrace serve did not start:\n" + self.log())
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _read(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for raw in self.process.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def log(self) -> str:
        return "\n".join(self.lines)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM by pid; the exit code (SIGKILL after ``timeout``)."""
        process = self.process
        if process is None:
            return 0
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        if self._reader is not None:
            self._reader.join(5)
        return process.returncode

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metric(self, name: str, **labels: str) -> float:
        """The value of ``evaltrace_serve_<name>`` at /metrics (0 when absent)."""
        _, text = self.get("/metrics")
        wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
        pattern = re.compile(
            rf"^evaltrace_serve_{re.escape(name)}"
            + (rf"\{{{re.escape(wanted)}\}}" if wanted else "")
            + r" (\S+)$",
            re.M,
        )
        found = pattern.search(text)
        return float(found.group(1)) if found else 0.0

    def wait_for_metric(
        self, name: str, at_least: float, timeout: float = 20, **labels: str
    ) -> float:
        deadline = time.monotonic() + timeout
        while True:
            value = self.metric(name, **labels)
            if value >= at_least or time.monotonic() > deadline:
                return value
            time.sleep(0.05)

    def events(self) -> list[dict[str, Any]]:
        """The log's JSON lines (with --log-format json)."""
        found = []
        for line in self.lines:
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return found


def provider(
    url: str,
    *,
    batch: bool = False,
    service: str = "shop",
    token: str | None = None,
    project: str | None = None,
    grpc: bool = False,
) -> TracerProvider:
    """A tracer provider of its own exporting to ``url`` with the SDK's OTLP/HTTP exporter
    (with ``grpc``: its OTLP/gRPC exporter, ``url`` being ``HOST:PORT``)."""
    attributes = {"service.name": service}
    if project is not None:
        attributes["openinference.project.name"] = project  # Phoenix files spans by it
    made = TracerProvider(resource=Resource.create(attributes))
    exporter: SpanExporter
    if grpc:
        metadata = {"authorization": f"Bearer {token}"} if token else None
        exporter = GrpcSpanExporter(endpoint=url, insecure=True, timeout=10, headers=metadata)
    else:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        exporter = OTLPSpanExporter(endpoint=url, timeout=10, headers=headers)
    made.add_span_processor(
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    return made


def app_spans(
    made: TracerProvider, answers: Sequence[str], *, error: Sequence[bool] = ()
) -> list[str]:
    """One trace per answer (a root ``answer`` with a child ``llm``); their trace ids."""
    tracer = made.get_tracer("app")
    ids = []
    for index, text in enumerate(answers):
        with tracer.start_as_current_span("answer") as root:
            root.set_attribute("input.value", f"question {index}")
            with tracer.start_as_current_span("llm") as child:
                child.set_attribute("openinference.span.kind", "LLM")
                if index < len(error) and error[index]:
                    child.set_status(Status(StatusCode.ERROR, "the model failed"))
            root.set_attribute("output.value", text)
            ids.append(f"{root.get_span_context().trace_id:032x}")
    return ids


def export_request(traces: int, spans_per_trace: int = 2, *, seed: int = 0) -> bytes:
    """An OTLP/HTTP protobuf export request of ``traces`` whole traces (a root, children)."""
    spans = []
    now = time.time_ns()
    for number in range(traces):
        trace_id = (seed * 1_000_003 + number + 1).to_bytes(16, "big")
        root_id = (number * 64 + 1).to_bytes(8, "big")
        for child in range(spans_per_trace):
            span_id = root_id if child == 0 else (number * 64 + 1 + child).to_bytes(8, "big")
            spans.append(
                Span(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_span_id=b"" if child == 0 else root_id,
                    name="answer" if child == 0 else "llm",
                    start_time_unix_nano=now,
                    end_time_unix_nano=now + 1000,
                    attributes=[
                        KeyValue(key="output.value", value=AnyValue(string_value=f"Paris {number}"))
                    ],
                )
            )
    service = KeyValue(key="service.name", value=AnyValue(string_value="load"))
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=ProtoResource(attributes=[service]), scope_spans=[ScopeSpans(spans=spans)]
            )
        ]
    )
    return request.SerializeToString()


def post(
    url: str, body: bytes, content_type: str = "application/x-protobuf", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """POST ``body``; the status, headers and body of the answer."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


class GatewayThread:
    """A :class:`~evaltrace.serve.Gateway` in a thread of its own, on a free loopback port.

    The same gateway ``evaltrace serve`` runs, in this process: for the tests of its faults,
    which need no process of their own (the client tests use :class:`ServeProcess`).
    """

    def __init__(self, config: GatewayConfig) -> None:
        self.gateway = Gateway(replace(config, host="127.0.0.1", port=0))
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> GatewayThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.gateway.start(), self.loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.gateway.stop(), self.loop).result(60)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    @property
    def traces_url(self) -> str:
        return self.gateway.address

    def metric(self, name: str, *labels: str) -> float:
        """A counter's value for ``labels``; over every label set when none are given."""
        counter = getattr(self.gateway.metrics, name)
        return float(counter.value(*labels) if labels or not counter.labels else counter.total())

    def wait_for(self, name: str, at_least: float, *labels: str, timeout: float = 20) -> float:
        deadline = time.monotonic() + timeout
        while True:
            value = self.metric(name, *labels)
            if value >= at_least or time.monotonic() > deadline:
                return value
            time.sleep(0.02)
