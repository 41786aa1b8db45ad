"""An app in another language: Node.js with the official OpenTelemetry SDK (``sdk-node``)
and its OTLP/HTTP exporter (JSON over HTTP) exports to ``evaltrace serve``, which forwards
every span and scores the trace.

The npm packages are installed from the npm registry into a cache folder outside the
repository, ``${EVALTRACE_CACHE:-~/.cache/evaltrace}/node-otel``, and reused while present.
Without ``node`` and ``npm`` the test is skipped, except under CI (``CI`` set), where a
missing one fails (``.ci/run`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaltrace.testing import OTLPReceiver
from serve_process import CHECKS, ServeProcess

PACKAGES = (
    "@opentelemetry/api",
    "@opentelemetry/sdk-node",
    "@opentelemetry/exporter-trace-otlp-http",
)

APP = """
const { NodeSDK } = require("@opentelemetry/sdk-node");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-http");
const { trace } = require("@opentelemetry/api");

async function main() {
  const sdk = new NodeSDK({
    serviceName: "mindcraft",
    traceExporter: new OTLPTraceExporter({ url: process.argv[2] }),
    instrumentations: [],
  });
  sdk.start();
  const tracer = trace.getTracer("agent");
  const ids = [];
  for (const reply of ["Paris", "Lyon"]) {
    tracer.startActiveSpan("answer", (root) => {
      root.setAttribute("input.value", "capital of France?");
      tracer.startActiveSpan("llm", (child) => {
        child.setAttribute("openinference.span.kind", "LLM");
        child.end();
      });
      root.setAttribute("output.value", reply);
      ids.push(root.spanContext().traceId);
      root.end();
    });
  }
  await sdk.shutdown();
  console.log(JSON.stringify(ids));
}

main();
"""


def _cache() -> Path:
    base = os.environ.get("EVALTRACE_CACHE") or str(Path.home() / ".cache" / "evaltrace")
    return Path(base) / "node-otel"


@pytest.fixture(scope="module")
def node_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app, next to the cached ``node_modules`` (installed on first use)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = "node and npm are needed (apt-get install nodejs npm; bash .ci/run does it)"
        if os.environ.get("CI"):
            pytest.fail(f"under CI a missing Node.js fails: {reason}")
        pytest.skip(reason)
    cache = _cache()
    if not all((cache / "node_modules" / name / "package.json").exists() for name in PACKAGES):
        cache.mkdir(parents=True, exist_ok=True)
        if not (cache / "package.json").exists():
            (cache / "package.json").write_text('{"name": "evaltrace-node-otel", "private": true}')
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES],
            cwd=cache,
            check=True,
            timeout=600,
        )
    app = cache / "app.js"  # beside node_modules, so that require() finds them
    app.write_text(APP)
    return app


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    started = OTLPReceiver().start()
    try:
        yield started
    finally:
        started.stop()


def test_a_node_app_exports_through_serve_and_its_traces_are_scored(
    node_app: Path, receiver: OTLPReceiver, tmp_path: Path
) -> None:
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "online.yaml").write_text("evaluators: ['checks.py:grounded']\nsample: 1\n")
    args = ("--forward", receiver.endpoint, "--evaluators", "online.yaml", "--quiet-period", "0.2")
    with ServeProcess(tmp_path, *args) as serve:
        env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")} | {
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
        }
        ran = subprocess.run(
            ["node", str(node_app), serve.traces_url],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        paris, lyon = json.loads(ran.stdout.strip().splitlines()[-1])
        assert receiver.wait_for_spans(6, timeout=20), serve.log()
        time.sleep(0.2)
    app = [span for span in receiver.spans if span.scope == "agent"]
    assert sorted((span.trace_id, span.name) for span in app) == sorted(
        [(paris, "answer"), (paris, "llm"), (lyon, "answer"), (lyon, "llm")]
    )
    assert {span.resource["service.name"] for span in app} == {"mindcraft"}
    assert {span.resource["telemetry.sdk.language"] for span in app} == {"nodejs"}
    scores = {
        span.trace_id: span.events[0][1]["gen_ai.evaluation.score.value"]
        for span in receiver.spans
        if span.scope == "evaltrace"
    }
    assert scores == {paris: 1.0, lyon: 0.0}
