"""Exporters given to init(): counted results, flush that keeps its timeout, bounded exit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import evaltrace
from evaltrace import export_stats, flush, init, wrap
from evaltrace.capture import ExportStats


@wrap
def step(i: int) -> int:
    return i


class ListExporter(SpanExporter):
    """Keeps what it is given; blocks in export until released when asked to."""

    def __init__(self, result: SpanExportResult = SpanExportResult.SUCCESS) -> None:
        self.result = result
        self.spans: list[ReadableSpan] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(30)
        self.spans.extend(spans)
        return self.result


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    """Exporters added in a test are shut down with it (the next API call initialises again)."""
    yield
    evaltrace.shutdown(timeout_millis=100)  # a dead collector would otherwise take the default


@pytest.mark.usefixtures("fresh_runtime")
def test_export_stats_count_the_spans_an_exporter_accepted() -> None:
    exporter = ListExporter()
    init(exporters=[exporter])
    before = export_stats()
    for i in range(3):
        step(i)
    assert flush()
    assert len(exporter.spans) == 3
    assert export_stats().since(before) == ExportStats(exported=3, failed=0, dropped=0, queued=0)


@pytest.mark.usefixtures("fresh_runtime")
def test_flush_reports_an_exporter_that_failed() -> None:
    init(exporters=[ListExporter(SpanExportResult.FAILURE)])
    before = export_stats()
    step(1)
    step(2)
    assert flush() is False
    assert export_stats().since(before) == ExportStats(exported=0, failed=2, dropped=0, queued=0)
    assert flush() is True  # nothing new failed since


@pytest.mark.usefixtures("fresh_runtime")
def test_flush_reports_an_exporter_that_raised() -> None:
    class Raising(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            raise ConnectionError("collector is gone")

    init(exporters=[Raising()])
    before = export_stats()
    step(1)
    assert flush() is False
    assert export_stats().since(before).failed == 1


@pytest.mark.usefixtures("fresh_runtime")
def test_flush_keeps_its_timeout_while_an_exporter_is_stuck() -> None:
    exporter = ListExporter()
    exporter.release.clear()
    init(exporters=[exporter])
    step(1)
    assert flush(timeout_millis=100) is False
    assert exporter.entered.wait(10) and not exporter.release.is_set()
    exporter.release.set()
    assert flush() is True
    assert len(exporter.spans) == 1


@pytest.mark.usefixtures("fresh_runtime")
def test_a_full_export_queue_drops_and_counts_the_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    exporter = ListExporter()
    exporter.release.clear()
    init(exporters=[exporter])
    before = export_stats()
    step(0)
    assert exporter.entered.wait(10)  # span 0 is being exported, the queue is empty
    for i in range(1, 11):
        step(i)
    assert export_stats().since(before) == ExportStats(
        exported=0, failed=0, dropped=6, queued=4, exporting=1
    )
    exporter.release.set()
    assert flush() is False  # six spans were dropped since the previous flush
    assert export_stats().since(before) == ExportStats(exported=5, failed=0, dropped=6, queued=0)


@pytest.mark.usefixtures("fresh_runtime")
def test_shutdown_drops_and_counts_what_it_could_not_export_in_time() -> None:
    exporter = ListExporter()
    exporter.release.clear()
    init(exporters=[exporter])
    before = export_stats()
    step(0)
    assert flush(timeout_millis=0) is False  # starts exporting span 0, which gets stuck
    assert exporter.entered.wait(10)
    step(1)
    step(2)
    try:
        assert evaltrace.shutdown(timeout_millis=50) is False
        # the two queued spans and the one stuck in the exporter
        assert export_stats().since(before) == ExportStats(
            exported=0, failed=0, dropped=3, queued=0
        )
    finally:
        exporter.release.set()


def test_an_export_that_returns_after_shutdown_gave_up_on_it_is_not_counted_twice() -> None:
    exporter = ListExporter()
    exporter.release.clear()
    exported = threading.Event()
    returning = exporter.export

    def export(spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            return returning(spans)
        finally:
            exported.set()

    exporter.export = export  # type: ignore[method-assign]
    init(exporters=[exporter])
    before = export_stats()
    step(0)
    assert flush(timeout_millis=0) is False
    assert exporter.entered.wait(10)
    assert evaltrace.shutdown(timeout_millis=0) is False
    assert export_stats().since(before) == ExportStats(
        exported=0, failed=0, dropped=1, queued=0, exporting=0
    )
    exporter.release.set()
    assert exported.wait(10)
    evaltrace.flush()  # the export thread has counted (or not) under the queue's lock by now
    assert export_stats().since(before) == ExportStats(
        exported=0, failed=0, dropped=1, queued=0, exporting=0
    )


@pytest.mark.usefixtures("fresh_runtime")
def test_export_stats_count_the_spans_being_exported() -> None:
    exporter = ListExporter()
    exporter.release.clear()
    init(exporters=[exporter])
    before = export_stats()
    step(0)
    assert flush(timeout_millis=0) is False
    assert exporter.entered.wait(10)
    try:
        assert export_stats().since(before) == ExportStats(
            exported=0, failed=0, dropped=0, queued=0, exporting=1
        )
    finally:
        exporter.release.set()
    assert flush()
    assert export_stats().since(before) == ExportStats(
        exported=1, failed=0, dropped=0, queued=0, exporting=0
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.usefixtures("fresh_runtime")
def test_flush_to_a_dead_collector_returns_false_within_its_timeout() -> None:
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces")
    init(exporters=[exporter])
    step(1)
    assert flush(timeout_millis=300) is False


# Process exit --------------------------------------------------------------------------


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    full_env.update(env)
    # The timeout only stops a hung test; the configured exit timeout is far below it.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=20,
    )


def test_exit_is_not_held_up_by_an_exporter_that_never_returns() -> None:
    result = run_python(
        """
        import threading
        from opentelemetry.sdk.trace.export import SpanExporter
        import evaltrace

        class Stuck(SpanExporter):
            def export(self, spans):
                threading.Event().wait()

        evaltrace.init(exporters=[Stuck()])

        @evaltrace.wrap
        def f(x):
            return x

        for i in range(10):
            f(i)
        print("done")
        """,
        EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS="200",
    )
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout
    assert "not exported" in result.stderr


def test_exit_is_not_held_up_by_a_handler_that_never_returns() -> None:
    result = run_python(
        """
        import asyncio
        import evaltrace

        class Stuck(evaltrace.InstrumentationHandler):
            async def on_span(self, span):
                await asyncio.Event().wait()

        evaltrace.trace.add_handler(Stuck())

        @evaltrace.wrap
        def f(x):
            return x

        for i in range(10):
            f(i)
        print("done")
        """,
        EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS="200",
    )
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout


def test_exit_exports_what_is_still_queued() -> None:
    result = run_python(
        """
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
        import evaltrace

        class Printing(SpanExporter):
            def export(self, spans):
                print("exported", len(spans), flush=True)
                return SpanExportResult.SUCCESS

        evaltrace.init(exporters=[Printing()])

        @evaltrace.wrap
        def f(x):
            return x

        for i in range(7):
            f(i)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["exported", "7"]


