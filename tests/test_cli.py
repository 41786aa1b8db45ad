"""The ``evaltrace`` command line."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace import capture_traces, save_traces, wrap
from evaltrace.cli import main

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


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
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_trace_of_a_corrupt_file_names_the_line(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(trace_file.read_text() + '{"not": "a span"}\n')
    lines = bad.read_text().count("\n")
    assert main(["trace", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and f"line {lines}" in err


def test_trace_of_a_file_of_which_no_line_is_a_span_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a span"}\n')
    assert main(["trace", str(bad)]) == 2
    assert "bad.jsonl: no line of it is a span (line 1: " in capsys.readouterr().err


def test_unknown_trace_id_is_reported(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", str(trace_file), "--trace-id", "0" * 32]) == 1
    assert "no trace" in capsys.readouterr().err


def test_console_script_is_installed_and_runs() -> None:
    result = subprocess.run([EVALTRACE, "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("evaltrace ")


@pytest.fixture
def runs_file(tmp_path: Path) -> Path:
    """Two runs of one app in one file, one trace each."""
    with capture_traces() as handler:
        shop("A1")
        shop("B2")
    path = tmp_path / "runs.jsonl"
    save_traces(handler.trace, path)
    return path


def test_trace_selects_one_evaluable_per_trace_of_a_file_of_runs(
    runs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(runs_file), "--select", "root"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    headers = re.findall(r"^trace ([0-9a-f]{32})$", captured.out, flags=re.MULTILINE)
    assert len(set(headers)) == 2
    shipped = re.findall(r'"value": "(order .. shipped)"', captured.out)
    assert shipped == ["order A1 shipped", "order B2 shipped"]


def test_trace_id_selects_one_trace_of_a_file_of_runs(
    runs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["trace", str(runs_file)])
    second = re.findall(r"^trace ([0-9a-f]{32})$", capsys.readouterr().out, flags=re.MULTILINE)[1]

    assert main(["trace", str(runs_file), "--trace-id", second, "--select", "root"]) == 0
    out = capsys.readouterr().out
    assert "order B2 shipped" in out and "order A1 shipped" not in out


def test_a_selector_that_fails_on_one_trace_is_reported_for_that_trace(
    runs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(runs_file), "--select", "last_llm_call"]) == 1
    err = capsys.readouterr().err
    assert err.count("Found no LLM span") == 2
    assert len(set(re.findall(r"trace ([0-9a-f]{32}):", err))) == 2


def test_trace_reads_a_phoenix_export(capsys: pytest.CaptureFixture[str]) -> None:
    phoenix = Path(__file__).parent / "fixtures" / "phoenix_spans.json"

    assert main(["trace", str(phoenix), "--select", "last_llm_call"]) == 0

    out = capsys.readouterr().out
    assert out.count("[llm] ChatCompletion") == 2
    assert out.count('"content": "What is the capital of France?"') == 1
    assert out.count('"content": "Which city is the capital?"') == 1


def hostile_trace(path: Path) -> Path:
    """A stored span whose name, values and error carry terminal control sequences."""
    span = {
        "trace_id": "1" * 32,
        "span_id": "2" * 16,
        "name": "evil\x1b[2J\x1b]0;pwned\x07\rname\n[llm] forged",
        "start_time_ns": 1,
        "end_time_ns": 2,
        "status": {"code": "ERROR", "description": "boom\x1b[31m\x9b1m"},
        "attributes": {
            "openinference.span.kind": "CHAIN\x1b[5m",
            "input.value": json.dumps({"q": "\x1b[41mhi\x7f"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps("out\x9b2J\x1b[0m"),
            "output.mime_type": "application/json",
        },
    }
    path.write_text(json.dumps(span) + "\n")
    return path


def test_trace_output_carries_no_terminal_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = hostile_trace(tmp_path / "hostile.jsonl")

    assert main(["trace", str(path), "--select", "root"]) == 0

    out = capsys.readouterr().out
    assert CONTROL.findall(out) == []
    assert "evil\\u001b[2J" in out  # shown, not obeyed
    assert not any(line.startswith("[llm]") for line in out.splitlines())


def test_trace_errors_carry_no_terminal_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = hostile_trace(tmp_path / "hostile.jsonl")

    assert main(["trace", str(path), "--select", "last_llm_call"]) == 1

    err = capsys.readouterr().err
    assert "Found no LLM span" in err
    assert CONTROL.findall(err) == []


def test_an_evaluable_too_deep_to_print_is_reported_for_its_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    span = {
        "trace_id": "1" * 32,
        "span_id": "2" * 16,
        "name": "app",
        "start_time_ns": 1,
        "end_time_ns": 2,
        "attributes": {"output.value": "[" * 900 + "]" * 900},
    }
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(span) + "\n")

    assert main(["trace", str(path), "--select", "root"]) == 1

    captured = capsys.readouterr()
    assert "[unknown] app" in captured.out
    assert f"trace {'1' * 32}: cannot print root" in captured.err


@wrap(kind="agent")
def ship_all(count: int) -> None:
    for number in range(count):
        shop(f"order-{number}")


def test_trace_into_a_closed_pipe_exits_quietly_with_the_sigpipe_code(tmp_path: Path) -> None:
    with capture_traces() as handler:
        ship_all(3000)
    path = tmp_path / "big.jsonl"
    save_traces(handler.trace, path)

    reader = subprocess.Popen(
        [EVALTRACE, "trace", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert reader.stdout is not None and reader.stderr is not None
    first_line = reader.stdout.readline()
    # The outline is far larger than a pipe's buffer, so the command is still writing.
    reader.stdout.close()
    err = reader.stderr.read()
    reader.stderr.close()

    assert reader.wait() == 141
    assert first_line.strip()
    assert err == b""


def test_fake_llm_is_a_command_with_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fake-llm", "--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("Usage: evaltrace fake-llm")
    assert "--rules FILE" in shown and "--port" in shown
    assert main(["--help"]) == 0
    assert re.search(r"^  fake-llm +Serve a scripted", capsys.readouterr().out, re.M)


def test_fake_llm_on_a_port_in_use_exits_2_saying_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["fake-llm", "--port", str(port)]) == 2
    error = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in error and "0 for a free one" in error
