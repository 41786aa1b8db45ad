"""JSONL datasets (``*.evaltrace.jsonl``): a header line, then one entry per line, read lazily."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from evaltrace import wrap
from evaltrace.datasets import (
    DatasetEntry,
    DatasetError,
    convert_dataset,
    dataset_json_schema,
    load_dataset,
    prepare_dataset,
    run_dataset,
    select_entries,
)
from evaltrace.engine import Output, RunConfig, execute
from evaltrace.results import CompletionStatus

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
"""

HEADER: dict[str, Any] = {
    "$schema": "./evaltrace-dataset.schema.json",
    "name": "faq",
    "runnable": "app.py:answer",
    "evaluators": ["checks.py:matches"],
}


def entry(name: str, question: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "entry_kwargs": {"question": question}, "expectation": question.upper()}


def jsonl(folder: Path, lines: list[Any], file: str = "faq.evaltrace.jsonl") -> Path:
    """Write ``lines`` (objects are dumped, strings written as they are) with the app beside."""
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    path = folder / file
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    return [str(problem) for problem in caught.value.problems]


def evaltrace(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


# -- loading ----------------------------------------------------------------------------------


def test_a_jsonl_dataset_loads_its_header_and_its_entries(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, entry("a", "hello"), {"entry_kwargs": {"question": "x"}}])

    dataset = load_dataset(path)

    assert (dataset.name, dataset.runnable, dataset.schema_) == (
        "faq",
        "app.py:answer",
        "./evaltrace-dataset.schema.json",
    )
    assert [spec.name for spec in dataset.evaluators] == ["checks.py:matches"]
    assert len(dataset.entries) == 2
    assert [item.name for item in dataset.entries] == ["a", "1"]
    assert dataset.entries[1].description == "1"
    assert dataset.entries[0].entry_kwargs == {"question": "hello"}
    assert dataset.path == path.absolute()


def test_an_unnamed_jsonl_dataset_is_named_after_its_file(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path, [{"runnable": "app.py:answer"}, entry("a", "hi")], "shop.evaltrace.jsonl"
    )

    assert load_dataset(path).name == "shop"


def test_blank_lines_and_a_trailing_newline_are_skipped(tmp_path: Path) -> None:
    path = jsonl(tmp_path, ["", HEADER, "  ", entry("a", "hi"), "", entry("b", "yo"), ""])

    dataset = load_dataset(path)

    assert [item.name for item in dataset.entries] == ["a", "b"]
    assert [item.name for item in dataset.entries[::-1]] == ["b", "a"]


def test_a_line_that_is_not_json_is_a_problem_with_its_line_and_column(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, entry("a", "hi"), '{"name": "b", "entry_kwargs": {'])

    (problem,) = problems_of(path)

    assert problem.startswith(f"{path}:3:")
    assert "not valid JSON" in problem


def test_a_second_header_is_a_problem_with_its_line(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, entry("a", "hi"), {"runnable": "app.py:answer"}])

    (problem,) = problems_of(path)

    assert problem.startswith(f"{path}:3:")
    assert "second header" in problem
    assert "line 1" in problem


def test_a_file_that_starts_with_an_entry_asks_for_a_header(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [entry("a", "hi"), entry("b", "yo")])

    (problem,) = problems_of(path)

    assert problem.startswith(f"{path}:1:")
    assert "header" in problem


def test_a_header_without_entries_is_a_problem(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, ""])

    (problem,) = problems_of(path)

    assert "at least one entry" in problem


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"name": "b", "entry_kwargs": {"question": "\xff"}}', "not valid UTF-8"),
        (b'{"name": "b", "name": "c", "entry_kwargs": {}}', "the key 'name' appears twice"),
        (b'"just a string"', "an entry is an object"),
        (b'{"name": "b", "entry_kwargs": {"question": NaN}}', "NaN is not a JSON number"),
        (b'{"name": "b", "entry_kwargs": {}, "trace_id": "abc"}', "entries[1].trace_id"),
        (
            b'{"name": "b", "entry_kwargs": {"q": 1}, "eval_input": [{"name": "q", "value": 2}]}',
            "differs from entry_kwargs",
        ),
    ],
)
def test_each_kind_of_bad_entry_line_is_named_by_its_line(
    tmp_path: Path, line: bytes, message: str
) -> None:
    path = jsonl(tmp_path, [HEADER, entry("a", "hi")])
    path.write_bytes(path.read_bytes() + b"\n" + line + b"\n")

    (problem,) = problems_of(path)

    assert problem.startswith(f"{path}:4"), problem
    assert message in problem


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("[1, 2]", "the first line is the header"),
        (json.dumps({**HEADER, "entries": []}), "the header holds no entries"),
        (json.dumps({**HEADER, "evaluators": ["...", "checks.py:matches"]}), "'...'"),
        (json.dumps({**HEADER, "runnble": "app.py:answer"}), "did you mean 'runnable'"),
    ],
)
def test_each_kind_of_bad_header_is_named_by_line_1(
    tmp_path: Path, header: str, message: str
) -> None:
    path = jsonl(tmp_path, [header, entry("a", "hi")])

    problems = problems_of(path)

    assert problems[0].startswith(f"{path}:1"), problems
    assert message in problems[0]


