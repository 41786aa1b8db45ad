"""A run knows what it is: merges and resumes refuse what does not fit; one writer per folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaltrace.datasets import ResumeError, run_dataset
from evaltrace.results import (
    ENTRIES_FILE,
    RESULT_FILE,
    RUN_FILE,
    TRACES_FILE,
    MergeError,
    ResultsFolder,
    RunFolderBusyError,
    load_result,
    merge_results,
    read_run_header,
)
from test_scale import write_project

pytestmark = pytest.mark.anyio


def edit(dataset: Path, change: object) -> None:
    document = json.loads(dataset.read_text())
    change(document)  # type: ignore[operator]
    dataset.write_text(json.dumps(document))


async def shards(tmp_path: Path, between: object = None, **second: object) -> list[Path]:
    """Run shard 1/2 and 2/2 of a 12-entry dataset, calling ``between`` after the first."""
    dataset = write_project(tmp_path, 12)
    out = tmp_path / "shards"
    first = await run_dataset(dataset, output_dir=out, shard="1/2")
    if between is not None:
        between(dataset)  # type: ignore[operator]
    later = await run_dataset(dataset, output_dir=out, shard="2/2", **second)  # type: ignore[arg-type]
    return [out / first.run_id, out / later.run_id]


async def test_a_run_records_its_fingerprint_in_run_json(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 4)
    result = await run_dataset(dataset, output_dir=tmp_path / "out", threshold=0.7, timeout=9)

    fingerprint = read_run_header(tmp_path / "out" / result.run_id).fingerprint

    assert fingerprint is not None
    assert (fingerprint.threshold, fingerprint.timeout, fingerprint.shard) == (0.7, 9.0, "1/1")
    assert sorted(fingerprint.code) == ["app.py", "checks.py"]
    assert len(fingerprint.dataset) == 64 and len(fingerprint.evaluators) == 64
    assert result.fingerprint == fingerprint


async def test_merge_refuses_shards_scored_by_different_evaluators(tmp_path: Path) -> None:
    def drop_parity(document: dict[str, list[object]]) -> None:
        document["evaluators"] = document["evaluators"][:1]

    folders = await shards(tmp_path, lambda d: edit(d, drop_parity))

    with pytest.raises(MergeError, match=r"evaluators differ") as refused:
        merge_results(folders, tmp_path / "merged")
    assert str(folders[1]) in str(refused.value)
    assert not (tmp_path / "merged").exists() or not any((tmp_path / "merged").iterdir())


async def test_merge_refuses_shards_run_with_different_thresholds(tmp_path: Path) -> None:
    folders = await shards(tmp_path, threshold=0.9)

    with pytest.raises(MergeError, match=r"threshold differs: 0.5 in .* and 0.9 in "):
        merge_results(folders, tmp_path / "merged")


async def test_merge_refuses_shards_of_two_versions_of_the_dataset(tmp_path: Path) -> None:
    def fix_expectation(document: dict[str, list[dict[str, object]]]) -> None:
        document["entries"][0]["expectation"] = "NUMBER 0 0"

    folders = await shards(tmp_path, lambda d: edit(d, fix_expectation))

    with pytest.raises(MergeError, match=r"dataset differs"):
        merge_results(folders, tmp_path / "merged")


async def test_merge_refuses_shards_whose_code_changed_between_them(tmp_path: Path) -> None:
    folders = await shards(
        tmp_path,
        lambda d: (d.parent / "checks.py").write_text(
            (d.parent / "checks.py").read_text() + "\n# fixed\n"
        ),
    )

    with pytest.raises(MergeError, match=r"code differs: checks.py"):
        merge_results(folders, tmp_path / "merged")


async def test_merge_with_force_merges_shards_that_differ_and_records_it(tmp_path: Path) -> None:
    folders = await shards(tmp_path, threshold=0.9)

    merged = load_result(merge_results(folders, tmp_path / "merged", force=True))

    assert len(merged.entries) == 12
    assert merged.settings["forced"] == ["threshold"]


async def test_merge_refuses_a_shard_missing_its_traces(tmp_path: Path) -> None:
    folders = await shards(tmp_path)
    (folders[1] / TRACES_FILE).unlink()

    with pytest.raises(MergeError, match=rf"{folders[1]} has no {TRACES_FILE}"):
        merge_results(folders, tmp_path / "merged")


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltrace", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "CI": "1"},
        timeout=120,
    )


def test_evaltrace_merge_of_shards_that_differ_exits_2_and_force_merges(tmp_path: Path) -> None:
    write_project(tmp_path, 8)
    for shard, threshold in (("1/2", "0.5"), ("2/2", "0.8")):
        done = cli(
            tmp_path,
            "test",
            "--shard",
            shard,
            "--threshold",
            threshold,
            "--no-scorecard",
            "--output-dir",
            "shards",
        )
        assert done.returncode in (0, 1), done.stderr
    folders = sorted(str(path) for path in (tmp_path / "shards").iterdir())

    refused = cli(tmp_path, "merge", *folders, "--no-scorecard")
    forced = cli(tmp_path, "merge", *folders, "--no-scorecard", "--force")

    assert refused.returncode == 2
    assert "threshold differs" in refused.stderr and "--force" in refused.stderr
    assert forced.returncode == 0, forced.stderr


def interrupted_run(tmp_path: Path, count: int = 10, keep: int = 4) -> tuple[Path, Path]:
    """A finished run made to look interrupted: no result.json, ``keep`` entries written."""
    dataset = write_project(tmp_path, count)
    done = cli(tmp_path, "test", dataset.name, "--no-scorecard")
    assert done.returncode == 1, done.stderr  # entries 0, 4, 8 fail on purpose
    (folder,) = (tmp_path / "evaltrace_results").iterdir()
    (folder / RESULT_FILE).unlink()
    lines = (folder / ENTRIES_FILE).read_text().splitlines(keepends=True)
    kept = sorted(lines, key=lambda line: json.loads(line)["index"])[:keep]
    (folder / ENTRIES_FILE).write_text("".join(kept))
    return dataset, folder


def test_resume_refuses_a_run_whose_evaluators_were_edited(tmp_path: Path) -> None:
    dataset, folder = interrupted_run(tmp_path)
    edit(dataset, lambda document: document.update(evaluators=["checks.py:exact"]))
    before = (folder / ENTRIES_FILE).read_bytes()

    refused = cli(tmp_path, "test", "--resume", str(folder), "--no-scorecard")

    assert refused.returncode == 2
    assert str(folder) in refused.stderr and "evaluators differ" in refused.stderr
    assert (folder / ENTRIES_FILE).read_bytes() == before
    forced = cli(tmp_path, "test", "--resume", str(folder), "--no-scorecard", "--force")
    assert forced.returncode == 1, forced.stderr
    assert len(load_result(folder).entries) == 10


async def test_resume_refuses_a_run_made_with_another_threshold(tmp_path: Path) -> None:
    dataset, folder = interrupted_run(tmp_path)

    with pytest.raises(ResumeError, match=r"threshold differs: 0.5 .* and 0.8"):
        await run_dataset(dataset, resume=folder, threshold=0.8)


def test_a_refused_resume_changes_nothing_in_the_folder(tmp_path: Path) -> None:
    _, folder = interrupted_run(tmp_path)
    lines = (folder / ENTRIES_FILE).read_text().splitlines(keepends=True)
    (folder / ENTRIES_FILE).write_text("".join(lines) + lines[0])  # an entry written twice
    files = {name: (folder / name).read_bytes() for name in (ENTRIES_FILE, TRACES_FILE, RUN_FILE)}

    refused = cli(tmp_path, "test", "--resume", str(folder), "--no-scorecard")

    assert refused.returncode == 2
    assert "twice" in refused.stderr
    assert {name: (folder / name).read_bytes() for name in files} == files


def test_a_run_folder_being_written_refuses_a_second_writer(tmp_path: Path) -> None:
    _, folder = interrupted_run(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from evaltrace.results import ResultsFolder\n"
            "folder = ResultsFolder.reopen(sys.argv[1])\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = (folder / ENTRIES_FILE).read_bytes()

        second = cli(tmp_path, "test", "--resume", str(folder), "--no-scorecard")

        assert second.returncode == 2
        assert f"{folder} is being written by process {holder.pid}" in second.stderr
        assert (folder / ENTRIES_FILE).read_bytes() == before
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with pytest.raises(RunFolderBusyError):
        with ResultsFolder.reopen(folder):
            ResultsFolder.reopen(folder)


def test_two_resumes_at_once_finish_the_run_once(tmp_path: Path) -> None:
    _, folder = interrupted_run(tmp_path)
    command = [sys.executable, "-m", "evaltrace", "test", "--resume", str(folder), "--no-scorecard"]
    env = {**os.environ, "CI": "1"}
    first = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    time.sleep(0.05)
    second = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    first.wait(timeout=120)

    codes = sorted([first.returncode, second.returncode])
    assert codes == [1, 2] or codes == [1, 1]  # one refused while the other wrote, or one after
    result = load_result(folder)
    assert [entry.index for entry in result.entries] == list(range(10))
    if first.stderr is not None:
        first.stderr.close()
