"""``evaltrace serve`` as a real subprocess on a free loopback port, for the tests.

:class:`ServeProcess` starts ``python -m evaltrace serve`` with the arguments given, waits
until it logs that it listens, reads its log as it goes, and stops it by its process id
(SIGTERM, then SIGKILL if it does not stop in time). :func:`app_spans` exports spans with the
OpenTelemetry SDK's own OTLP/HTTP exporter, as an app would.
"""

from __future__ import annotations

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
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

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


def provider(url: str, *, batch: bool = False, service: str = "shop") -> TracerProvider:
    """A tracer provider of its own exporting to ``url`` with the SDK's OTLP/HTTP exporter."""
    made = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=url, timeout=10)
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
