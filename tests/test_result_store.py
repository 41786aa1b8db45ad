"""Result folders written by an earlier release open with every command of this one.

``tests/fixtures/release_0_1_0`` holds folders evaltrace 0.1.0 wrote (see its README); they
are never rewritten. Each test works on a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace.results import load_result, read_run_header

RELEASE = Path(__file__).parent / "fixtures" / "release_0_1_0"


@pytest.fixture
def old(tmp_path: Path) -> Path:
    copy = tmp_path / "old"
    shutil.copytree(RELEASE, copy)
    return copy


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltrace", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "CI": "1"},
        timeout=120,
    )


def test_an_old_result_loads_with_its_entries_and_statuses(old: Path) -> None:
    result = load_result(old / "runs" / "latest")

    assert result.name == "intents" and len(result.entries) == 6
    assert result.status_counts == {"SUCCESS": 4, "FAILED_PARTIAL_SCORE": 1, "ERROR": 1}
    assert result.entry_count == 6 and not result.passed
    assert sorted(result.dataset_results) == ["label::fscore"]
    assert read_run_header(old / "runs" / "latest").name == "intents"


def test_evaltrace_report_prints_an_old_run(old: Path) -> None:
    done = cli(old, "report", "runs/latest")

    assert done.returncode == 0, done.stderr
    assert "intents" in done.stdout and "wrong-1" in done.stdout and "boom" in done.stdout


def test_evaltrace_report_writes_the_scorecard_of_an_old_run(old: Path) -> None:
    done = cli(old, "report", "runs/baseline", "--html", "card.html")

    assert done.returncode == 0, done.stderr
    page = (old / "card.html").read_text()
    assert "intents" in page and "refund-1" in page


def test_evaltrace_diff_compares_two_old_runs(old: Path) -> None:
    done = cli(old, "diff", "runs/baseline", "runs/latest")

    assert done.returncode == 0, done.stderr
    assert "intents" in done.stdout


def test_evaltrace_merge_merges_old_shards(old: Path) -> None:
    done = cli(old, "merge", "shards/shard-1", "shards/shard-2", "--output-dir", "merged")

    assert done.returncode == 0, done.stderr
    (folder,) = (old / "merged").iterdir()
    merged = load_result(folder)
    assert sorted(entry.name for entry in merged.entries) == sorted(
        entry.name for entry in load_result(old / "runs" / "latest").entries
    )
    assert (folder / "scorecard.html").is_file()


def test_evaltrace_test_resumes_an_old_interrupted_run(old: Path) -> None:
    folder = old / "runs" / "interrupted"

    done = cli(old, "test", "--resume", str(folder), "--no-scorecard")

    assert done.returncode == 1, done.stderr  # wrong-1 fails and boom errors, as before
    result = load_result(folder)
    assert len(result.entries) == 6
    lines = (folder / "entries.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["index"] for line in lines) == list(range(6))
