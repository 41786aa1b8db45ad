"""Past one process: shards and their merge, streaming results, resuming a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaltrace import load_traces
from evaltrace.datasets import (
    ResumeError,
    Shard,
    ShardSpecError,
    load_dataset,
    run_dataset,
    shard_positions,
)
from evaltrace.datasets.sharding import order_by_key, shard_key
from evaltrace.results import (
    ENTRIES_FILE,
    RESULT_FILE,
    TRACES_FILE,
    DuplicateEntryError,
    MergeError,
    ResultsFolder,
    RunResult,
    iter_entries,
    load_result,
    merge_results,
    scan_entries,
)
from evaltrace.trace import split_traces

ROOT = Path(__file__).resolve().parents[1]

APP = """\
import os
from pathlib import Path

import anyio
from evaltrace import wrap


async def run(question: str, number: int) -> str:
    gate = os.environ.get("EVALTRACE_TEST_GATE")
    if gate and number >= 5:
        while not Path(gate).exists():  # the test opens the gate only for the resumed run
            await anyio.sleep(0.01)
    return wrap(f"{question.upper()} {number * 2}", purpose="output", name="answer")
"""

CHECKS = """\
from evaltrace import Evaluation


def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


def parity(evaluable):
    number = int(evaluable.output_value("answer").split()[-1]) // 2
    actual = "even" if number % 2 == 0 else "odd"
    expected = evaluable.eval_metadata["parity"]
    return Evaluation(score=float(actual == expected), label=actual,
                      details={"expected": expected, "actual": actual})