def test_an_invalid_entry_is_named_by_its_line_and_its_place(tmp_path: Path) -> None:
    lines: list[Any] = [HEADER, *(entry(f"e{i}", "q") for i in range(11))]
    lines[11] = {"name": "e10", "entry_kwarg": {"question": "q"}}
    path = jsonl(tmp_path, lines)

    (problem,) = problems_of(path)

    assert problem.startswith(f"{path}:12: entries[10].entry_kwarg: unknown key 'entry_kwarg'")


def test_every_problem_of_a_jsonl_file_is_reported_at_once(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path,
        [
            {**HEADER, "epochs": 0},
            entry("a", "hi"),
            "not json",
            entry("a", "again"),
            {"name": "c", "entry_kwargs": {"question": "q"}, "eval_input": "wrong"},
            [1, 2],
            {"runnable": "other.py:app"},
        ],
    )

    problems = problems_of(path)

    assert [problem.split(": ")[0] for problem in problems] == [
        f"{path}:1",
        f"{path}:3:1",
        f"{path}:4",
        f"{path}:5",
        f"{path}:6",
        f"{path}:7",
    ]
    assert "epochs" in problems[0]
    assert "duplicate entry name 'a', also the name of entries[0]" in problems[2]
    assert "entries[3].eval_input" in problems[3]
    assert "an entry is an object" in problems[4]


def test_an_argument_the_runnable_does_not_take_is_named_by_its_line(tmp_path: Path) -> None:
    lines: list[Any] = [HEADER, *(entry(f"e{i}", "q") for i in range(11))]
    lines[11] = {"name": "e10", "entry_kwargs": {"questoin": "q"}}
    path = jsonl(tmp_path, lines)

    with pytest.raises(DatasetError) as caught:
        prepare_dataset(path)

    messages = [str(problem) for problem in caught.value.problems]
    assert any(
        message.startswith(f"{path}:12: entries[10].entry_kwargs.questoin") for message in messages
    ), messages


# -- reading entry by entry -------------------------------------------------------------------


def alive_entries() -> int:
    gc.collect()
    return sum(isinstance(thing, DatasetEntry) for thing in gc.get_objects())


def most_entries_alive_in_a_run(path: Path, runs: Path) -> int:
    """The most :class:`DatasetEntry` objects alive at once while the app runs (sampled)."""
    seen: list[int] = []

    def answer(question: str) -> str:
        if question.endswith("0"):
            seen.append(alive_entries())
        return wrap(question.upper(), purpose="output", name="answer")

    result = anyio.run(
        lambda: run_dataset(
            path, runnable=answer, output_dir=runs, keep_entries=False, concurrency=4
        )
    )
    assert result.counts is not None and result.counts[CompletionStatus.SUCCESS] == 300
    return max(seen)


def test_a_jsonl_or_json_run_never_holds_all_its_entries(tmp_path: Path) -> None:
    lines = [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(300))]
    path = jsonl(tmp_path, lines)
    (tmp_path / "faq.evaltrace.json").write_text(json.dumps({**HEADER, "entries": lines[1:]}))
    (tmp_path / "faq.evaltrace.yaml").write_text(yaml.safe_dump({**HEADER, "entries": lines[1:]}))

    assert most_entries_alive_in_a_run(path, tmp_path / "runs") < 30
    assert most_entries_alive_in_a_run(tmp_path / "faq.evaltrace.json", tmp_path / "runs") < 30
    # The same count over the YAML form, which holds its entries: the measure sees them.
    assert most_entries_alive_in_a_run(tmp_path / "faq.evaltrace.yaml", tmp_path / "runs") >= 300


def test_a_loaded_jsonl_dataset_holds_no_entry(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(300))])

    dataset = load_dataset(path)

    assert len(dataset.entries) == 300
    assert alive_entries() < 10