def test_export_stats_at_exit_word_queued_spans_as_in_flight() -> None:
    result = run_python(
        """
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
        import evaltrace

        class Printing(SpanExporter):
            def export(self, spans):
                print("exported", len(spans), flush=True)
                return SpanExportResult.SUCCESS

        evaltrace.init(exporters=[Printing()])

        @evaltrace.wrap
        def f(x):
            return x

        for i in range(14):
            f(i)
        print(evaltrace.export_stats(), flush=True)
        """,
        OTEL_BSP_SCHEDULE_DELAY="60000",  # the batch waits: all 14 are queued when printed
    )
    assert result.returncode == 0, result.stderr
    stats, exported = result.stdout.splitlines()
    assert stats == (
        "0 spans exported, 0 failed, 0 dropped, 14 in flight (queued or being exported: "
        "evaltrace.flush() waits for them; exit exports them within the shutdown timeout)"
    )
    assert exported == "exported 14"


def test_export_stats_count_queued_and_exporting_spans_as_in_flight() -> None:
    stats = ExportStats(exported=3, failed=1, dropped=0, queued=5, exporting=2)

    assert stats.in_flight == 7
    assert str(stats).startswith("3 spans exported, 1 failed, 0 dropped, 7 in flight")


def test_a_forked_child_exports_its_own_spans() -> None:
    result = run_python(
        """
        import os
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
        import evaltrace

        class Printing(SpanExporter):
            def export(self, spans):
                print(os.getpid() == child_pid, [s.name for s in spans], flush=True)
                return SpanExportResult.SUCCESS

        evaltrace.init(exporters=[Printing()])

        @evaltrace.wrap
        def in_parent():
            return 1

        @evaltrace.wrap
        def in_child():
            return 2

        child_pid = None
        in_parent()
        pid = os.fork()
        if pid == 0:
            child_pid = os.getpid()
            in_child()
            assert evaltrace.flush(timeout_millis=10_000)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["False ['in_parent']", "True ['in_child']"]