"""

AGGREGATORS = [
    {"type": "fscore", "classes": ["even", "odd"]},
    {"type": "precision", "classes": ["even", "odd"], "averaging": "micro"},
    {"type": "confusion_matrix", "classes": ["even", "odd"]},
]


def write_project(folder: Path, count: int, name: str = "numbers") -> Path:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    entries = [
        {
            "name": f"n{i:03d}",
            "entry_kwargs": {"question": f"number {i}", "number": i},
            "expectation": f"NUMBER {i} {2 * i}" if i % 4 else "wrong",
            # every fifth label is wrong, so that precision and recall are not all 1
            "eval_metadata": {"parity": ("even" if i % 2 == 0 else "odd") if i % 5 else "odd"},
        }
        for i in range(count)
    ]
    document = {
        "name": name,
        "runnable": "app.py:run",
        "evaluators": ["checks.py:exact", {"name": "checks.py:parity", "aggregators": AGGREGATORS}],
        "entries": entries,
    }
    path = folder / f"{name}.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def comparable(result: RunResult) -> dict[str, Any]:
    """What must be equal between two runs of the same entries (not timing nor trace ids)."""
    return {
        "name": result.name,
        "evaluators": result.evaluators,
        "entries": [
            (
                entry.index,
                entry.name,
                entry.status,
                entry.output,
                [(e.evaluator, e.score, e.details) for e in entry.evaluations],
            )
            for entry in result.entries
        ],
        "dataset_results": {key: (e.score, e.details) for key, e in result.dataset_results.items()},
    }


def test_a_shard_is_written_k_of_n() -> None:
    assert Shard.parse(" 2 / 3 ") == Shard(2, 3)
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        with pytest.raises(ShardSpecError, match="K/N"):
            Shard.parse(bad)


def test_a_shards_entries_depend_on_their_names_only_never_on_their_order() -> None:
    names = [f"entry-{i}" for i in range(30)]

    forwards = {names[p] for p in shard_positions("faq", names, Shard(2, 3))}
    backwards = list(reversed(names))

    assert {backwards[p] for p in shard_positions("faq", backwards, Shard(2, 3))} == forwards
    # Fixed by SHA-256, so the same on every machine and Python (never the salted hash()).
    assert sorted(forwards)[:4] == ["entry-12", "entry-14", "entry-17", "entry-20"]


def test_entries_whose_digests_share_a_prefix_are_ordered_by_the_whole_digest_then_name() -> None:
    names = [f"entry-{i}" for i in range(40)]
    keys = [shard_key("faq", name) for name in names]
    # Prefixes of one bit: most entries share theirs, and the whole key must order them.
    prefixes = np.array([key[0][0] >> 7 for key in keys], dtype=np.uint64)

    order = order_by_key(prefixes, lambda position: keys[position])

    assert list(order) == sorted(range(len(names)), key=lambda position: keys[position])


@pytest.mark.anyio
async def test_shards_1_2_3_of_3_cover_every_entry_exactly_once(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 31)

    shards = [await run_dataset(dataset, shard=f"{k}/3") for k in (1, 2, 3)]

    names = [entry.name for shard in shards for entry in shard.entries]
    assert sorted(names) == [f"n{i:03d}" for i in range(31)]
    assert sorted(len(shard.entries) for shard in shards) == [10, 10, 11]
    assert [
        shard.selection and (shard.selection.shard, shard.selection.shards) for shard in shards
    ] == [
        (1, 3),
        (2, 3),
        (3, 3),
    ]


@pytest.mark.anyio
async def test_merged_shards_equal_an_unsharded_run(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 40)
    whole = await run_dataset(dataset, output_dir=tmp_path / "whole")
    folders = []
    for k in (3, 1, 2):
        shard = await run_dataset(dataset, output_dir=tmp_path / "shards", shard=Shard(k, 3))
        folders.append(tmp_path / "shards" / shard.run_id)

    merged_folder = merge_results(folders, tmp_path / "merged")

    merged = load_result(merged_folder)
    assert comparable(merged) == comparable(whole)
    assert whole.dataset_results["parity::fscore"].score not in (0.0, 1.0)
    assert [entry.index for entry in merged.entries] == list(range(40))
    traces = split_traces(load_traces(merged_folder / TRACES_FILE))
    assert sorted(f"{one[0].span.trace_id:032x}" for one in traces) == sorted(
        trace_id for entry in merged.entries for trace_id in entry.trace_ids
    )


@pytest.mark.anyio
async def test_a_merged_run_counts_the_statuses_and_labels_of_every_shard(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 12)
    whole = await run_dataset(dataset)
    folders = []
    for k in (1, 2):
        shard = await run_dataset(dataset, output_dir=tmp_path / "shards", shard=Shard(k, 2))
        folders.append(tmp_path / "shards" / shard.run_id)

    merged = load_result(merge_results(folders, tmp_path / "merged"))

    assert merged.counts == whole.counts
    assert merged.label_counts == whole.label_counts == {"parity": {"even": 6, "odd": 6}}


@pytest.mark.anyio
async def test_merge_refuses_a_missing_shard_a_shard_twice_and_another_dataset(
    tmp_path: Path,
) -> None:
    dataset = write_project(tmp_path, 12)
    other = write_project(tmp_path, 12, name="other")
    out = tmp_path / "runs"
    one, two = [
        out / (await run_dataset(dataset, output_dir=out, shard=f"{k}/3")).run_id for k in (1, 2)
    ]
    stranger = out / (await run_dataset(other, output_dir=out, shard="3/3")).run_id

    with pytest.raises(MergeError, match=r"shard 3/3 of 'numbers' is missing"):
        merge_results([one, two], tmp_path / "merged")
    with pytest.raises(MergeError, match=r"shard 1/3 is given twice"):
        merge_results([one, two, one], tmp_path / "merged")
    with pytest.raises(MergeError, match=r"only the shards of one dataset"):
        merge_results([one, two, stranger], tmp_path / "merged")


@pytest.mark.anyio
async def test_merge_refuses_entries_found_in_two_shards(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 9)
    out = tmp_path / "runs"
    folders = [
        out / (await run_dataset(dataset, output_dir=out, shard=f"{k}/3")).run_id for k in (1, 2, 3)
    ]
    stolen = (folders[0] / ENTRIES_FILE).read_text().splitlines(keepends=True)[0]
    with open(folders[1] / ENTRIES_FILE, "a") as stream:
        stream.write(stolen)

    with pytest.raises(MergeError, match=r"is in two shards"):
        merge_results(folders, tmp_path / "merged")


def evaltrace(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltrace", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=120,
    )


def test_evaltrace_merge_of_incomplete_shards_exits_2_naming_the_missing_one(
    tmp_path: Path,
) -> None:
    write_project(tmp_path, 6)
    done = evaltrace(tmp_path, "test", "--shard", "1/2", "--output-dir", "shards", "--no-scorecard")
    assert done.returncode == 1, done.stderr  # one entry in four fails on purpose
    (folder,) = (tmp_path / "shards").iterdir()

    merged = evaltrace(tmp_path, "merge", str(folder), "--output-dir", "merged")

    assert merged.returncode == 2
    assert "shard 2/2 of 'numbers' is missing" in merged.stderr


def test_evaltrace_merge_writes_one_run_with_its_scorecard(tmp_path: Path) -> None:
    write_project(tmp_path, 6)
    for k in (1, 2):
        evaltrace(tmp_path, "test", "--shard", f"{k}/2", "--output-dir", "shards", "--no-scorecard")
    folders = sorted(str(path) for path in (tmp_path / "shards").iterdir())

    merged = evaltrace(tmp_path, "merge", *folders, "--output-dir", "merged")

    assert merged.returncode == 0, merged.stderr
    (folder,) = (tmp_path / "merged").iterdir()
    assert {"result.json", "entries.jsonl", "traces.jsonl", "scorecard.html"} <= {
        path.name for path in folder.iterdir()
    }
    assert len(load_result(folder).entries) == 6


@pytest.mark.anyio
async def test_a_run_that_keeps_no_entries_still_writes_them_all(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 20)

    result = await run_dataset(dataset, output_dir=tmp_path / "out", keep_entries=False)

    assert result.entries == []
    saved = load_result(tmp_path / "out" / result.run_id)
    assert [entry.name for entry in saved.entries] == [f"n{i:03d}" for i in range(20)]
    assert saved.dataset_results == result.dataset_results
    assert [e.name for e in iter_entries(tmp_path / "out" / result.run_id)] != []


NO_WAIT_APP = """\
from evaltrace import wrap


