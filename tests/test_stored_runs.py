"""Stored traces from the command line and from dataset files: scored, nothing run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evaltrace
from evaltrace.datasets import Dataset, DatasetError, load_dataset, run_dataset
from evaltrace.results import CompletionStatus, RunResult

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))

APP = """\
from evaltrace import wrap


def answer(question: str) -> str:
    return wrap(question.upper(), purpose="output", name="answer")
"""

CHECKS = """\
from evaltrace import Evaluation


def matches(evaluable):
    answer = evaluable.output_value("answer")
    return Evaluation(score=float(answer == evaluable.expectation), reasoning=f"got {answer!r}")


def length(evaluable):
    return Evaluation(score=min(1.0, len(evaluable.output_value("answer")) / 10), reasoning="len")
"""

QUESTIONS = {"short": "hi", "long": "what is the capital of france", "wrong": "paris"}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


def only_run(folder: Path) -> Path:
    (run,) = [path for path in folder.iterdir() if path.is_dir()]
    return run


def saved(run: Path) -> RunResult:
    return RunResult.model_validate_json((run / "result.json").read_text())


@pytest.fixture
def live(tmp_path: Path) -> tuple[Path, RunResult]:
    """A dataset run of the app, with its results folder (and its traces.jsonl)."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "checks.py").write_text(CHECKS)
    expected = {"short": "HI", "long": "WHAT IS THE CAPITAL OF FRANCE", "wrong": "LONDON"}
    dataset = {
        "name": "faq",
        "runnable": "app.py:answer",
        "evaluators": ["checks.py:matches", "checks.py:length"],
        "entries": [
            {"name": name, "entry_kwargs": {"question": q}, "expectation": expected[name]}
            for name, q in QUESTIONS.items()
        ],
    }
    (tmp_path / "faq.evaltrace.json").write_text(json.dumps(dataset))
    result = cli(tmp_path, "test", "faq.evaltrace.json", "--output-dir", "live")
    assert result.returncode == 1, result.stderr  # "wrong" fails
    run = only_run(tmp_path / "live")
    return run, saved(run)


def scores(result: RunResult) -> dict[str, list[float | None]]:
    return {
        entry.trace_ids[0]: [evaluation.score for evaluation in entry.evaluations]
        for entry in result.entries
    }


def test_the_traces_option_scores_a_stored_file_as_the_live_run_scored_it(
    live: tuple[Path, RunResult], tmp_path: Path
) -> None:
    run, before = live

    result = cli(
        tmp_path,
        "test",
        "--traces",
        str(run / "traces.jsonl"),
        "--evaluator",
        "checks.py:length",
        "--output-dir",
        "stored",
    )

    assert result.returncode == 1, result.stdout + result.stderr  # "hi" is too short
    stored_run = only_run(tmp_path / "stored")
    after = saved(stored_run)
    assert after.evaluators == ["length"]
    assert {k: v[1:] for k, v in scores(before).items()} == scores(after)
    assert (stored_run / "traces.jsonl").read_text().count("\n") == 3
    assert (stored_run / "scorecard.html").is_file()
    assert f"results: {Path('stored') / stored_run.name} (" in result.stdout


def test_a_corrupt_line_fails_its_trace_on_the_command_line(
    live: tuple[Path, RunResult], tmp_path: Path
) -> None:
    run, _ = live
    lines = (run / "traces.jsonl").read_text().splitlines()
    lines[0] = lines[0][:50]
    (tmp_path / "damaged.jsonl").write_text("\n".join(lines) + "\n")

    result = cli(tmp_path, "test", "--traces", "damaged.jsonl", "--evaluator", "checks.py:length")

    assert result.returncode == 1
    after = saved(only_run(tmp_path / "evaltrace_results"))
    assert [entry.status for entry in after.entries].count(CompletionStatus.LOG_FILE_ERROR) == 1
    assert "LOG_FILE_ERROR" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--traces", "x.jsonl"], "--traces needs an --evaluator"),
        (["--evaluator", "ExactMatch"], "--evaluator and --select go with --traces"),
        (["--traces", "missing.jsonl", "--evaluator", "ExactMatch"], "no such file"),
        (["--traces", "x.jsonl", "--evaluator", "ExactMatc"], "did you mean 'ExactMatch'"),
    ],
)
def test_the_traces_option_reports_bad_usage_with_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "x.jsonl").write_text("")

    result = cli(tmp_path, "test", *args)

    assert result.returncode == 2
    assert message in result.stderr


