"""What a run over a large JSONL dataset holds per entry: loading, fingerprint, end of the run.

The goal (bench/README.md, ``bench_dataset_memory.py``): a run of 10**6 entries peaks at most
1.2x a run of 10**5, about 16 bytes an entry in all. These tests measure the parts with
tracemalloc at a few ten thousand entries.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaltrace.datasets import DatasetError, load_dataset, prepare_dataset, select_entries
from evaltrace.datasets.fingerprint import run_fingerprint
from evaltrace.datasets.sharding import Shard, shard_positions
from evaltrace.engine import RunConfig
from evaltrace.evals import Evaluation
from evaltrace.results import latency_summary, scan_entries
from evaltrace.results.folder import DuplicateEntryError
from evaltrace.results.run_statistics import StatisticsTally
from evaltrace.results.usage import UsageTally

APP = """\
def answer(question: str) -> str:
    return question.upper()
"""

CHECKS = """\
from evaltrace import Evaluation


def matches(evaluable):
    return Evaluation(score=1.0)
"""

HEADER = {"name": "big", "runnable": "app.py:answer", "evaluators": ["checks.py:matches"]}


def write_jsonl(folder: Path, lines: list[Any]) -> Path:
    """A JSONL dataset of ``lines`` (strings written as they are) with its app beside it."""
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    path = folder / "big.evaltrace.jsonl"
    with path.open("w") as stream:
        for line in lines:
            stream.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def entry(number: int) -> dict[str, Any]:
    return {"name": f"e{number}", "entry_kwargs": {"question": f"question {number}"}}


def traced(action: Callable[[], object]) -> tuple[int, int]:
    """The bytes ``action`` leaves allocated, and its peak, under tracemalloc."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept_alive = action()
        kept, peak = (size - base for size in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    del kept_alive
    return kept, peak


# -- loading --------------------------------------------------------------------------------


def test_a_loaded_jsonl_dataset_keeps_under_a_byte_an_entry(tmp_path: Path) -> None:
    count = 30_000
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(count))])
    load_dataset(path)  # imports and caches made once

    kept, _ = traced(lambda: load_dataset(path))

    assert kept / count < 1, f"{kept / count:.1f} B an entry kept"


def test_loading_a_jsonl_dataset_peaks_at_about_8_bytes_an_entry(tmp_path: Path) -> None:
    count = 30_000
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(count))])
    load_dataset(path)

    _, peak = traced(lambda: load_dataset(path))

    assert peak < 10 * count + 256 * 1024, f"{peak / count:.1f} B an entry at the peak"


def test_jsonl_entries_past_blank_lines_are_read_in_any_order_with_their_lines(
    tmp_path: Path,
) -> None:
    lines: list[Any] = ["", HEADER]
    where: list[int] = []  # each entry's line number
    for number in range(300):
        if number % 7 == 3:
            lines.append("   ")
        lines.append(entry(number))
        where.append(len(lines))
    dataset = load_dataset(write_jsonl(tmp_path, lines))
    entries = dataset.entries
    order = [*range(299, -1, -1), *random.Random(0).sample(range(300), 300), 5, 6, 7, 130]

    names = [entries[position].name for position in order]

    assert names == [f"e{position}" for position in order]
    assert [entries.line_of(position) for position in order] == [  # type: ignore[attr-defined]
        where[position] for position in order
    ]
    assert [item.name for item in entries] == [f"e{number}" for number in range(300)]


def test_a_jsonl_file_cut_after_loading_names_the_entry_and_its_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(100))])
    dataset = load_dataset(path)
    text = path.read_bytes()
    path.write_bytes(text[: text.index(b'{"name": "e90"')])

    with pytest.raises(DatasetError) as raised:
        dataset.entries[95]

    problem = raised.value.problems[0]
    assert (problem.location, problem.line) == ("entries[95]", 97)
    assert "changed after the dataset was loaded" in problem.message


def test_duplicate_names_after_a_second_header_are_named_with_their_lines(tmp_path: Path) -> None:
    lines = [HEADER, entry(0), entry(1), HEADER, entry(2), entry(1), "", entry(0)]

    with pytest.raises(DatasetError) as raised:
        load_dataset(write_jsonl(tmp_path, lines))

    found = [(p.line, p.location, p.message) for p in raised.value.problems]
    assert (6, "entries[3].name", "duplicate entry name 'e1', also the name of entries[1]") in found
    assert (8, "entries[4].name", "duplicate entry name 'e0', also the name of entries[0]") in found
    assert any(line == 4 and "second header" in message for line, _, message in found)


# -- the run's fingerprint ------------------------------------------------------------------


def test_the_fingerprint_of_a_jsonl_run_holds_nothing_per_entry(tmp_path: Path) -> None:
    count = 20_000
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(count))])
    prepared = prepare_dataset(path)

    def fingerprint() -> object:
        return run_fingerprint(
            prepared,
            threshold=0.5,
            timeout=None,
            entry_filter=None,
            from_trace=None,
            shard=Shard(1, 1),
        )

    expected = fingerprint()
    _, peak = traced(fingerprint)

    assert peak < 256 * 1024, f"{peak / count:.1f} B an entry at the peak"
    assert fingerprint() == expected


