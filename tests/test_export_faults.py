"""A collector that is down, failing, stuck or restarting never blocks or breaks the app.

Each fault is played by the in-process OTLP receiver (or a port nothing listens on). The
app's results, the counts of export_stats() and what is logged are checked; that exit does
not wait for the collector is shown by the receiver still holding the request unanswered
when the app's process has ended.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

import evaltrace
from evaltrace import export_stats, flush, init, wrap
from evaltrace.capture import ExportStats
from evaltrace.testing import OTLPReceiver

SPANS = 12

APP = f"""
import json
import evaltrace

@evaltrace.wrap
def double(x):
    return 2 * x

results = [double(i) for i in range({SPANS})]
delivered = evaltrace.FINISH
stats = evaltrace.export_stats()
print(json.dumps({{"results": results, "delivered": delivered, "stats": stats.__dict__}}))
"""


def run_app(finish: str, **env: str) -> tuple[dict[str, object], str]:
    """Run the app (ending with ``evaltrace.<finish>``) configured by ``env`` only."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(APP).replace("FINISH", finish)],
        capture_output=True,
        text=True,
        env={**clean, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4", **env},
        timeout=60,  # stops a hung test only; every app here exits well within it
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "evaltrace: exporter" in line]


EXPECTED = [2 * i for i in range(SPANS)]


def counts(*, failed: int, dropped: int) -> dict[str, int]:
    """export_stats() of an app whose every span failed or was dropped."""
    return {"exported": 0, "failed": failed, "dropped": dropped, "queued": 0, "exporting": 0}


def test_an_absent_collector_fails_every_batch_with_one_warning() -> None:
    absent = OTLPReceiver().start()
    absent.stop()  # nothing listens on its port now
    outcome, stderr = run_app(
        "flush(timeout_millis=30_000)",
        OTEL_EXPORTER_OTLP_ENDPOINT=absent.endpoint,
        OTEL_EXPORTER_OTLP_TIMEOUT="0.5",  # shorter than the first back-off: no retry
    )
    assert outcome["results"] == EXPECTED
    assert outcome["delivered"] is False
    assert outcome["stats"] == counts(failed=SPANS, dropped=0)
    (warning,) = warnings_in(stderr)
    assert "failed to export 4 spans" in warning
    assert "Failed to export spans batch" in warning  # the exporter's own reason, quoted
    assert stderr.count("Failed to export") == 1  # and not logged once per batch


def test_a_collector_answering_500_fails_every_batch_with_one_warning(
    receiver: OTLPReceiver,
) -> None:
    receiver.fail_next(500, times=1000)
    outcome, stderr = run_app(
        "flush(timeout_millis=30_000)", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint
    )
    assert outcome["results"] == EXPECTED
    assert outcome["delivered"] is False
    assert outcome["stats"] == counts(failed=SPANS, dropped=0)
    assert receiver.attempts == SPANS // 4
    (warning,) = warnings_in(stderr)
    assert "500" in warning


def test_exit_does_not_wait_for_a_collector_that_never_answers(receiver: OTLPReceiver) -> None:
    receiver.hang_next(times=1000)
    outcome, stderr = run_app(
        "shutdown()",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_TIMEOUT="600",
        EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS="300",
    )
    # The app's process has ended while its export request is still held unanswered.
    assert receiver.hanging == 1
    assert outcome["results"] == EXPECTED
    assert outcome["delivered"] is False
    assert outcome["stats"] == counts(failed=0, dropped=SPANS)
    assert f"{SPANS} spans were not exported by OTLPSpanExporter" in stderr


def test_exit_does_not_wait_for_the_retries_of_an_absent_collector() -> None:
    absent = OTLPReceiver().start()
    absent.stop()
    outcome, stderr = run_app(
        "shutdown()",
        OTEL_EXPORTER_OTLP_ENDPOINT=absent.endpoint,
        OTEL_EXPORTER_OTLP_TIMEOUT="600",  # the exporter would retry for ten minutes
        EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS="300",
    )
    assert outcome["results"] == EXPECTED
    # Every span was still waiting or being retried when shutdown gave up on it.
    assert outcome["stats"] == counts(failed=0, dropped=SPANS)
    assert warnings_in(stderr) == []  # no batch had failed yet: it was still being retried


# In this process ----------------------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as server:
        yield server


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    yield
    evaltrace.shutdown(timeout_millis=100)


@wrap
def triple(x: int) -> int:
    return 3 * x


@pytest.mark.usefixtures("fresh_runtime")
def test_a_collector_that_restarts_gets_the_spans_sent_after_it_is_back(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    init(exporters=[OTLPSpanExporter(endpoint=receiver.traces_url, timeout=0.5)])
    before = export_stats()
    caplog.set_level(logging.INFO)

    assert [triple(i) for i in range(5)] == [0, 3, 6, 9, 12]
    assert flush()
    assert len(receiver.spans) == 5

    receiver.stop()
    assert [triple(i) for i in range(5)] == [0, 3, 6, 9, 12]
    assert flush() is False

    with OTLPReceiver(port=receiver.port) as restarted:
        assert [triple(i) for i in range(5)] == [0, 3, 6, 9, 12]
        assert flush()
        assert len(restarted.spans) == 5

    assert export_stats().since(before) == ExportStats(
        exported=10, failed=5, dropped=0, queued=0, exporting=0
    )
    evaltrace_records = [r for r in caplog.records if r.name == "evaltrace"]
    assert [r.levelname for r in evaltrace_records] == ["WARNING", "INFO"]
    assert "exports again (5 spans failed meanwhile)" in evaltrace_records[1].getMessage()
    assert [r for r in caplog.records if r.name.startswith("opentelemetry")] == []


@pytest.mark.usefixtures("fresh_runtime")
def test_the_app_is_not_blocked_while_an_export_hangs(
    receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "50")
    receiver.hang_next()
    init(exporters=[OTLPSpanExporter(endpoint=receiver.traces_url, timeout=600)])
    before = export_stats()
    assert triple(1) == 3
    flush(timeout_millis=0)  # sends span 1, which the collector holds
    assert receiver.wait_for_attempts(1)

    assert [triple(i) for i in range(200)] == [3 * i for i in range(200)]

    assert receiver.hanging == 1
    assert export_stats().since(before) == ExportStats(
        exported=0, failed=0, dropped=150, queued=50, exporting=1
    )


@pytest.mark.usefixtures("fresh_runtime")
def test_a_collector_that_closes_the_connection_fails_the_batch(receiver: OTLPReceiver) -> None:
    receiver.close_next(times=2)  # the exporter retries a dropped connection once at once
    init(exporters=[OTLPSpanExporter(endpoint=receiver.traces_url, timeout=0.5)])
    before = export_stats()
    assert triple(2) == 6
    assert flush() is False
    assert export_stats().since(before) == ExportStats(
        exported=0, failed=1, dropped=0, queued=0, exporting=0
    )
    assert triple(3) == 9
    assert flush()
    assert [span.name for span in receiver.spans] == ["triple"]