def stored_dataset(run: Path, before: RunResult, folder: Path) -> Path:
    entries: list[dict[str, Any]] = [
        {
            "name": entry.name,
            "trace": str(run / "traces.jsonl"),
            "trace_id": entry.trace_ids[0],
            "expectation": entry.expectation,
        }
        for entry in before.entries
    ]
    path = folder / "stored.evaltrace.json"
    path.write_text(
        json.dumps({"evaluators": ["checks.py:matches", "checks.py:length"], "entries": entries})
    )
    return path


def test_a_dataset_of_stored_traces_scores_them_without_a_runnable(
    live: tuple[Path, RunResult], tmp_path: Path
) -> None:
    run, before = live
    path = stored_dataset(run, before, tmp_path)

    after = evaltrace.run(run_dataset(path, output_dir=tmp_path / "out"))

    assert [(e.name, e.status) for e in after.entries] == [
        (e.name, e.status) for e in before.entries
    ]
    assert scores(after) == scores(before)
    assert after.settings["runnable"] == "stored traces"
    assert saved(only_run(tmp_path / "out")) == after


def test_a_dataset_entry_whose_trace_is_not_in_the_file_is_a_log_file_error(
    live: tuple[Path, RunResult], tmp_path: Path
) -> None:
    run, before = live
    path = stored_dataset(run, before, tmp_path)
    data = json.loads(path.read_text())
    data["entries"][1]["trace_id"] = "f" * 32
    del data["entries"][2]["trace_id"]  # the file holds three traces: which one?
    path.write_text(json.dumps(data))

    after = evaltrace.run(run_dataset(path))

    first, missing, ambiguous = after.entries
    assert first.status is before.entries[0].status  # scored as live
    assert missing.status is ambiguous.status is CompletionStatus.LOG_FILE_ERROR
    assert missing.error is not None and f"holds no trace {'f' * 32}" in missing.error.message
    assert ambiguous.error is not None and "holds 3 traces; give the entry's trace_id" in (
        ambiguous.error.message
    )


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            [{"trace": "t.jsonl", "entry_kwargs": {"q": 1}}],
            "entries[0].entry_kwargs: an entry scored from a stored trace runs nothing",
        ),
        ([{"entry_kwargs": {}, "trace_id": "a" * 32}], "entries[0].trace_id: trace_id without"),
        ([{"description": "x"}], "entries[0].entry_kwargs: missing required key 'entry_kwargs'"),
        (
            [{"trace": "t.jsonl"}, {"entry_kwargs": {}}],
            "entries[1]: entries scored from stored traces ('trace') and entries that run",
        ),
        ([{"trace": "t.jsonl", "trace_id": "xyz"}], "entries[0].trace_id"),
    ],
)
def test_stored_trace_entries_are_checked_when_the_dataset_loads(
    tmp_path: Path, entries: list[dict[str, Any]], message: str
) -> None:
    path = tmp_path / "d.evaltrace.json"
    path.write_text(json.dumps({"evaluators": ["ExactMatch"], "entries": entries}))

    with pytest.raises(DatasetError) as caught:
        load_dataset(path)

    assert message in str(caught.value)


def test_the_schema_asks_for_entry_kwargs_or_trace() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(evaltrace.datasets.dataset_json_schema())

    def valid(entry: dict[str, Any]) -> bool:
        return validator.is_valid({"entries": [entry]})

    assert valid({"entry_kwargs": {}}) and valid({"trace": "runs.jsonl", "trace_id": "a" * 32})
    assert not valid({"description": "neither"})
    assert not valid({"trace": "runs.jsonl", "trace_id": "not hex"})
    assert Dataset.model_validate({"entries": [{"trace": "runs.jsonl"}]}).stored
