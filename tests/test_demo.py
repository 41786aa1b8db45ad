"""The demo: ``evaltrace test instrumentation_examples --exit-zero``, as ``dev.py demo`` runs it.

One subprocess on a machine without any model or judge configuration: it must report, write
each run's folder with its scorecard, fail exactly the entry that fails on purpose, and still
exit 0. Then ``dev.py demo`` prints ``evaltrace outcomes`` of the shipped Mindcraft experiment.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from evaltrace.results import load_result

ROOT = Path(__file__).resolve().parents[1]
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))
OUR_DATASETS = {
    "intent-classifier",
    "multi-agent-task",
    "noisy-judge",
    "rag-pipeline",
    "support-chatbot",
}
"""The examples' datasets this test knows of; other examples may add their own."""
INTENDED_FAILURE = ("intent-classifier", "refund-not-received")
"""The one entry of the demo that fails on purpose (its dataset, its name)."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = tmp_path_factory.mktemp("evaltrace_results")
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "EVALTRACE_JUDGE_", "OTEL_EXPORTER_"))
    }
    env["MULTI_AGENT_RUNS"] = str(tmp_path_factory.mktemp("agent-runs"))
    done = subprocess.run(
        [
            EVALTRACE,
            "test",
            "instrumentation_examples",
            "--exit-zero",
            "--output-dir",
            str(results),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, results


def test_the_demo_exits_zero_with_a_failed_entry(
    demo: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = demo

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "1 did not pass" in done.stdout


def test_the_report_shows_the_failure_with_its_reason(
    demo: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = demo

    failures = done.stdout.split("Entries that did not pass", 1)[1]
    assert "refund-not-received  FAILED_SCORE_ZERO" in failures
    assert "intent_matches: 0.00: predicted 'order_status', expected 'refund'" in failures
    assert "confusion_matrix" in done.stdout


def test_every_run_folder_holds_its_result_traces_and_scorecard(
    demo: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, results = demo
    folders = sorted(results.iterdir())

    names = {load_result(folder).name for folder in folders}
    assert names >= OUR_DATASETS
    for folder in folders:
        assert {"result.json", "traces.jsonl", "scorecard.html"} <= {
            p.name for p in folder.iterdir()
        }
        assert f"scorecard: {folder / 'scorecard.html'}" in done.stdout


def test_exactly_the_intended_entry_failed(
    demo: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, results = demo

    failed = [
        (run.name, entry.name)
        for run in map(load_result, sorted(results.iterdir()))
        if run.name in OUR_DATASETS
        for entry in run.entries
        if not entry.status.passed
    ]
    assert failed == [INTENDED_FAILURE]


def dev_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_ends_with_the_outcomes_of_the_mindcraft_experiment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dev = dev_module()
    commands: list[tuple[str, ...]] = []
    monkeypatch.setattr(dev, "_run", lambda *cmd: commands.append(tuple(map(str, cmd))) or 0)

    assert dev.demo([]) == 0

    assert commands[-1] == (str(dev.BIN / "evaltrace"), *dev.DEMO_OUTCOMES)


def test_the_demo_outcomes_command_prints_the_mindcraft_summary() -> None:
    done = subprocess.run(
        [EVALTRACE, *dev_module().DEMO_OUTCOMES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "12 task runs, 7 successful: success rate 58.3%"
    assert "  gpt-4o-mini           6 runs      4 successful   66.7%" in lines
    assert lines[-1].startswith(
        "  instrumentation_examples/multi_agent_task/mindcraft/experiments/gpt-4o-mini/"
        "multiagent_cooking_1_bread/jill_1.json, line 29: not valid JSON"
    )
