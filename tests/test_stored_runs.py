"""Stored traces from the command line and from dataset files: scored, nothing run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evaltrace
from evaltrace.datasets import Dataset, DatasetError, load_dataset, run_dataset
from evaltrace.results import CompletionStatus, RunResult
from span_factory import PARENT_CYCLES, span_line

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


ANYTHING = "def anything(evaluable):\n    return 1.0\n"


def looped_traces(folder: Path, loop: list[str]) -> Path:
    """A trace file of a sound trace and one whose parent links loop; checks.py passes both."""
    (folder / "checks.py").write_text(ANYTHING)
    path = folder / "runs.jsonl"
    path.write_text("\n".join([span_line(7, None, "top", trace_id=2), *loop]) + "\n")
    return path


@pytest.mark.parametrize("loop", PARENT_CYCLES.values(), ids=PARENT_CYCLES)
def test_a_parent_cycle_fails_its_trace_on_the_command_line(
    tmp_path: Path, loop: list[str]
) -> None:
    looped_traces(tmp_path, loop)

    result = cli(tmp_path, "test", "--traces", "runs.jsonl", "--evaluator", "checks.py:anything")

    assert result.returncode == 1, result.stdout + result.stderr
    sound, looped = saved(only_run(tmp_path / "evaltrace_results")).entries
    assert sound.status is CompletionStatus.SUCCESS
    assert looped.status is CompletionStatus.LOG_FILE_ERROR
    assert looped.error is not None and "runs.jsonl, line 2: " in looped.error.message


def test_the_results_folder_of_a_run_over_a_looped_trace_reads_back(tmp_path: Path) -> None:
    looped_traces(tmp_path, PARENT_CYCLES["two spans each other's parent"])

    cli(tmp_path, "test", "--traces", "runs.jsonl", "--evaluator", "checks.py:anything")

    kept = evaltrace.load_traces(only_run(tmp_path / "evaltrace_results") / "traces.jsonl")
    assert [root.span.name for root in kept] == ["top"]  # the looped trace is not copied


@pytest.mark.parametrize("loop", PARENT_CYCLES.values(), ids=PARENT_CYCLES)
def test_a_dataset_entry_whose_trace_has_a_parent_cycle_is_a_log_file_error(
    tmp_path: Path, loop: list[str]
) -> None:
    looped_traces(tmp_path, loop)
    dataset = {
        "evaluators": ["checks.py:anything"],
        "entries": [
            {"name": "sound", "trace": "runs.jsonl", "trace_id": f"{2:032x}"},
            {"name": "looped", "trace": "runs.jsonl", "trace_id": f"{1:032x}"},
        ],
    }
    (tmp_path / "looped.evaltrace.json").write_text(json.dumps(dataset))

    result = cli(tmp_path, "test", "looped.evaltrace.json")

    assert result.returncode == 1, result.stdout + result.stderr
    sound, looped = saved(only_run(tmp_path / "evaltrace_results")).entries
    assert sound.status is CompletionStatus.SUCCESS
    assert looped.status is CompletionStatus.LOG_FILE_ERROR
    assert looped.error is not None and "runs.jsonl, line 2: " in looped.error.message


DATASET_YAML = """\
name: recipes
evaluators: [ExactMatch]
entries:
  - entry_kwargs: {dish: soup}
    expectation: soup
"""

NOT_SPANS = {
    "empty": ("spans.jsonl", b"", "spans.jsonl holds no span, so there is nothing to"),
    "garbage": ("spans.jsonl", b"{{{\nnot a span\n", "spans.jsonl: no line of it is a span"),
    "binary": ("spans.jsonl", bytes(range(256)), "it holds binary data, not text"),
    "yaml dataset": (
        "recipes.evaltrace.yaml",
        DATASET_YAML.encode(),
        "this is a dataset file: run `evaltrace test recipes.evaltrace.yaml`",
    ),
    "json dataset": (
        "recipes.json",
        json.dumps({"evaluators": ["ExactMatch"], "entries": [{"entry_kwargs": {}}]}).encode(),
        "this is a dataset file: run `evaltrace test recipes.json`",
    ),
}


@pytest.mark.parametrize(("name", "content", "said"), NOT_SPANS.values(), ids=NOT_SPANS)
@pytest.mark.parametrize("command", [["test", "--traces"], ["trace"]], ids=["test", "trace"])
def test_a_file_holding_no_span_is_refused_with_exit_2_and_nothing_written(
    tmp_path: Path, command: list[str], name: str, content: bytes, said: str
) -> None:
    (tmp_path / name).write_bytes(content)
    more = ["--evaluator", "ExactMatch"] if command[0] == "test" else []

    result = cli(tmp_path, *command, name, *more)

    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "evaltrace_results").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("command", [["test", "--traces"], ["trace"]], ids=["test", "trace"])
def test_a_named_pipe_given_as_traces_is_refused(tmp_path: Path, command: list[str]) -> None:
    os.mkfifo(tmp_path / "spans.jsonl")
    more = ["--evaluator", "ExactMatch"] if command[0] == "test" else []

    result = cli(tmp_path, *command, "spans.jsonl", *more)

    assert result.returncode == 2
    assert "spans.jsonl is a named pipe, not a regular file" in result.stderr
    assert not (tmp_path / "evaltrace_results").exists()


def trace_dataset(folder: Path, trace: str) -> Path:
    (folder / "checks.py").write_text(ANYTHING)
    path = folder / "stored.evaltrace.json"
    path.write_text(
        json.dumps({"evaluators": ["checks.py:anything"], "entries": [{"trace": trace}]})
    )
    return path


def refused(folder: Path, said: str) -> None:
    """``dataset validate`` and ``test`` both refuse the dataset (exit 2); nothing is written."""
    validated = cli(folder, "dataset", "validate", "stored.evaltrace.json")
    tested = cli(folder, "test", "stored.evaltrace.json")

    for result in (validated, tested):
        assert result.returncode == 2, result.stdout + result.stderr
        assert re.search(
            r"stored\.evaltrace\.json(:\d+:\d+)?: entries\[0\]\.trace: ", result.stderr
        )
        assert said in result.stderr
        assert "ok " not in result.stdout
    assert not (folder / "evaltrace_results").exists()


def test_a_missing_trace_file_is_a_dataset_problem(tmp_path: Path) -> None:
    trace_dataset(tmp_path, "absent.jsonl")

    refused(tmp_path, f"no such file: {tmp_path / 'absent.jsonl'}")


def test_a_trace_path_that_leaves_the_dataset_folder_is_a_dataset_problem(tmp_path: Path) -> None:
    trace_dataset(tmp_path, "../../etc/passwd")

    refused(tmp_path, "the trace file '../../etc/passwd' leads out of the dataset's folder")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_trace_that_names_a_named_pipe_is_a_dataset_problem(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "spans.jsonl")
    trace_dataset(tmp_path, "spans.jsonl")

    refused(tmp_path, "is a named pipe, not a regular file")


def test_a_dataset_entry_whose_trace_file_holds_no_span_is_a_log_file_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("not a span\n")
    path = trace_dataset(tmp_path, "notes.txt")

    after = evaltrace.run(run_dataset(path))

    (entry,) = after.entries
    assert entry.status is CompletionStatus.LOG_FILE_ERROR
    assert entry.error is not None
    assert entry.error.message.startswith(f"{tmp_path / 'notes.txt'}: no line of it is a span")
