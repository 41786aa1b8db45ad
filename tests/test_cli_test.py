"""``evaltrace test`` through the console script, on dataset files and apps written by hand."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evaltrace import load_traces
from evaltrace.cli import main
from evaltrace.results import CompletionStatus, RunResult
from evaltrace.trace import split_traces

S = CompletionStatus
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))

APP = """\
import pathlib

import anyio
from evaltrace import wrap

HERE = pathlib.Path(__file__).parent


class App:
    async def setup(self) -> None:
        (HERE / "setup.marker").write_text("set up")

    async def run(self, question: str) -> str:
        if question == "boom":
            raise RuntimeError("kaboom")
        if question == "hang":
            (HERE / "hanging.marker").write_text("hanging")
            await anyio.sleep(3600)
        return wrap(question.upper(), purpose="output", name="answer")

    async def teardown(self) -> None:
        (HERE / "teardown.marker").write_text("torn down")
"""

CHECKS = """\
from evaltrace import Evaluation


def matches(evaluable):
    answer = evaluable.output_value("answer")
    return Evaluation(score=float(answer == evaluable.expectation), reasoning=f"got {answer!r}")


def length(evaluable):
    return Evaluation(score=min(1.0, len(evaluable.output_value("answer")) / 10), reasoning="len")


def broken(evaluable):
    raise ValueError("evaluator bug")
