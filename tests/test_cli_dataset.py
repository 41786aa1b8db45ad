"""``evaltrace dataset ...``, ``evaltrace trace --runnable`` and ``evaltrace report``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from evaltrace import load_traces, save_traces
from evaltrace.cli import main
from evaltrace.datasets import dataset_json_schema, load_dataset
from evaltrace.trace import split_traces
from span_factory import Spans

APP = """\
from evaltrace import wrap


def fetch_profile(user: str) -> dict:
    raise RuntimeError("the real database is never called in a dataset run")


def greet(user: str) -> str:
    profile = wrap(fetch_profile, purpose="input", name="profile")(user)
    return wrap(f"Hello {profile['name']}", purpose="output", name="greeting")


def live(user: str) -> str:
    profile = wrap({"name": user.title()}, purpose="input", name="profile")
    return wrap(f"Hello {profile['name']}", purpose="output", name="greeting")
"""


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() puts the current folder on it


def test_dataset_create_writes_a_valid_file_that_names_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text("def run(question: str) -> str:\n    return 'Paris'\n")

    assert main(["dataset", "create", "faq"]) == 0
    assert main(["dataset", "create", "more/geo", "--format", "yaml"]) == 0

    created = json.loads((tmp_path / "faq.evaltrace.json").read_text())
    assert created["$schema"] == "./dataset.schema.json"
    assert json.loads((tmp_path / "dataset.schema.json").read_text()) == dataset_json_schema()
    assert yaml.safe_load((tmp_path / "more" / "geo.evaltrace.yaml").read_text())["name"] == "geo"
    assert (tmp_path / "more" / "dataset.schema.json").exists()
    assert main(["dataset", "validate", "faq.evaltrace.json"]) == 0
    assert "ok  faq.evaltrace.json  (1 entry)" in capsys.readouterr().out
    assert main(["test", "faq.evaltrace.json"]) == 0


def test_dataset_create_never_overwrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "faq.evaltrace.json").write_text("keep me")

    assert main(["dataset", "create", "faq"]) == 2

    assert "faq.evaltrace.json exists already" in capsys.readouterr().err
    assert (tmp_path / "faq.evaltrace.json").read_text() == "keep me"


def test_dataset_list_shows_each_file_with_its_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.evaltrace.json").write_text(
        json.dumps({"runnable": "app.py:run", "entries": [{"entry_kwargs": {}}] * 1})
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.evaltrace.yaml").write_text(
        "name: bee\nentries:\n  - entry_kwargs: {}\n  - entry_kwargs: {}\n"
    )
    (tmp_path / "sub" / "c.evaltrace.json").write_text("{")

    assert main(["dataset", "list"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["dataset", "entries", "runnable", "file"]
    assert lines[1].split() == ["a", "1", "app.py:run", "a.evaltrace.json"]
    assert lines[2].split() == ["bee", "2", "-", "sub/b.evaltrace.yaml"]
    assert lines[3].split() == ["-", "-", "invalid:", "1", "problem", "sub/c.evaltrace.json"]


def test_dataset_validate_reports_every_problem_of_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text("def run(question: str) -> str:\n    return question\n")
    (tmp_path / "good.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:run",
                "evaluators": ["ExactMatch"],
                "entries": [{"entry_kwargs": {"question": "q"}}],
            }
        )
    )
    (tmp_path / "bad.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:run",
                "evaluators": ["Factualty"],
                "entries": [{"entry_kwargs": {"questoin": "q"}}],
            }
        )
    )

    assert main(["dataset", "validate"]) == 2

    captured = capsys.readouterr()
    assert "ok  good.evaltrace.json  (1 entry)" in captured.out
    assert "3 problems in dataset bad.evaltrace.json:" in captured.err
    # one line holds the whole file: each problem names its column
    assert "bad.evaltrace.json:1:43: evaluators[0]: unknown evaluator 'Factualty'" in captured.err
    assert "did you mean 'question'?" in captured.err


def test_dataset_schema_prints_the_json_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dataset", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == dataset_json_schema()
    assert main(["dataset", "schema", "-o", "schema.json"]) == 0
    assert json.loads((tmp_path / "schema.json").read_text()) == dataset_json_schema()


def test_trace_runs_the_app_once_and_stores_its_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "kwargs.json").write_text('{"user": "ada"}')

    code = main(
        ["trace", "--runnable", "app.py:live", "--input", "kwargs.json", "--select", "root"]
    )

    assert code == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "[chain] app.py:live" in captured.out
    assert '"value": "Hello Ada"' in captured.out
    assert "spans written to trace.jsonl" in captured.err
    (trace,) = split_traces(load_traces(tmp_path / "trace.jsonl"))
    assert trace[0].span.input == {"user": "ada"}


def test_trace_of_a_runnable_with_the_wrong_arguments_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "kwargs.json").write_text('{"usr": "ada"}')

    assert main(["trace", "--runnable", "app.py:live", "--input", "kwargs.json"]) == 2

    err = capsys.readouterr().err
    assert "kwargs.json: missing required argument 'user'" in err
    assert "did you mean 'user'?" in err
    assert not (tmp_path / "trace.jsonl").exists()


def trace_ada(folder: Path) -> None:
    """Store, as folder/trace.jsonl, one run of app.py:live for the user ada."""
    (folder / "app.py").write_text(APP)
    (folder / "kwargs.json").write_text('{"user": "ada"}')
    assert main(["trace", "--runnable", "app.py:live", "--input", "kwargs.json"]) == 0


def test_dataset_save_appends_an_entry_made_from_a_stored_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_ada(tmp_path)
    (tmp_path / "greetings.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:greet",
                "evaluators": ["ExactMatch"],
                "entries": [
                    {
                        "name": "grace",
                        "entry_kwargs": {"user": "grace"},
                        "eval_input": [{"name": "profile", "value": {"name": "Grace"}}],
                        "expectation": "Hello Grace",
                    }
                ],
            }
        )
    )
    capsys.readouterr()

    assert main(["dataset", "save", "greetings", "--from-trace", "trace.jsonl"]) == 0

    assert "added 1 entry to greetings.evaltrace.json" in capsys.readouterr().out
    saved = load_dataset(tmp_path / "greetings.evaltrace.json")
    added = saved.entries[1]
    assert added.name is not None and added.name.startswith("trace-")
    assert added.entry_kwargs == {"user": "ada"}
    assert [(item.name, item.value) for item in added.eval_input] == [("profile", {"name": "Ada"})]
    assert added.expectation == "Hello Ada"
    # The saved entry runs: its profile is served, the real fetch is never called.
    assert main(["test", "greetings.evaltrace.json"]) == 0


def test_dataset_save_creates_the_dataset_when_there_is_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_ada(tmp_path)

    code = main(
        ["dataset", "save", "new", "--from-trace", "trace.jsonl", "--select", "name:app.py:live"]
    )

    assert code == 0, capsys.readouterr().err
    created = load_dataset(tmp_path / "new.evaltrace.json")
    assert created.name == "new" and created.entries[0].expectation == "Hello Ada"
    # The schema the file names is written beside it, as `dataset create` does.
    assert (tmp_path / "dataset.schema.json").is_file()
    # A runnable is never taken from the traces: the user names it.
    assert created.runnable is None
    assert "names no runnable" in capsys.readouterr().err
    assert main(["test", "new.evaltrace.json"]) == 2


def test_dataset_save_never_takes_code_to_run_from_a_span_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "pwned"
    spans = Spans()
    root = spans.start(
        "os:system",
        0,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"command": f"touch {marker}"}),
            "input.mime_type": "application/json",
            "output.value": "0",
        },
    )
    spans.end(root, 5)
    save_traces(spans.finished(), tmp_path / "prod.jsonl")

    assert main(["dataset", "save", "prod", "--from-trace", "prod.jsonl"]) == 0

    document = json.loads((tmp_path / "prod.evaltrace.json").read_text())
    assert "runnable" not in document
    assert "names no runnable" in capsys.readouterr().err
    assert main(["test", "prod.evaltrace.json"]) == 2
    assert "runnable" in capsys.readouterr().err
    assert not marker.exists()


def test_dataset_save_keeps_the_entry_names_a_run_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "greetings.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:live",
                "evaluators": ["ExactMatch"],
                "entries": [
                    {"name": "ada", "entry_kwargs": {"user": "ada"}, "expectation": "Hello Ada"},
                    {"name": "bob", "entry_kwargs": {"user": "bob"}, "expectation": "Hello Bob"},
                ],
            }
        )
    )
    assert main(["test", "greetings.evaltrace.json", "--no-scorecard"]) == 0
    (run,) = (tmp_path / "evaltrace_results").iterdir()
    capsys.readouterr()

    code = main(["dataset", "save", "again", "--from-trace", str(run / "traces.jsonl")])

    assert code == 0, capsys.readouterr().err
    again = load_dataset(tmp_path / "again.evaltrace.json")
    assert sorted(entry.name or "" for entry in again.entries) == ["ada", "bob"]


def test_dataset_save_names_the_runnable_given_or_says_it_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_ada(tmp_path)
    assert (
        main(
            [
                "dataset",
                "save",
                "given",
                "--from-trace",
                "trace.jsonl",
                "--runnable",
                "app.py:greet",
            ]
        )
        == 0
    )
    assert load_dataset(tmp_path / "given.evaltrace.json").runnable == "app.py:greet"

    spans = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    for span in spans:
        span["name"] = "live"  # as a production app's root span is named
    (tmp_path / "prod.jsonl").write_text("".join(json.dumps(span) + "\n" for span in spans))
    capsys.readouterr()
    assert main(["dataset", "save", "bare", "--from-trace", "prod.jsonl"]) == 0
    assert "names no runnable" in capsys.readouterr().err
    assert load_dataset(tmp_path / "bare.evaltrace.json").runnable is None


def test_dataset_save_refuses_a_runnable_that_is_not_a_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_ada(tmp_path)
    capsys.readouterr()

    code = main(["dataset", "save", "x", "--from-trace", "trace.jsonl", "--runnable", "greet"])

    assert code == 2
    assert "--runnable: 'greet' is not a reference; give 'path/to/app.py:name'" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x.evaltrace.json").exists()


def test_dataset_save_of_a_missing_trace_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dataset", "save", "x", "--from-trace", "absent.jsonl"]) == 2
    assert "--from-trace: absent.jsonl: no such file" in capsys.readouterr().err


def test_report_prints_a_saved_run_as_text_or_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text("def run(question: str) -> str:\n    return 'Paris'\n")
    assert main(["dataset", "create", "faq"]) == 0
    assert main(["test", "--output-dir", "out"]) == 0
    (folder,) = (tmp_path / "out").iterdir()
    capsys.readouterr()

    assert main(["report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert main(["report", str(folder / "result.json"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)

    assert "| example | SUCCESS | 1.00 pass" in text
    assert data["run_id"] == folder.name
    assert main(["report", "nowhere"]) == 2
    assert "nowhere: no such file" in capsys.readouterr().err


def test_progress_is_plain_lines_on_stderr_in_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    (tmp_path / "app.py").write_text("def run(question: str) -> str:\n    return 'Paris'\n")
    assert main(["dataset", "create", "faq"]) == 0
    capsys.readouterr()

    assert main(["test"]) == 0

    assert "faq: 1/1 entries, 0 not passed" in capsys.readouterr().err
