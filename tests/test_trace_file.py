"""read_traces: a trace file read trace by trace, its bad lines reported, the rest read."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaltrace.errors import NotATraceFileError, TraceFormatError
from evaltrace.trace import (
    StoredTrace,
    load_traces,
    read_traces,
    save_traces,
    split_traces,
    trace_to_text,
    walk_trace,
)
from evaltrace.trace._span_json import read_own_line, record_from_json
from span_factory import PARENT_CYCLES, Spans, span_line

FIXTURES = Path(__file__).parent / "fixtures"


def two_runs(tmp_path: Path) -> Path:
    """A JSONL file of two runs of three spans each, children before their parents."""
    spans = Spans(service_name="bot")
    try:
        for run in range(2):
            top = spans.start(f"run{run}", run * 5, attributes={"input.value": f'"q{run}"'})
            for child in range(2):
                spans.end(spans.start(f"step{child}", run * 5 + child + 1, parent=top), 20)
            spans.end(top, 30)
        path = tmp_path / "runs.jsonl"
        finished = spans.finished()
    finally:
        spans.provider.shutdown()
    save_traces(finished, path)
    return path


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_each_trace_of_a_file_reads_as_split_traces_gives_it(tmp_path: Path) -> None:
    path = two_runs(tmp_path)

    stored = list(read_traces(path))

    expected = split_traces(load_traces(path))
    assert [trace_to_text(one.roots) for one in stored] == [trace_to_text(t) for t in expected]
    assert [one.trace_id for one in stored] == [f"{t[0].span.trace_id:032x}" for t in expected]
    assert all(one.complete for one in stored)


def test_traces_come_in_the_order_the_file_first_mentions_them(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    first_line_trace = json.loads(lines(path)[0])["trace_id"]

    traces = read_traces(path)

    assert len(traces) == 2
    assert traces.trace_ids[0] == first_line_trace


def test_a_corrupt_line_is_reported_with_its_line_and_the_rest_still_loads(
    tmp_path: Path,
) -> None:
    path = two_runs(tmp_path)
    text = lines(path)
    broken_trace = json.loads(text[2])["trace_id"]
    text[2] = text[2][:60]  # cut short, as by a process killed mid-write
    path.write_text("\n".join(text) + "\n", encoding="utf-8")

    by_id = {one.trace_id: one for one in read_traces(path)}

    broken = by_id.pop(broken_trace)
    (problem,) = broken.problems
    assert problem.line == 3 and problem.trace_id == broken_trace
    assert str(problem).startswith(f"{path}, line 3: not valid JSON")
    assert len(list(walk_trace(broken.roots))) == 2  # its root span is lost
    (whole,) = by_id.values()
    assert whole.complete and len(list(walk_trace(whole.roots))) == 3


def test_a_line_naming_no_trace_is_a_problem_of_the_file(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    text = lines(path)
    text.insert(1, "this is not JSON")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")

    traces = read_traces(path)

    (problem,) = traces.problems
    assert problem.line == 2 and problem.trace_id is None
    assert [one.complete for one in traces] == [True, True]


def test_a_wrong_field_is_a_problem_of_the_trace_naming_the_field(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    text = lines(path)
    data = json.loads(text[0])
    data["start_time_ns"] = "soon"
    text[0] = json.dumps(data, separators=(",", ":"))
    path.write_text("\n".join(text) + "\n", encoding="utf-8")

    stored = next(iter(read_traces(path)))

    (problem,) = stored.problems
    assert problem.message == "field \"start_time_ns\" must be an integer, found 'soon'"
    assert problem.line == 1


def test_a_span_repeated_with_other_content_is_a_problem_of_its_trace(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    text = lines(path)
    data = json.loads(text[0])
    data["name"] = "renamed"
    text.append(json.dumps(data, separators=(",", ":")))
    text.append(text[1])  # an identical copy is read once
    path.write_text("\n".join(text) + "\n", encoding="utf-8")

    stored = {one.trace_id: one for one in read_traces(path)}[data["trace_id"]]

    (problem,) = stored.problems
    assert problem.line == 7
    assert f"is also at {path}, line 1, with other content" in problem.message


def test_a_byte_order_mark_before_the_first_line_is_skipped(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    assert [one.complete for one in read_traces(path)] == [True, True]


def test_an_otlp_json_export_reads_as_load_traces_reads_it() -> None:
    (stored,) = read_traces(FIXTURES / "otlp_export.json")

    assert trace_to_text(stored.roots) == trace_to_text(load_traces(FIXTURES / "otlp_export.json"))
    assert stored.trace_id == "5b8efff798038103d269b633813fc60c"


def test_collector_file_exporter_lines_read_one_batch_per_line(tmp_path: Path) -> None:
    document = json.loads((FIXTURES / "otlp_export.json").read_text(encoding="utf-8"))
    path = tmp_path / "collector.jsonl"
    path.write_text(json.dumps(document) + "\n" + json.dumps(document) + "\n", encoding="utf-8")

    (stored,) = read_traces(path)

    assert stored.complete and len(list(stored.roots[0].walk())) == 3


def test_phoenix_span_json_reads_each_trace_it_was_sent() -> None:
    for name in ("phoenix_spans.json", "phoenix_spans_otlp.json"):
        stored = {one.trace_id: trace_to_text(one.roots) for one in read_traces(FIXTURES / name)}

        expected = split_traces(load_traces(FIXTURES / name))
        assert stored == {f"{t[0].span.trace_id:032x}": trace_to_text(t) for t in expected}


def test_a_damaged_pretty_printed_document_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('{\n  "resourceSpans": [\n    {,\n  ]\n}\n', encoding="utf-8")

    with pytest.raises(TraceFormatError, match=r"export.json, line 3: not valid JSON"):
        read_traces(path)


def test_one_trace_is_read_by_its_id(tmp_path: Path) -> None:
    path = two_runs(tmp_path)
    traces = read_traces(path)
    second = traces.trace_ids[1]

    stored = traces.get(second.upper())

    assert stored is not None and stored.trace_id == second
    assert stored.roots[0].span.name == "run1"
    assert traces.get("0" * 32) is None


def test_span_attributes_read_from_a_line_keep_sequences_as_tuples(tmp_path: Path) -> None:
    line = {
        "trace_id": "0" * 31 + "1",
        "span_id": "0" * 15 + "2",
        "name": "answer",
        "start_time_ns": 1,
        "end_time_ns": 2,
        "attributes": {"tags": ["a", "b"], "input.value": '"q"'},
        "resource": {"service.name": "bot"},
    }
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")

    (stored,) = read_traces(path)

    record = stored.roots[0].span.record
    assert record.attributes == {"tags": ("a", "b"), "input.value": '"q"'}
    assert dict(record.resource_attributes) == {"service.name": "bot"}
    assert stored.roots[0].span.input == "q"


@pytest.mark.parametrize("loop", PARENT_CYCLES.values(), ids=PARENT_CYCLES)
def test_a_parent_cycle_is_a_problem_of_its_trace(tmp_path: Path, loop: list[str]) -> None:
    path = tmp_path / "runs.jsonl"
    whole = [span_line(7, None, "top", trace_id=2), span_line(8, 7, "step", trace_id=2)]
    path.write_text("\n".join([*whole, *loop]) + "\n", encoding="utf-8")

    sound, looped = read_traces(path)

    assert sound.complete
    (problem,) = looped.problems
    assert problem.line == 3 and problem.trace_id == f"{1:032x}"
    assert str(problem).startswith(f"{path}, line 3: ")
    assert "names itself as its parent" in problem.message or "go round in a loop" in (
        problem.message
    )
    assert len(list(walk_trace(looped.roots))) == len(loop)  # no span is lost


def test_a_file_of_which_no_line_is_a_span_is_not_a_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n- eggs\n- {milk}\n", encoding="utf-8")

    with pytest.raises(NotATraceFileError) as caught:
        read_traces(path)

    assert str(caught.value).startswith(f"{path}: no line of it is a span")
    assert "line 1: not valid JSON" in str(caught.value)


def test_a_binary_file_is_not_a_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 8)

    with pytest.raises(NotATraceFileError, match="no line of it is a span; it holds binary data"):
        read_traces(path)


def test_an_empty_file_holds_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")

    assert len(read_traces(path)) == 0


def test_a_saved_run_given_as_traces_is_named_as_one(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"run_id": "r1", "name": "faq", "entries": []}, indent=2))

    with pytest.raises(NotATraceFileError) as caught:
        read_traces(path)

    assert str(caught.value) == (
        f"{path}: no line of it is a span; this is a saved run: read it with "
        f"`evaltrace report {path}`"
    )


# One pass per line: a line of evaltrace's own shape reads the same whichever way it is read

OWN_LINE: dict[str, Any] = {
    "trace_id": "0af7651916cd43dd8448eb211c80319c",
    "span_id": "b7ad6b7169203331",
    "parent_span_id": None,
    "name": "answer",
    "kind": "INTERNAL",
    "start_time_ns": 1_733_400_000_000_000_000,
    "end_time_ns": 1_733_400_000_000_900_000,
    "status": {"code": "OK", "description": None},
    "attributes": {"input.value": '{"q": 1}', "tags": ["a", ["b"]], "n": 3, "f": 0.5},
    "events": [{"name": "evaltrace.wrap", "timestamp_ns": 5, "attributes": {"k": [1, 2]}}],
    "resource": {"service.name": "bot", "sdk": {"v": [1]}},
}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"parent_span_id": "00f067aa0ba902b7"},
        {"status": {"code": "ERROR", "description": "boom"}},
        {"trace_id": "0AF7651916CD43DD8448EB211C80319C"},
        {"status": {"code": "ok", "description": None}},
        {"end_time_ns": None},
        {"kind": None, "events": None, "attributes": None, "resource": None},
        {"named_values": [{"name": "a", "purpose": "output", "value": 1}]},
        {"extra": "ignored"},
        {"trace_id": "+af7651916cd43dd8448eb211c80319c"},
        {"span_id": "AAAAAAAAAAE="},
        {"start_time_ns": 1.5},
        {"start_time_ns": True},
        {"attributes": {"a": "\ud800"}},
    ],
    ids=lambda change: ",".join(change) or "as written",
)
def test_a_line_read_in_one_pass_reads_as_its_fields_read_one_by_one(
    change: dict[str, Any],
) -> None:
    line = json.dumps({**OWN_LINE, **change}).encode()

    try:
        expected: object = record_from_json(json.loads(line))
        expected = (expected[0], tuple(expected[1]))  # type: ignore[index]
    except ValueError as exc:
        expected = str(exc)
    try:
        read: object = read_own_line(line)
    except ValueError as exc:
        read = str(exc)

    assert repr(read) == repr(expected)


# --- a trace let go is freed at once, and one still held keeps its links ------------------------


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The garbage collector off: what is freed is freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def first_trace(tmp_path: Path) -> StoredTrace:
    return next(iter(read_traces(two_runs(tmp_path))))


def test_a_stored_trace_let_go_is_freed_without_the_garbage_collector(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    child = weakref.ref(stored.roots[0].children[0])

    del stored

    assert child() is None


def test_a_node_kept_after_its_stored_trace_is_let_go_keeps_its_ancestors(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    child = stored.roots[0].children[0]

    del stored

    assert [node.span.name for node in child.ancestors] == ["run0"]


def test_roots_kept_after_their_stored_trace_is_let_go_keep_their_links(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    roots = stored.roots

    del stored

    assert all(child.parent is roots[0] for child in roots[0].children)


def test_children_kept_after_their_stored_trace_is_let_go_keep_their_parent(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    children = stored.roots[0].children

    del stored

    assert [child.parent.span.name for child in children if child.parent] == ["run0", "run0"]


def test_a_stored_trace_whose_node_is_listed_twice_keeps_its_links_when_let_go(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    root = stored.roots[0]
    child = root.children[0]
    root.children.append(child)  # the same node twice: counted once more than a tree holds it
    kept = weakref.ref(child)

    del stored, root

    assert kept() is not None and child.parent is not None
    assert child.parent.span.name == "run0"


def test_a_stored_trace_whose_child_names_another_parent_keeps_its_links_when_let_go(
    tmp_path: Path, no_collector: None
) -> None:
    stored = first_trace(tmp_path)
    first, second = stored.roots[0].children
    second.parent = first  # not the node that lists it: not a tree as the readers build it
    kept = weakref.ref(second)

    del stored, first, second

    survivor = kept()
    assert survivor is not None and survivor.parent is not None
    gc.collect()


def test_a_stored_trace_made_without_its_roots_raises_only_that_they_are_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    with pytest.raises(TypeError, match="roots"):
        StoredTrace(trace_id="0" * 32)  # type: ignore[call-arg]
    gc.collect()

    assert unraisable == []
