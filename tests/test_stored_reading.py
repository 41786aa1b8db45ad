"""read_traces over files whose lines are told apart by their first bytes (the first pass)."""

from __future__ import annotations

import json
from pathlib import Path

from evaltrace.trace import read_traces, save_traces
from span_factory import Spans


def interleaved(tmp_path: Path) -> tuple[Path, list[str]]:
    """Two runs of two spans, their lines alternating, as compact as span_line writes them."""
    spans = Spans(service_name="bot")
    try:
        for run in range(2):
            top = spans.start(f"run{run}", run * 5)
            spans.end(spans.start(f"step{run}", run * 5 + 1, parent=top), 20)
            spans.end(top, 30)
        finished = spans.finished()
    finally:
        spans.provider.shutdown()
    path = tmp_path / "runs.jsonl"
    save_traces(finished, path)
    text = path.read_text(encoding="utf-8").splitlines()
    by_trace: dict[str, list[str]] = {}
    for line in text:
        by_trace.setdefault(json.loads(line)["trace_id"], []).append(line)
    first, second = by_trace.values()
    path.write_text("\n".join([first[0], second[0], first[1], second[1]]) + "\n")
    return path, list(by_trace)


def test_lines_of_two_traces_in_turn_are_each_read_under_their_trace(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)

    stored = list(read_traces(path))

    assert [one.trace_id for one in stored] == trace_ids
    assert [len(list(one.roots[0].walk())) for one in stored] == [2, 2]
    assert all(one.complete for one in stored)


def test_a_trace_id_written_in_upper_case_is_the_same_trace(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)
    text = path.read_text().splitlines()
    text[2] = text[2].replace(trace_ids[0], trace_ids[0].upper())
    path.write_text("\n".join(text) + "\n")

    stored = list(read_traces(path))

    assert [one.trace_id for one in stored] == trace_ids
    assert [len(list(one.roots[0].walk())) for one in stored] == [2, 2]


def test_a_line_whose_trace_id_is_not_hex_is_a_problem_of_the_file(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)
    text = path.read_text().splitlines()
    text.append(text[0].replace(trace_ids[0], "z" * 32))
    path.write_text("\n".join(text) + "\n")

    traces = read_traces(path)

    assert traces.trace_ids == trace_ids
    assert [problem.line for problem in traces.problems] == [5]
    assert "trace_id" in traces.problems[0].message
    assert all(one.complete for one in traces)
