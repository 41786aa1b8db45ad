"""Malformed datasets through the command line: each exits 2 naming the file and the place.

The loader's catalogue (``test_datasets_catalogue.CASES``, 70 cases) goes through
``evaltrace test`` and ``evaltrace dataset validate``; more cases that only the command line
has (folders, output directories, entries without evaluators) follow. For each: exit code 2,
the message names the file and the place (location, or line and column), no traceback, and
nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaltrace.cli import main
from test_datasets_catalogue import APP, CASES, Case

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() puts the current folder on it


def materialize(case: Case, tmp_path: Path) -> Path:
    """Write the case's files and return the path to give the command."""
    for name, text in case.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    if case.setup is not None:
        return case.setup(tmp_path)
    path = tmp_path / case.filename
    if isinstance(case.content, bytes):
        path.write_bytes(case.content)
    else:
        path.write_text(case.content, encoding="utf-8")
    return path


def skip_unsupported(case: Case) -> None:
    if case.id == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    if case.id == "device" and not (
        Path("/dev/zero").exists() and stat.S_ISCHR(os.stat("/dev/zero").st_mode)
    ):
        pytest.skip("no /dev/zero on this platform")
    if case.max_bytes is not None:
        pytest.skip("the command line reads datasets with the default size limit")


def check_reported(case: Case, path: Path, code: int, err: str, out_dir: Path) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert str(path) in err
    if case.id == "directory":
        assert "no dataset file found" in err  # a folder given to the command is searched
    else:
        assert case.message in err, err
    if case.location is not None:  # the command line gives the place's line and column too
        assert re.search(rf"{re.escape(str(path))}(:\d+:\d+)?: {re.escape(case.location)}: ", err)
    if case.line is not None:
        assert f"{path}:{case.line}:" + (f"{case.column}:" if case.column else "") in err
    assert not out_dir.exists()  # nothing written, nothing half-written


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_evaltrace_test_reports_the_malformed_dataset(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skip_unsupported(case)
    path = materialize(case, tmp_path)
    out_dir = tmp_path / "results-out"

    code = main(["test", str(path), "--output-dir", str(out_dir)])

    check_reported(case, path, code, capsys.readouterr().err, out_dir)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_dataset_validate_reports_the_malformed_dataset(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skip_unsupported(case)
    path = materialize(case, tmp_path)

    code = main(["dataset", "validate", str(path)])

    check_reported(case, path, code, capsys.readouterr().err, tmp_path / "results-out")


# -- cases only the command line has ------------------------------------------------------------


def _valid(**changes: object) -> str:
    document: dict[str, object] = {
        "runnable": "app.py:run",
        "evaluators": ["ExactMatch"],
        "entries": [{"name": "a", "entry_kwargs": {"question": "hi"}, "expectation": "hi"}],
    }
    document.update(changes)
    return json.dumps(document, indent=2)


@dataclass
class CommandCase:
    id: str
    files: dict[str, str]
    """Files written to the folder the command runs in."""
    args: list[str]
    message: str
    """A fragment the error must hold."""
    names: str
    """What the message must name (a file, a folder, an option)."""


COMMAND_CASES = [
    CommandCase(
        "stray-json-named-as-a-dataset",
        {"app.py": APP, "tsconfig.evaltrace.json": '{"compilerOptions": {"strict": true}}'},
        ["test", "."],
        "unknown key 'compilerOptions'",
        "tsconfig.evaltrace.json",
    ),
    CommandCase(
        "folder-with-only-other-json",
        {"app.py": APP, "notes.json": '{"todo": []}'},
        ["test", "."],
        "no dataset file found",
        "notes.json",
    ),
    CommandCase(
        "entry-without-evaluators",
        {"app.py": APP, "x.evaltrace.json": _valid(evaluators=[])},
        ["test", "x.evaltrace.json"],
        "no evaluator scores entry 'a'",
        "x.evaltrace.json: entries: ",
    ),
    CommandCase(
        "output-dir-is-a-file",
        {"app.py": APP, "x.evaltrace.json": _valid(), "taken": "a file"},
        ["test", "x.evaltrace.json", "--output-dir", "taken/results"],
        "cannot write results to",
        "taken",
    ),
    CommandCase(
        "baseline-missing",
        {"app.py": APP, "x.evaltrace.json": _valid()},
        ["test", "x.evaltrace.json", "--baseline", "old/result.json"],
        "no such file",
        "old/result.json",
    ),
    CommandCase(
        "path-missing",
        {},
        ["test", "absent.evaltrace.json"],
        "no such file or folder",
        "absent.evaltrace.json",
    ),
    CommandCase(
        "unknown-option",
        {},
        ["test", "--concurency", "3"],
        "No such option '--concurency'",
        "--concurrency",
    ),
    CommandCase(
        "bad-concurrency",
        {},
        ["test", "--concurrency", "0"],
        "Invalid value for '--concurrency'",
        "x>=1",
    ),
    CommandCase(
        "duplicate-aggregators",
        {
            "app.py": APP,
            "x.evaltrace.json": _valid(
                evaluators=[
                    {
                        "name": "ExactMatch",
                        "aggregators": [
                            {"type": "confusion_matrix", "classes": ["a"]},
                            {"type": "confusion_matrix", "classes": ["b"]},
                        ],
                    }
                ]
            ),
        },
        ["dataset", "validate", "x.evaltrace.json"],
        "confusion_matrix may be declared only once",
        "x.evaltrace.json: evaluators: ",
    ),
]


@pytest.mark.parametrize("case", COMMAND_CASES, ids=[case.id for case in COMMAND_CASES])
def test_command_line_mistakes_exit_2_with_a_clear_message(
    case: CommandCase, tmp_path: Path
) -> None:
    for name, text in case.files.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run(
        [EVALTRACE, *case.args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )

    assert done.returncode == 2, done.stderr
    assert case.message in done.stderr
    file, _, place = case.names.partition(": ")
    if file.endswith(".evaltrace.json"):  # a place in the file: its line and column between
        assert re.search(rf"{re.escape(file)}(:\d+:\d+)?: {re.escape(place)}", done.stderr)
    else:
        assert case.names in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "evaltrace_results").exists()


def test_the_catalogues_hold_at_least_thirty_cases_each() -> None:
    assert len(CASES) >= 30
    assert len(CASES) + len(COMMAND_CASES) >= 30


@pytest.mark.parametrize(
    "case_id",
    ["json-missing-colon", "yaml-python-tag", "unknown-evaluator", "reference-module-raises"],
)
def test_the_console_script_reports_without_a_traceback(case_id: str, tmp_path: Path) -> None:
    (case,) = [case for case in CASES if case.id == case_id]
    path = materialize(case, tmp_path)

    done = subprocess.run(
        [EVALTRACE, "test", str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )

    assert done.returncode == 2
    assert case.message in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