def test_an_entry_lands_in_the_same_shard_whatever_the_form_of_its_dataset(
    tmp_path: Path,
) -> None:
    entries = [entry(f"entry-{i}", f"q{i}") for i in range(40)]
    source = tmp_path / "faq.evaltrace.json"
    jsonl(tmp_path, [HEADER, entry("x", "x")], "unused.evaltrace.jsonl")
    source.write_text(json.dumps({**HEADER, "entries": entries}))
    convert_dataset(source, tmp_path / "faq.evaltrace.jsonl")
    convert_dataset(source, tmp_path / "faq.evaltrace.yaml")

    def shards(path: Path) -> list[list[str]]:
        prepared = prepare_dataset(path)
        names = []
        for k in (1, 2, 3):
            chosen = select_entries(prepared, RunConfig(), shard=f"{k}/3")
            names.append([chosen.entry(position).name for position in chosen.positions])
        return names

    by_json = shards(source)
    assert sorted(name for shard in by_json for name in shard) == sorted(e["name"] for e in entries)
    assert shards(tmp_path / "faq.evaltrace.jsonl") == by_json
    assert shards(tmp_path / "faq.evaltrace.yaml") == by_json


def test_a_shard_of_a_jsonl_dataset_parses_only_its_own_lines(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(30))])
    prepared = prepare_dataset(path)
    config = RunConfig()
    chosen = select_entries(prepared, config, shard="2/3")
    mine = {chosen.entry(position).name for position in chosen.positions}
    # Every other entry's line is overwritten with bytes that are no entry (same length, so
    # the offsets found by the index pass still hold): the shard never reads them.
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines[1:], start=1):
        if line and json.loads(line)["name"] not in mine:
            lines[number] = b"#" * len(line)
    path.write_bytes(b"\n".join(lines))

    result = anyio.run(lambda: execute(chosen, config, output=Output(parent=tmp_path / "runs")))

    assert sorted(item.name for item in result.entries) == sorted(mine)
    assert all(item.status.value == "SUCCESS" for item in result.entries)


# -- convert ----------------------------------------------------------------------------------


def test_convert_round_trips_json_to_jsonl_to_yaml_to_json(tmp_path: Path) -> None:
    document = {
        **HEADER,
        "epochs": 2,
        "entries": [
            {**entry("a", "hi"), "eval_input": [{"name": "q", "value": [1, {"b": None}]}]},
            {"entry_kwargs": {"question": "no name"}, "expectation": None},
            {**entry("c", "yo"), "evaluators": ["...", {"type": "contains", "value": "Y"}]},
        ],
    }
    start = tmp_path / "a.evaltrace.json"
    start.write_text(json.dumps(document))

    convert_dataset(start, tmp_path / "b.evaltrace.jsonl")
    convert_dataset(tmp_path / "b.evaltrace.jsonl", tmp_path / "c.evaltrace.yaml")
    convert_dataset(tmp_path / "c.evaltrace.yaml", tmp_path / "d.evaltrace.json")

    assert json.loads((tmp_path / "d.evaltrace.json").read_text()) == document
    assert yaml.safe_load((tmp_path / "c.evaltrace.yaml").read_text()) == document
    header, *entries = (tmp_path / "b.evaltrace.jsonl").read_text().splitlines()
    assert json.loads(header) == {k: v for k, v in document.items() if k != "entries"}
    assert [json.loads(line) for line in entries] == document["entries"]


def test_convert_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    start = jsonl(tmp_path, [HEADER, entry("a", "hi")])
    target = tmp_path / "faq.evaltrace.json"
    target.write_text("kept")

    with pytest.raises(FileExistsError):
        convert_dataset(start, target)
    assert target.read_text() == "kept"

    convert_dataset(start, target, force=True)
    assert json.loads(target.read_text())["entries"] == [entry("a", "hi")]


# -- memory -----------------------------------------------------------------------------------


def test_a_json_dataset_takes_under_1_kb_per_entry_beyond_its_data_while_loading(
    tmp_path: Path,
) -> None:
    count = 20_000
    entries = [
        {"name": f"e{i}", "entry_kwargs": {"question": f"q{i}"}, "expectation": f"Q{i}"}
        for i in range(count)
    ]
    path = tmp_path / "big.evaltrace.json"
    path.write_text(json.dumps({"entries": entries}))
    del entries

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        raw = json.loads(path.read_text())["entries"]
        data = tracemalloc.get_traced_memory()[0] - base
        del raw
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        dataset = load_dataset(path)
        kept, peak = (size - base for size in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()

    assert len(dataset.entries) == count
    assert (kept - data) / count <= 1024, (kept / count, data / count)
    assert (peak - data) / count <= 1024, (peak / count, data / count)


# -- schema and command line ------------------------------------------------------------------


def test_the_dataset_schema_documents_the_jsonl_header_line() -> None:
    description = dataset_json_schema()["description"]

    assert ".evaltrace.jsonl" in description
    assert "header" in description


def test_evaltrace_test_runs_a_jsonl_dataset_found_in_a_folder(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, entry("a", "hi"), entry("b", "yo")])

    done = evaltrace(tmp_path, "test", "--no-scorecard")

    assert done.returncode == 0, done.stderr + done.stdout
    assert "2 entries in 1 dataset: 2 passed" in done.stdout


