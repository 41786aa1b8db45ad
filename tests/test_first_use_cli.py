"""What a new user meets on the command line: reports that read well in a CI log, and hints
that say what a command takes when it is given the wrong thing.

The commands are the ones of issue 24, run on the files of ``tests/fixtures/first_use``
(copied to a fresh folder): a dataset with long evaluator names and a partly failing entry,
a trace file whose trace ids share their first eight digits, and a folder of three runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace.cli.main import main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "first_use"
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))
EVALUATORS = [
    "DocumentRecall",
    "DocumentMRR",
    "DocumentMAP",
    "DocumentNDCG",
    "AnswerExactMatch",
    "AnswerF1",
    "LevenshteinMatch",
]
LONG_NAME = "a-rather-long-entry-name-about-the-capital-of-italy"
RUNS = ["20261101T090000.000000Z", "20261102T090000.000000Z", "20261103T090000.000000Z"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the fixture files, with the saved runs in ``evaltrace_results``."""
    shutil.copytree(
        FIXTURES, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("saved_runs")
    )
    shutil.copytree(FIXTURES / "saved_runs", tmp_path / "evaltrace_results")
    return tmp_path


def evaltrace(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the ``evaltrace`` command with its standard output a pipe, as in a CI job."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")
    }
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment, "CI": "1", **env},
    )


def table_rows(report: str) -> list[list[str]]:
    """The cells of each row of the report's first table (separator lines left out)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("+"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("+"))
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in lines[start + 1 : end]
        if not line.startswith("|-")
    ]


def table_lines(report: str) -> list[str]:
    """The lines of the report's first table (the entries'; other tables have other widths)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("+"))
    end = start
    while end < len(lines) and lines[end].startswith(("|", "+")):
        end += 1
    return lines[start:end]


# -- 1. the report in a CI log ------------------------------------------------------------------


def test_a_piped_report_keeps_statuses_and_evaluator_names_whole(project: Path) -> None:
    done = evaltrace(project, "test", "recipes.evaltrace.yaml", "--no-scorecard")

    assert done.returncode == 1, done.stderr
    header, *rows = table_rows(done.stdout)
    assert header == ["entry", "status", *EVALUATORS]
    assert [row[1] for row in rows] == ["SUCCESS", "FAILED_PARTIAL_SCORE", "FAILED_PARTIAL_SCORE"]


def test_a_piped_report_gives_each_entry_one_unbroken_line_of_the_table(project: Path) -> None:
    done = evaltrace(project, "test", "recipes.evaltrace.yaml", "--no-scorecard")

    _, *rows = table_rows(done.stdout)
    assert [row[0] for row in rows] == ["france", "italy", LONG_NAME]
    assert [row[2:] for row in rows][1] == ["1.00 pass"] * 4 + ["0.00 FAIL"] * 3
    assert len({len(line) for line in table_lines(done.stdout)}) == 1  # every line whole


def test_columns_shortens_the_entry_names_before_anything_else(project: Path) -> None:
    done = evaltrace(project, "test", "recipes.evaltrace.yaml", "--no-scorecard", COLUMNS="160")

    header, *rows = table_rows(done.stdout)
    assert header == ["entry", "status", *EVALUATORS]
    assert all(len(line) <= 160 for line in table_lines(done.stdout))
    shortened = rows[2][0]
    assert shortened.endswith("...") and LONG_NAME.startswith(shortened[:-3])
    assert [row[1] for row in rows] == ["SUCCESS", "FAILED_PARTIAL_SCORE", "FAILED_PARTIAL_SCORE"]


def test_columns_too_narrow_for_the_names_widens_the_table_instead_of_breaking_them(
    project: Path,
) -> None:
    done = evaltrace(project, "test", "recipes.evaltrace.yaml", "--no-scorecard", COLUMNS="80")

    header, *rows = table_rows(done.stdout)
    assert header == ["entry", "status", *EVALUATORS]
    assert [row[1] for row in rows] == ["SUCCESS", "FAILED_PARTIAL_SCORE", "FAILED_PARTIAL_SCORE"]
    assert len({len(line) for line in table_lines(done.stdout)}) == 1


def test_trace_ids_as_entry_names_are_shortened_as_git_shortens_hashes(project: Path) -> None:
    done = evaltrace(
        project, "test", "--traces", "traces.jsonl", "--evaluator", "ValidJSON", "--no-scorecard"
    )

    assert done.returncode == 1, done.stderr
    _, *rows = table_rows(done.stdout)
    # The first two share eight digits: nine tell them apart.
    assert [row[0] for row in rows] == ["5f1e2d3c4", "5f1e2d3c9", "c0ffee00d"]
    failures = done.stdout.split("Entries that did not pass", 1)[1]
    assert "5f1e2d3c9b8a79685746352413021f0e  FAILED_SCORE_ZERO" in failures


# -- 6. hints that say what a command takes -------------------------------------------------------


def test_report_of_a_dataset_file_says_what_report_takes(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)

    assert main(["report", "recipes.evaltrace.yaml"]) == 2
    error = capsys.readouterr().err
    assert "recipes.evaltrace.yaml is a dataset file" in error
    assert "`evaltrace report` takes a run's folder or its result.json" in error
    assert "`evaltrace test recipes.evaltrace.yaml`" in error
    assert "JSON" not in error


def test_diff_of_a_dataset_file_says_what_diff_takes(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)

    assert main(["diff", "recipes.evaltrace.yaml", f"evaltrace_results/{RUNS[2]}"]) == 2
    error = capsys.readouterr().err
    assert "recipes.evaltrace.yaml is a dataset file" in error
    assert "`evaltrace diff` takes two runs' folders or their result.json files" in error


def test_diff_of_the_folder_of_runs_lists_its_latest_two(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)

    assert main(["diff", "evaltrace_results", f"evaltrace_results/{RUNS[2]}"]) == 2
    error = capsys.readouterr().err
    assert "evaltrace_results holds 3 runs" in error
    assert f"evaltrace diff evaltrace_results/{RUNS[1]} evaltrace_results/{RUNS[2]}" in error
    assert "interrupted" not in error


def test_report_of_the_folder_of_runs_lists_its_latest_two(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)

    assert main(["report", "evaltrace_results"]) == 2
    error = capsys.readouterr().err
    assert "evaltrace_results holds 3 runs" in error
    assert f"`evaltrace report evaltrace_results/{RUNS[2]}`" in error
    assert f"evaltrace diff evaltrace_results/{RUNS[1]} evaltrace_results/{RUNS[2]}" in error


def test_a_run_folder_without_its_result_still_says_the_run_may_have_been_interrupted(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "evaltrace_results" / RUNS[0] / "result.json").unlink()
    (project / "evaltrace_results" / RUNS[0] / "run.json").write_text("{}")
    monkeypatch.chdir(project)

    assert main(["report", f"evaltrace_results/{RUNS[0]}"]) == 2
    assert "was the run interrupted" in capsys.readouterr().err