async def run(question: str, number: int) -> str:
    return wrap(f"{question.upper()} {number * 2}", purpose="output", name="answer")
"""

NO_WAIT_CHECKS = """\
async def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


async def length(evaluable):
    return min(1.0, len(evaluable.output_value("answer")) / 10)


async def mentions_number(evaluable):
    return str(evaluable.eval_metadata["double"]) in evaluable.output_value("answer")
"""


def write_no_wait_project(folder: Path, count: int) -> Path:
    """The benchmark's dataset: an app and evaluators that never wait, 3 evaluators."""
    folder.mkdir(exist_ok=True)
    (folder / "app.py").write_text(NO_WAIT_APP)
    (folder / "checks.py").write_text(NO_WAIT_CHECKS)
    document = {
        "name": f"flat{count}",
        "runnable": "app.py:run",
        "evaluators": ["checks.py:exact", "checks.py:length", "checks.py:mentions_number"],
        "entries": [
            {
                "name": f"q{i}",
                "entry_kwargs": {"question": f"question {i}", "number": i},
                "expectation": f"QUESTION {i} {2 * i}",
                "eval_metadata": {"double": 2 * i},
            }
            for i in range(count)
        ],
    }
    path = folder / f"flat{count}.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.anyio
async def test_a_streamed_runs_memory_does_not_grow_with_its_entries(tmp_path: Path) -> None:
    # Retaining anything of a finished entry (its result, its spans, its capture) costs
    # kilobytes per entry; what a run must hold per entry (positions, where each line is)
    # costs tens of bytes. 4x the entries may add well under 1 kB per added entry.
    small, large = 300, 1200
    datasets = {
        count: load_dataset(write_no_wait_project(tmp_path / f"p{count}", count))
        for count in (small, large)
    }

    async def peak(count: int) -> int:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        await run_dataset(datasets[count], output_dir=tmp_path / "out", keep_entries=False)
        return tracemalloc.get_traced_memory()[1] - before

    await run_dataset(datasets[small], output_dir=tmp_path / "warm", keep_entries=False)
    tracemalloc.start()
    try:
        peaks = {count: await peak(count) for count in (small, large)}
    finally:
        tracemalloc.stop()

    per_added_entry = (peaks[large] - peaks[small]) / (large - small)
    assert per_added_entry < 1000, f"peaks {peaks}: {per_added_entry:.0f} B per added entry"


