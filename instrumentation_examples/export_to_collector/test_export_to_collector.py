"""The example runs offline: exported over OTLP to an in-process collector, and to a trace file
that is then scored with evaluate_traces and ``evaltrace test --traces``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from collector_checks import answers_from_the_tool

import evaltrace
from evaltrace import evaluate_traces, last_llm_call
from evaltrace.results import CompletionStatus
from evaltrace.testing import OTLPReceiver

HERE = Path(__file__).parent


def run_app(**env: str) -> str:
    """Run the app as a user would, configured by nothing but environment variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    result = subprocess.run(
        [sys.executable, str(HERE / "collector_app.py")],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_app_exports_its_runs_over_otlp_configured_by_otel_variables() -> None:
    with OTLPReceiver() as collector:
        output = run_app(
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
            OTEL_SERVICE_NAME="support-bot",
            EVALTRACE_PROJECT_NAME="support-bot",
        )

        assert "Your order A17 shipped on Monday." in output
        names = sorted(span.name for span in collector.spans)
        assert names.count("support_bot") == 2 and names.count("lookup_order") == 2
        assert names.count("ChatCompletion") == 4
        assert {span.resource["openinference.project.name"] for span in collector.spans} == {
            "support-bot"
        }


def test_the_stored_traces_are_scored_without_running_the_app(tmp_path: Path) -> None:
    trace_file = tmp_path / "support.jsonl"
    run_app(EVALTRACE_TRACE_FILE=str(trace_file))

    result = evaltrace.run(evaluate_traces(trace_file, [answers_from_the_tool]))

    assert [entry.status for entry in result.entries] == [CompletionStatus.SUCCESS] * 2
    calls = evaltrace.run(
        evaluate_traces(trace_file, [answers_from_the_tool], from_trace=last_llm_call)
    )
    assert calls.entries[0].eval_output is not None  # the model's last answer, selected


def test_evaltrace_test_scores_the_trace_file_from_the_command_line(tmp_path: Path) -> None:
    trace_file = tmp_path / "support.jsonl"
    run_app(EVALTRACE_TRACE_FILE=str(trace_file))

    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("evaltrace")),
            "test",
            "--traces",
            str(trace_file),
            "--evaluator",
            str(HERE / "collector_checks.py") + ":answers_from_the_tool",
            "--output-dir",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