"""


def project(
    folder: Path,
    entries: list[dict[str, Any]],
    *,
    file: str = "faq.evaltrace.json",
    evaluators: list[Any] | None = None,
    name: str = "faq",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    document = {
        "name": name,
        "runnable": "app.py:App",
        "evaluators": evaluators if evaluators is not None else ["checks.py:matches"],
        "entries": entries,
    }
    path = folder / file
    path.write_text(json.dumps(document, indent=2))
    return path


def entry(name: str, question: str, expectation: str | None = None, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "entry_kwargs": {"question": question},
        "expectation": question.upper() if expectation is None else expectation,
        **more,
    }


def evaltrace(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1", **env},
    )


def saved_runs(folder: Path) -> list[RunResult]:
    return [
        RunResult.model_validate_json((run / "result.json").read_text())
        for run in sorted(folder.iterdir())
    ]


def test_a_passing_dataset_exits_0_and_writes_its_results_folder(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye")])

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 0, done.stderr
    assert "2 entries in 1 dataset: 2 passed" in done.stdout
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert [item.status for item in run.entries] == [S.SUCCESS, S.SUCCESS]
    assert f"results: {Path('evaltrace_results') / run.run_id}" in done.stdout
    assert (tmp_path / "teardown.marker").exists()


def test_a_failing_entry_exits_1_with_its_reasoning_in_the_report(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye", expectation="nope")])

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 1
    assert "FAILED_SCORE_ZERO" in done.stdout
    assert "matches: 0.00: got 'BYE'" in done.stdout
    assert "Traceback" not in done.stderr


def test_an_evaluator_that_raises_is_an_errored_entry(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello", evaluators=["...", "checks.py:broken"])])

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 1
    assert "ValueError: evaluator bug" in done.stdout
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert run.entries[0].status is S.ERROR
    assert [e.status for e in run.entries[0].evaluations] == ["scored", "errored"]


def test_a_runnable_that_raises_is_an_errored_entry(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("boom", "boom")])

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 1
    assert "runnable error: RuntimeError: kaboom" in done.stdout
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert [item.status for item in run.entries] == [S.SUCCESS, S.ERROR]


def test_a_runnable_past_the_timeout_is_a_timed_out_entry(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("hang", "hang")])

    done = evaltrace(tmp_path, "test", "--timeout", "0.5")

    assert done.returncode == 1
    assert "TIMED_OUT" in done.stdout
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert [item.status for item in run.entries] == [S.SUCCESS, S.TIMED_OUT]
    assert (tmp_path / "teardown.marker").exists()


def test_ctrl_c_exits_130_after_writing_the_finished_entries_and_tearing_down(
    tmp_path: Path,
) -> None:
    project(tmp_path, [entry("a", "one"), entry("b", "two"), entry("c", "hang"), entry("d", "x")])
    child = subprocess.Popen(
        [EVALTRACE, "test", "--concurrency", "1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CI": "1"},
    )
    marker = tmp_path / "hanging.marker"
    deadline = time.monotonic() + 60
    # One entry at a time: "c" starts hanging only after "a" and "b" have finished.
    while not marker.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the app never reached the hanging entry"
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)

    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted" in err
    assert (tmp_path / "teardown.marker").exists()
    (folder,) = (tmp_path / "evaltrace_results").iterdir()
    run = RunResult.model_validate_json((folder / "result.json").read_text())
    assert run.interrupted
    assert [item.name for item in run.entries] == ["a", "b"]
    assert len(split_traces(load_traces(folder / "traces.jsonl"))) == 2
    assert "(interrupted)" in out


def test_json_format_prints_each_run_result_on_a_line(tmp_path: Path) -> None:
    project(tmp_path / "one", [entry("hello", "hello")], name="one")
    project(tmp_path / "two", [entry("bye", "bye")], name="two")

    done = evaltrace(tmp_path, "test", "--format", "json")

    assert done.returncode == 0, done.stderr
    runs = [RunResult.model_validate_json(line) for line in done.stdout.splitlines()]
    assert [run.name for run in runs] == ["one", "two"]
    assert saved_runs(tmp_path / "evaltrace_results") == runs


def test_a_folder_is_searched_for_dataset_files_and_other_json_is_left_alone(
    tmp_path: Path,
) -> None:
    project(tmp_path / "datasets", [entry("a", "a")], name="first")
    project(
        tmp_path / "datasets" / "nested",
        [entry("b", "b")],
        file="second.evaltrace.yaml",
        name="second",
    )
    (tmp_path / "datasets" / "package.json").write_text('{"name": "not a dataset"}')
    (tmp_path / "datasets" / ".hidden").mkdir()
    (tmp_path / "datasets" / ".hidden" / "x.evaltrace.json").write_text("{")

    done = evaltrace(tmp_path, "test", "datasets", "--output-dir", "out")

    assert done.returncode == 0, done.stderr
    assert "2 entries in 2 datasets: 2 passed" in done.stdout
    assert sorted(run.name for run in saved_runs(tmp_path / "out")) == ["first", "second"]


def test_a_folder_search_says_which_skipped_files_are_datasets_named_otherwise(
    tmp_path: Path,
) -> None:
    project(tmp_path / "datasets", [entry("a", "a")], name="first")
    named_otherwise = tmp_path / "datasets" / "faq.evaltrace.json"
    (tmp_path / "datasets" / "second.json").write_text(named_otherwise.read_text())
    (tmp_path / "datasets" / "package.json").write_text('{"name": "not a dataset"}')
    (tmp_path / "datasets" / "results.json").write_text('{"entries": "not a list"}')

    done = evaltrace(tmp_path, "test", "datasets", "--no-scorecard")

    assert done.returncode == 0, done.stderr
    assert "1 entry in 1 dataset" in done.stdout
    assert (
        "datasets/second.json is a dataset file not named *.evaltrace.json|yaml|yml|jsonl, so "
        "the folder search skipped it: rename it (second.evaltrace.json) or give its path"
    ) in done.stderr
    assert "package.json" not in done.stderr
    assert "results.json" not in done.stderr

    named = evaltrace(tmp_path, "test", "datasets/second.json", "--no-scorecard")
    assert named.returncode == 0, named.stderr
    assert "1 entry in 1 dataset" in named.stdout
    assert "skipped" not in named.stderr


def test_a_folder_of_datasets_all_named_otherwise_names_them(tmp_path: Path) -> None:
    project(tmp_path, [entry("a", "a")], file="faq.json")
    (tmp_path / "package.json").write_text('{"name": "not a dataset"}')

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 2
    assert "no dataset file found" in done.stderr
    assert "faq.json is a dataset file" in done.stderr
    assert "rename it (faq.evaltrace.json) or give its path" in done.stderr
    assert not (tmp_path / "evaltrace_results").exists()


def test_k_selects_entries_by_name_or_description(tmp_path: Path) -> None:
    project(
        tmp_path,
        [
            entry("refund", "one"),
            entry("other", "two", description="about a REFUND"),
            entry("skipped", "boom"),
        ],
    )

    done = evaltrace(tmp_path, "test", "-k", "refund")

    assert done.returncode == 0, done.stderr
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert [item.name for item in run.entries] == ["refund", "other"]
    nothing = evaltrace(tmp_path, "test", "-k", "no-such-entry")
    assert nothing.returncode == 2
    assert "-k 'no-such-entry' matches no entry of 1 dataset" in nothing.stderr


def test_a_baseline_comparison_shows_what_got_worse_and_can_fail_the_run(tmp_path: Path) -> None:
    evaluators = ["checks.py:length"]
    project(tmp_path, [entry("long", "a long question")], evaluators=evaluators)
    first = evaltrace(tmp_path, "test", "--output-dir", "old")
    assert first.returncode == 0, first.stderr
    (baseline,) = (tmp_path / "old").iterdir()
    project(tmp_path, [entry("long", "shorter q")], evaluators=evaluators)

    compared = evaltrace(tmp_path, "test", "--baseline", str(baseline / "result.json"))
    strict = evaltrace(tmp_path, "test", "--baseline", str(baseline), "--fail-on-regression=any")
    significant = evaltrace(tmp_path, "test", "--baseline", str(baseline), "--fail-on-regression")

    assert compared.returncode == 0, compared.stderr  # still passing: 0.9 >= 0.5
    assert "1.0000" in compared.stdout and "0.9000" in compared.stdout
    assert "-0.1000" in compared.stdout and "worse" in compared.stdout
    assert "1 regression" in compared.stdout
    assert strict.returncode == 1
    # One entry a little worse is no evidence of a worse app: the gate holds.
    assert significant.returncode == 0, significant.stderr
    assert "no significant change" in significant.stdout


def test_an_unwritable_output_dir_exits_2_before_anything_runs(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello")])
    (tmp_path / "occupied").write_text("a file, not a folder")

    done = evaltrace(tmp_path, "test", "--output-dir", "occupied/results")

    assert done.returncode == 2
    assert "--output-dir: cannot write results to" in done.stderr
    assert "occupied" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "setup.marker").exists()


def test_module_references_resolve_from_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "app.py").write_text("def run(question: str) -> str:\n    return 'ok'\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "mypkg.app:run",
                "evaluators": ["ExactMatch"],
                "entries": [{"entry_kwargs": {"question": "q"}, "expectation": "ok"}],
            }
        )
    )

    done = evaltrace(tmp_path, "test", "sub")

    assert done.returncode == 0, done.stderr


def test_several_datasets_with_an_invalid_one_run_nothing(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello")])
    (tmp_path / "bad.evaltrace.json").write_text('{"entries": [{"entry_kwargs": 3}]}')

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 2
    assert "bad.evaltrace.json:1:31: entries[0].entry_kwargs: " in done.stderr
    assert not (tmp_path / "setup.marker").exists()
    assert not (tmp_path / "evaltrace_results").exists()


def test_a_setup_that_raises_is_reported_and_exits_1(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello")])
    app = (tmp_path / "app.py").read_text()
    (tmp_path / "app.py").write_text(app.replace('write_text("set up")', "write_text(1)"))

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 1
    assert "the runnable's setup raised TypeError" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["test"],
        ["dataset"],
        ["dataset", "create"],
        ["dataset", "list"],
        ["dataset", "validate"],
        ["dataset", "schema"],
        ["dataset", "save"],
        ["trace"],
        ["report"],
        ["diff"],
        ["demo"],
    ],
)
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: evaltrace {' '.join(command)}".rstrip())


def test_version_is_printed() -> None:
    done = subprocess.run([EVALTRACE, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("evaltrace ")


def test_importing_evaltrace_loads_neither_click_nor_rich() -> None:
    code = (
        "import sys, evaltrace\n"
        "evaltrace.wrap(1, purpose='output', name='x')\n"
        "print([m for m in ('click', 'rich', 'evaltrace.results', 'evaltrace.cli') "
        "if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_run_dataset_and_the_saved_result_are_public_names() -> None:
    import evaltrace
    from evaltrace.datasets import run_dataset
    from evaltrace.results import model as result

    assert evaltrace.run_dataset is run_dataset
    assert evaltrace.RunResult is result.RunResult
    assert evaltrace.results.EntryResult is result.EntryResult
    assert evaltrace.results.CompletionStatus is result.CompletionStatus


def test_each_run_folder_gets_its_scorecard_and_the_report_says_where(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye", expectation="nope")])

    done = evaltrace(tmp_path, "test")

    assert done.returncode == 1, done.stderr
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    page = Path("evaltrace_results") / run.run_id / "scorecard.html"
    assert f"scorecard: {page}" in done.stdout
    html = (tmp_path / page).read_text()
    assert "<!DOCTYPE html>" in html[:200] and '"hello"' in html and '"bye"' in html


def test_no_scorecard_leaves_it_out(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello")])

    done = evaltrace(tmp_path, "test", "--no-scorecard")

    assert done.returncode == 0, done.stderr
    assert "scorecard:" not in done.stdout
    (folder,) = (tmp_path / "evaltrace_results").iterdir()
    assert "scorecard.html" not in [path.name for path in folder.iterdir()]


def test_report_writes_a_scorecard_and_csv_from_a_saved_run(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye", expectation="nope")])
    evaltrace(tmp_path, "test", "--no-scorecard")
    (folder,) = (tmp_path / "evaltrace_results").iterdir()

    html = evaltrace(tmp_path, "report", str(folder), "--html", "card.html")
    csv_out = evaltrace(tmp_path, "report", str(folder / "result.json"), "--format", "csv")

    assert html.returncode == 0, html.stderr
    assert "scorecard: card.html" in html.stdout and (tmp_path / "card.html").is_file()
    assert csv_out.returncode == 0, csv_out.stderr
    header, *rows = csv_out.stdout.strip().splitlines()
    assert header.startswith("run_id,run,entry_index,entry,")
    assert len(rows) == 2 and {row.split(",")[3] for row in rows} == {"hello", "bye"}


def test_report_baseline_without_html_is_a_usage_error(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello")])
    evaltrace(tmp_path, "test", "--no-scorecard")
    (folder,) = (tmp_path / "evaltrace_results").iterdir()

    done = evaltrace(tmp_path, "report", str(folder), "--baseline", str(folder))

    assert done.returncode == 2
    assert "give --html FILE too" in done.stderr and "Traceback" not in done.stderr


FIXTURES = Path(__file__).parent / "fixtures" / "outcomes"


def test_outcomes_prints_the_success_rate_and_writes_csv(tmp_path: Path) -> None:
    done = evaltrace(
        tmp_path,
        "outcomes",
        str(FIXTURES / "runs"),
        "--tasks",
        str(FIXTURES / "tasks.json"),
        "--csv",
        "tasks.csv",
    )

    assert done.returncode == 0, done.stderr
    assert "success rate" in done.stdout
    assert (tmp_path / "tasks.csv").read_text().count("\n") > 1


def test_outcomes_of_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = evaltrace(tmp_path, "outcomes", "nowhere", "--tasks", str(FIXTURES / "tasks.json"))

    assert done.returncode == 2
    assert "nowhere" in done.stderr and "Traceback" not in done.stderr


def test_exit_zero_reports_failures_but_exits_0(tmp_path: Path) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye", expectation="nope")])

    done = evaltrace(tmp_path, "test", "--exit-zero", "--no-scorecard")

    assert done.returncode == 0, done.stderr
    assert "1 failed" in done.stdout or "FAILED" in done.stdout


def test_exit_zero_keeps_exit_2_for_an_invalid_dataset(tmp_path: Path) -> None:
    (tmp_path / "bad.evaltrace.json").write_text("{")

    done = evaltrace(tmp_path, "test", "--exit-zero")

    assert done.returncode == 2


NOTHING_READ_BACK = """
import sys