def test_evaltrace_test_runs_one_shard_of_a_jsonl_dataset(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(9))])

    done = evaltrace(tmp_path, "test", "--shard", "1/3", "faq.evaltrace.jsonl")

    assert done.returncode == 0, done.stderr + done.stdout
    assert "3 entries in 1 dataset: 3 passed" in done.stdout


def test_dataset_validate_reports_the_line_of_a_bad_jsonl_entry(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, entry("a", "hi"), {"name": "b", "entry_kwargs": {"qestion": "x"}}])

    done = evaltrace(tmp_path, "dataset", "validate")

    assert done.returncode == 2
    assert "faq.evaltrace.jsonl:3: entries[1].entry_kwargs.qestion" in done.stderr


def test_dataset_list_shows_a_jsonl_dataset(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, entry("a", "hi"), entry("b", "yo")])

    done = evaltrace(tmp_path, "dataset", "list")

    assert done.returncode == 0, done.stderr
    assert "faq" in done.stdout and "faq.evaltrace.jsonl" in done.stdout


def test_dataset_convert_writes_the_form_of_the_destination(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, entry("a", "hi")])

    done = evaltrace(tmp_path, "dataset", "convert", "faq.evaltrace.jsonl", "faq.evaltrace.yaml")
    again = evaltrace(tmp_path, "dataset", "convert", "faq.evaltrace.jsonl", "faq.evaltrace.yaml")

    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((tmp_path / "faq.evaltrace.yaml").read_text())["entries"] == [
        entry("a", "hi")
    ]
    assert again.returncode == 2
    assert "--force" in again.stderr


def test_dataset_save_writes_jsonl_when_the_name_ends_so(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, entry("a", "hi")], "unused.evaltrace.jsonl")
    (tmp_path / "kwargs.json").write_text('{"question": "hi"}')
    traced = evaltrace(tmp_path, "trace", "--runnable", "app.py:answer", "--input", "kwargs.json")
    assert traced.returncode == 0, traced.stderr

    done = evaltrace(
        tmp_path,
        "dataset",
        "save",
        "new.evaltrace.jsonl",
        "--from-trace",
        "trace.jsonl",
        "--runnable",
        "app.py:answer",
    )

    assert done.returncode == 0, done.stderr
    header, line = (tmp_path / "new.evaltrace.jsonl").read_text().splitlines()
    assert json.loads(header)["runnable"] == "app.py:answer"
    assert json.loads(line)["entry_kwargs"] == {"question": "hi"}
    assert len(load_dataset(tmp_path / "new.evaltrace.jsonl").entries) == 1


def test_evaltrace_test_resumes_an_interrupted_run_of_a_jsonl_dataset(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(6))])
    first = evaltrace(tmp_path, "test", "--no-scorecard", "faq.evaltrace.jsonl")
    assert first.returncode == 0, first.stderr
    (folder,) = (tmp_path / "evaltrace_results").iterdir()
    (folder / "result.json").unlink()
    lines = (folder / "entries.jsonl").read_text().splitlines(keepends=True)
    (folder / "entries.jsonl").write_text("".join(lines[:2]))

    done = evaltrace(tmp_path, "test", "--resume", str(folder), "--no-scorecard")

    assert done.returncode == 0, done.stderr + done.stdout
    saved = json.loads((folder / "result.json").read_text())
    assert sorted(item["name"] for item in saved["entries"]) == [f"e{i}" for i in range(6)]


def test_evaltrace_merge_puts_the_shards_of_a_jsonl_dataset_together(tmp_path: Path) -> None:
    jsonl(tmp_path, [HEADER, *(entry(f"e{i}", f"q{i}") for i in range(8))])
    for shard in ("1/2", "2/2"):
        done = evaltrace(
            tmp_path, "test", "--shard", shard, "--no-scorecard", "--output-dir", "shards"
        )
        assert done.returncode == 0, done.stderr
    folders = sorted(str(path) for path in (tmp_path / "shards").iterdir())

    merged = evaltrace(tmp_path, "merge", *folders, "--no-scorecard", "--output-dir", "merged")

    assert merged.returncode == 0, merged.stderr
    (folder,) = (tmp_path / "merged").iterdir()
    saved = json.loads((folder / "result.json").read_text())
    assert [item["name"] for item in saved["entries"]] == [f"e{i}" for i in range(8)]
