"""read_traces over files whose lines are told apart by their first bytes (the first pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaltrace.errors import TraceFormatError
from evaltrace.trace import (
    load_traces,
    read_traces,
    save_traces,
    trace_file,
    trace_to_text,
    walk_trace,
)
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


def test_a_last_line_without_its_newline_is_read(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))

    stored = list(read_traces(path))

    assert [one.trace_id for one in stored] == trace_ids
    assert [len(list(one.roots[0].walk())) for one in stored] == [2, 2]
    assert all(one.complete for one in stored)


def test_a_line_cut_short_is_reported_at_the_column_json_gives_for_it(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)
    text = path.read_text().splitlines()
    text[2] = text[2][: text[2].index('"name"') + len('"name":')]  # a value is missing
    path.write_text("\n".join(text) + "\n")
    try:
        json.loads(text[2] + "\n")
    except json.JSONDecodeError as exc:
        column = exc.colno

    stored = {one.trace_id: one for one in read_traces(path)}

    (problem,) = stored[trace_ids[0]].problems
    assert problem.line == 3
    assert f"at column {column})" in problem.message


def test_traces_whose_lines_cross_the_first_pass_s_reads_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(save_lines(tmp_path, runs=3)))
    whole = [trace_to_text(one.roots) for one in read_traces(path)]
    monkeypatch.setattr(trace_file, "_CHUNK_BYTES", 100)  # shorter than a line

    stored = list(read_traces(path))

    assert [trace_to_text(one.roots) for one in stored] == whole
    assert [len(list(walk_trace(one.roots))) for one in stored] == [3, 3, 3]
    assert all(one.complete for one in stored)


def save_lines(tmp_path: Path, *, runs: int) -> list[bytes]:
    """The lines of ``runs`` runs of three spans, as save_traces writes them."""
    spans = Spans(service_name="bot")
    try:
        for run in range(runs):
            top = spans.start(f"run{run}", run * 5)
            for step in range(2):
                spans.end(spans.start(f"step{step}", run * 5 + step + 1, parent=top), 20)
            spans.end(top, 30)
        finished = spans.finished()
    finally:
        spans.provider.shutdown()
    written = tmp_path / "saved.jsonl"
    save_traces(finished, written)
    return written.read_bytes().splitlines(keepends=True)


def test_a_line_cut_inside_a_string_says_at_column_once(tmp_path: Path) -> None:
    path, trace_ids = interleaved(tmp_path)
    text = path.read_text().splitlines()
    cut = text[2].index('"name":"') + len('"name":"x')  # the span's name left unterminated
    text[2] = text[2][:cut]
    path.write_text("\n".join(text) + "\n")
    # json's messages here end with the word "at", which the column follows: read_traces
    # reads the line with its newline, load_traces without.
    said = []
    for line in (text[2] + "\n", text[2]):
        with pytest.raises(json.JSONDecodeError) as refused:
            json.loads(line)
        assert refused.value.msg.endswith(" at")
        said.append(f"not valid JSON ({refused.value.msg} column {refused.value.colno}).")

    stored = {one.trace_id: one for one in read_traces(path)}
    (problem,) = stored[trace_ids[0]].problems
    with pytest.raises(TraceFormatError) as loaded:
        load_traces(path)

    assert said[0] in problem.message and " at at " not in problem.message
    assert said[1] in str(loaded.value) and " at at " not in str(loaded.value)