from evaltrace.results import scorecard
from evaltrace.results.model import RunResult


def refuse(*args, **kwargs):
    raise AssertionError("evaltrace test read its own run back")


# Every way back to a saved run: its result (load_result parses it so), its traces, a
# scorecard built from its folder. A baseline is read before the run starts.
baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
old = RunResult.model_validate_json(open(f"{baseline}/result.json").read()) if baseline else None
if old is not None:
    import evaltrace.results as results

    results.load_result = lambda path: old
RunResult.model_validate_json = classmethod(refuse)
scorecard.load_traces = refuse
scorecard.DatasetScorecard.from_folder = classmethod(refuse)

from evaltrace.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


def evaltrace_reading_nothing_back(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``evaltrace`` in a process where reading a saved run (but the baseline) fails."""
    return subprocess.run(
        [sys.executable, "-c", NOTHING_READ_BACK, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


def test_the_report_exit_code_and_scorecard_come_from_the_run_not_its_folder(
    tmp_path: Path,
) -> None:
    project(tmp_path, [entry("hello", "hello"), entry("bye", "bye", expectation="nope")])

    done = evaltrace_reading_nothing_back(tmp_path, "test")

    assert done.returncode == 1, done.stderr
    assert "read its own run back" not in done.stderr + done.stdout
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    page = (tmp_path / "evaltrace_results" / run.run_id / "scorecard.html").read_text()
    assert '"hello"' in page and '"bye"' in page
    assert "scorecard: " in done.stdout and "bye" in done.stdout


def test_json_format_and_a_baseline_read_nothing_back_either(tmp_path: Path) -> None:
    passing = [entry(f"hello {i}", f"hello {i}") for i in range(24)]  # past the report's list
    project(tmp_path, [*passing, entry("bye", "bye", expectation="nope")])
    first = evaltrace(tmp_path, "test", "--output-dir", "old")
    (baseline,) = (tmp_path / "old").iterdir()

    done = evaltrace_reading_nothing_back(
        tmp_path, "test", "--format", "json", "--baseline", str(baseline)
    )

    assert first.returncode == 1 and done.returncode == 1, done.stderr
    assert "read its own run back" not in done.stderr
    (line,) = done.stdout.splitlines()
    (run,) = saved_runs(tmp_path / "evaltrace_results")
    assert RunResult.model_validate_json(line) == run
    assert "over the 25 entries in both runs" in done.stderr and "0 regressions" in done.stderr
    page = (tmp_path / "evaltrace_results" / run.run_id / "scorecard.html").read_text()
    assert "25 entries matched by name, 0 only in the baseline" in page
    assert "25 entries in both runs, paired by name" in page