def test_choosing_a_shard_of_a_jsonl_run_adds_about_16_bytes_an_entry(tmp_path: Path) -> None:
    count = 30_000
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(count))])
    prepared = prepare_dataset(path)
    select_entries(prepared, RunConfig(), shard="2/3")  # imports and caches made once

    _, whole = traced(lambda: select_entries(prepared, RunConfig()))
    kept, peak = traced(lambda: select_entries(prepared, RunConfig(), shard="2/3"))

    assert peak - whole < 20 * count, f"{(peak - whole) / count:.1f} B an entry more at the peak"
    assert kept - whole < 4 * count, f"{(kept - whole) / count:.1f} B an entry more kept"


def test_a_shard_is_the_same_whether_its_names_are_a_list_or_read_one_by_one(
    tmp_path: Path,
) -> None:
    count = 3_000
    path = write_jsonl(tmp_path, [HEADER, *(entry(number) for number in range(count))])
    prepared = prepare_dataset(path)
    names = [f"e{number}" for number in range(count)]

    for k in (1, 2, 3):
        chosen = select_entries(prepared, RunConfig(), shard=f"{k}/3")
        assert list(chosen.positions) == list(shard_positions("big", names, Shard(k, 3)))


# -- the end of the run ---------------------------------------------------------------------


def entries_file(path: Path, indexes: list[int], cut: bool = False) -> Path:
    with path.open("w") as stream:
        for index in indexes:
            stream.write(json.dumps({"index": index, "name": f"e{index}"}, separators=(",", ":")))
            stream.write("\n")
        if cut:
            stream.write('{"index":999,"na')
    return path


def test_entries_written_in_index_order_are_found_holding_nothing_per_entry(
    tmp_path: Path,
) -> None:
    path = entries_file(tmp_path / "entries.jsonl", list(range(5_000)))

    found = scan_entries([path])

    assert len(found.where) == 0
    assert len(found) == 5_000 and found.has(4_999) and not found.has(5_000)
    assert [json.loads(line)["index"] for line in found.lines()] == list(range(5_000))


def test_entries_in_order_across_files_skip_a_line_cut_short(tmp_path: Path) -> None:
    first = entries_file(tmp_path / "a.jsonl", [0, 1, 2], cut=True)
    second = entries_file(tmp_path / "b.jsonl", [3, 4])

    found = scan_entries([first, second])

    assert [json.loads(line)["index"] for line in found.lines()] == [0, 1, 2, 3, 4]


def test_entries_out_of_order_after_a_cut_line_come_out_in_index_order(tmp_path: Path) -> None:
    first = entries_file(tmp_path / "a.jsonl", [0, 1, 2], cut=True)
    second = entries_file(tmp_path / "b.jsonl", [5, 3, 4, 7])
    seen: list[int] = []

    found = scan_entries([first, second], lambda line: seen.append(json.loads(line)["index"]))

    assert [json.loads(line)["index"] for line in found.lines()] == [0, 1, 2, 3, 4, 5, 7]
    assert seen == [0, 1, 2, 5, 3, 4, 7]
    assert found.has(5) and not found.has(6) and len(found) == 7


def test_the_latency_of_a_run_is_summed_up_without_copying_its_durations() -> None:
    durations = np.random.default_rng(0).exponential(1.0, 100_000)
    tally = UsageTally()
    for duration in durations.tolist():
        tally.add({}, {}, duration)
    expected = latency_summary(durations.tolist())

    _, peak = traced(lambda: tally.fields(None))

    assert peak < 64 * 1024, f"{peak / len(durations):.1f} B a duration at the peak"
    assert tally.fields(None)["latency"] == expected
    assert latency_summary(array("d", durations)) == expected
    summary = expected
    assert summary is not None
    assert summary.p95_s == float(np.percentile(durations, 95))
    assert summary.max_s == float(durations.max())


def test_the_statistics_of_pass_fail_scores_hold_no_number_per_score() -> None:
    count = 100_000
    tally = StatisticsTally(threshold=0.5)
    passed, failed = (
        [Evaluation(score=1.0, evaluator="exact")],
        [Evaluation(score=0.0, evaluator="exact")],
    )
    for index in range(count):
        tally.add_evaluations(failed if index % 4 == 0 else passed, index)

    _, peak = traced(lambda: tally.statistics(confidence=0.95, resamples=1000, seed=0))

    assert peak < 256 * 1024, f"{peak / count:.1f} B a score at the peak"
    exact = tally.statistics(confidence=0.95, resamples=1000, seed=0).evaluators[0]
    assert (exact.n, exact.passed, exact.mean) == (count, count * 3 // 4, 0.75)


def test_entries_a_few_places_out_of_order_are_found_holding_nothing_per_entry(
    tmp_path: Path,
) -> None:
    indexes = list(range(5_000))
    for place in (10, 11, 2_000, 4_990):  # finished a place or two early, as a run writes them
        indexes[place], indexes[place + 2] = indexes[place + 2], indexes[place]
    path = entries_file(tmp_path / "entries.jsonl", indexes)

    found = scan_entries([path])

    assert len(found.where) == 0
    assert [json.loads(line)["index"] for line in found.lines()] == list(range(5_000))


def test_an_entry_written_twice_a_few_places_apart_is_a_duplicate(tmp_path: Path) -> None:
    first = entries_file(tmp_path / "a.jsonl", [0, 2, 1])
    second = entries_file(tmp_path / "b.jsonl", [3, 2])

    with pytest.raises(DuplicateEntryError) as raised:
        scan_entries([first, second])

    assert raised.value.index == 2 and raised.value.files == (first, second)
