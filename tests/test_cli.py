"""The ``evaltrace`` command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace import capture_traces, save_traces, wrap
from evaltrace.cli import main


@wrap(kind="agent")
def shop(order_id: str) -> str:
    return wrap(f"order {order_id} shipped", purpose="output", name="status")


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    with capture_traces() as handler:
        shop("A1")
    path = tmp_path / "run.jsonl"
    save_traces(handler.trace, path)
    return path


def test_trace_prints_the_outline_and_the_selected_evaluable(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(trace_file), "--select", "root"]) == 0
    out = capsys.readouterr().out
    assert "[agent] shop" in out
    assert 'output status: "order A1 shipped"' in out
    assert '"value": "order A1 shipped"' in out


def test_trace_of_a_missing_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl is not a file" in capsys.readouterr().err


def test_trace_of_a_corrupt_file_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a span"}\n')
    assert main(["trace", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "line 1" in err


def test_unknown_trace_id_is_reported(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", str(trace_file), "--trace-id", "0" * 32]) == 1
    assert "no trace" in capsys.readouterr().err


def test_console_script_is_installed_and_runs() -> None:
    script = Path(sys.executable).with_name("evaltrace")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("evaltrace ")