def test_evaltrace_test_holds_no_entry_of_the_run_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command line streams too: what the run leaves held when it returns (the result the
    # report is made from) does not grow with the entries. Holding each finished entry, as a
    # run kept for its report would, costs kilobytes per entry.
    import evaltrace.datasets
    from evaltrace.cli import main

    run = evaltrace.datasets.run_dataset
    held: list[int] = []

    async def measured(*args: Any, **kwargs: Any) -> RunResult:
        before, _ = tracemalloc.get_traced_memory()
        result = await run(*args, **kwargs)
        held.append(tracemalloc.get_traced_memory()[0] - before)
        return result

    monkeypatch.setattr(evaltrace.datasets, "run_dataset", measured)
    monkeypatch.chdir(tmp_path)
    small, large = 300, 1200
    paths = {
        count: write_no_wait_project(tmp_path / f"p{count}", count) for count in (small, large)
    }
    options = ["--no-scorecard", "--output-dir", "out"]
    assert main(["test", str(paths[small]), *options]) == 0  # warm
    tracemalloc.start()
    try:
        for count in (small, large):
            assert main(["test", str(paths[count]), *options]) == 0
    finally:
        tracemalloc.stop()

    per_added_entry = (held[2] - held[1]) / (large - small)
    assert per_added_entry < 1000, f"held {held[1:]}: {per_added_entry:.0f} B per added entry"
    report = capsys.readouterr().out
    assert f"{large} entries in 1 dataset: {large} passed" in report


def test_entry_lines_are_found_by_index_across_files_with_gaps(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(b'{"index":30,"name":"x"}\n{"index":0,"name":"a"}\n')
    second.write_bytes(b'{"index":7,"name":"b"}\n{"index":2,"name":"torn"')

    found = scan_entries([first, second])

    assert len(found) == 3
    assert [found.has(i) for i in (0, 2, 7, 30, 31)] == [True, False, True, True, False]
    assert [json.loads(line)["name"] for line in found.lines()] == ["a", "b", "x"]
    with pytest.raises(DuplicateEntryError, match="#7"):
        scan_entries([second, second])


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[str]) -> None:
    """Until ``path`` has ``count`` complete lines (an event polled in the file, not a sleep)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        if process.poll() is not None:
            raise AssertionError(f"the run ended early: {process.stderr and process.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} lines")


def test_resume_after_sigkill_runs_only_the_missing_entries(tmp_path: Path) -> None:
    write_project(tmp_path, 10)
    gate = tmp_path / "gate"
    env = {"EVALTRACE_TEST_GATE": str(gate)}
    process = subprocess.Popen(
        [sys.executable, "-m", "evaltrace", "test", "--concurrency", "2", "--no-scorecard"],
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        results = tmp_path / "evaltrace_results"
        while not results.exists() or not any(results.iterdir()):
            assert process.poll() is None, process.stderr and process.stderr.read()
            time.sleep(0.02)
        (folder,) = results.iterdir()
        wait_for_lines(folder / ENTRIES_FILE, 5, process)  # entries 0-4; 5-9 wait at the gate
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    assert not (folder / RESULT_FILE).exists()
    gate.touch()

    resumed = evaltrace(tmp_path, "test", "--resume", str(folder), "--no-scorecard", env=env)

    assert resumed.returncode == 1, resumed.stderr  # entries n000, n004, n008 fail on purpose
    result = load_result(folder)
    assert [entry.name for entry in result.entries] == [f"n{i:03d}" for i in range(10)]
    lines = (folder / ENTRIES_FILE).read_text().splitlines()
    assert sorted(json.loads(line)["name"] for line in lines) == [f"n{i:03d}" for i in range(10)]
    traces = split_traces(load_traces(folder / TRACES_FILE))
    assert sorted(f"{one[0].span.trace_id:032x}" for one in traces) == sorted(
        trace_id for entry in result.entries for trace_id in entry.trace_ids
    )
    assert not result.interrupted


@pytest.mark.anyio
async def test_reopening_cuts_a_torn_line_and_the_spans_of_an_unwritten_entry(
    tmp_path: Path,
) -> None:
    dataset = write_project(tmp_path, 4)
    result = await run_dataset(dataset, output_dir=tmp_path / "out")
    folder = tmp_path / "out" / result.run_id
    traces_before = (folder / TRACES_FILE).read_bytes()
    orphan = traces_before.splitlines(keepends=True)[0].replace(
        result.entries[0].trace_ids[0].encode(), b"f" * 32
    )
    with open(folder / TRACES_FILE, "ab") as stream:
        stream.write(orphan + b'{"trace_id":"ab')  # spans of an entry never written, torn
    with open(folder / ENTRIES_FILE, "ab") as stream:
        stream.write(b'{"index":3,"name":"n0')  # a line cut short by SIGKILL

    ResultsFolder.reopen(folder).close()

    assert (folder / TRACES_FILE).read_bytes() == traces_before
    assert len((folder / ENTRIES_FILE).read_text().splitlines()) == 4


@pytest.mark.anyio
async def test_resume_refuses_a_run_of_another_shard(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, 6)
    result = await run_dataset(dataset, output_dir=tmp_path / "out", shard="1/2")

    with pytest.raises(ResumeError, match=r"shard 1/2 of 6 entries .* this run selects shard 2/2"):
        await run_dataset(dataset, resume=tmp_path / "out" / result.run_id, shard="2/2")
