"""evaluate_traces: stored traces scored as live runs are, without running anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import evaltrace
from evaltrace import (
    Evaluable,
    EvaluatorContext,
    ObservationNode,
    evaluate_traces,
    last_llm_call,
    load_traces,
    root,
    wrap,
)
from evaltrace.capture.exporters import JsonLinesExporter
from evaltrace.engine import evaluate_inputs
from evaltrace.errors import NotATraceFileError
from evaltrace.evals import by_name
from evaltrace.judges import LevenshteinMatch
from evaltrace.results import CompletionStatus
from evaltrace.trace import read_traces, split_traces
from span_factory import PARENT_CYCLES, span_line

FIXTURES = Path(__file__).parent / "fixtures"
QUESTIONS = ["What is the capital of France?", "What is the capital of Peru?", "Who are you?"]
ANSWERS = {"France": "Paris", "Peru": "Lima"}


@wrap(kind="tool")
def lookup(country: str) -> str | None:
    return ANSWERS.get(country)


@wrap(kind="agent")
def answer(question: str) -> str:
    country = question.rstrip("?").rsplit(" ", 1)[-1]
    found = lookup(country)
    return wrap(found or "I do not know", purpose="output", name="answer")


def exact(evaluable: Evaluable) -> float:
    return 1.0 if evaluable.output_value("answer") == evaluable.expectation else 0.0


def used_the_tool(ctx: EvaluatorContext) -> bool:
    assert ctx.trace is not None
    return any(node.find("lookup") for node in ctx.trace)


EVALUATORS = [exact, used_the_tool, LevenshteinMatch()]
EXPECTED = ["Paris", "Lima", "I am a bot"]


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    yield
    evaltrace.shutdown(timeout_millis=1000)


def scores(entries: Sequence[object]) -> list[list[float | None]]:
    return [[e.score for e in entry.evaluations] for entry in entries]  # type: ignore[attr-defined]


@pytest.fixture
def exported(
    tmp_path: Path, fresh_runtime: None
) -> tuple[Path, list[list[float | None]], list[str]]:
    """The app run live under evaluation with its spans exported to a JSONL file."""
    path = tmp_path / "spans.jsonl"
    evaltrace.init(exporters=[JsonLinesExporter(path)])
    cases = [Evaluable(expectation=expected) for expected in EXPECTED]
    live = evaltrace.run(evaluate_inputs(answer, QUESTIONS, EVALUATORS, evaluables=cases))
    assert evaltrace.flush()
    trace_ids = [f"{r.run.handler.trace_ids[0]:032x}" for r in live if r.run is not None]
    return path, scores(live), trace_ids


def test_stored_traces_score_as_the_live_runs_did(
    exported: tuple[Path, list[list[float | None]], list[str]],
) -> None:
    path, live_scores, trace_ids = exported

    result = evaltrace.run(
        evaluate_traces(path, EVALUATORS, expectations=dict(zip(trace_ids, EXPECTED, strict=True)))
    )

    by_trace = {entry.trace_ids[0]: entry for entry in result.entries}
    assert scores([by_trace[trace_id] for trace_id in trace_ids]) == live_scores
    assert result.evaluators == ["exact", "used_the_tool", "LevenshteinMatch"]
    assert result.name == "spans" and result.source == str(path)
    assert not result.errors


def test_each_entry_names_its_trace_and_its_root_span(
    exported: tuple[Path, list[list[float | None]], list[str]],
) -> None:
    path, _, trace_ids = exported

    result = evaltrace.run(evaluate_traces(path, [exact]))

    entry = {e.name: e for e in result.entries}[trace_ids[0]]
    assert entry.trace_ids == [trace_ids[0]]
    assert entry.description == "answer"  # the runner's root span, named after the app
    assert entry.input == QUESTIONS[0]
    assert entry.output == "Paris"
    assert entry.duration_s > 0 and entry.started_at is not None
    assert not entry.has_expectation  # none given: scored as having none


def test_expectations_may_be_given_by_position(tmp_path: Path) -> None:
    traces = split_traces(load_traces(FIXTURES / "phoenix_spans.json"))
    outputs = [root(trace).output_value("answer") for trace in traces]

    result = evaltrace.run(
        evaluate_traces(traces, [exact], expectations={0: outputs[0], 1: "something else"})
    )

    assert [e.evaluations[0].score for e in result.entries] == [1.0, 0.0]


def test_an_expectation_that_matches_no_trace_is_reported(tmp_path: Path) -> None:
    traces = split_traces(load_traces(FIXTURES / "phoenix_spans.json"))

    result = evaltrace.run(evaluate_traces(traces, [exact], expectations={"0" * 32: "x", 7: "y"}))

    assert [(e.type, e.where) for e in result.errors] == [
        ("UnmatchedExpectationError", "expectations")
    ] * 2
    assert not result.passed


def test_an_expectations_key_that_is_no_trace_id_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"expectations key 'trace-1' is not a trace id"):
        evaltrace.run(evaluate_traces([], [exact], expectations={"trace-1": "x"}))


def test_a_corrupt_line_fails_its_trace_and_the_others_are_scored(
    exported: tuple[Path, list[list[float | None]], list[str]],
) -> None:
    path, _, _ = exported
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if json.loads(line)["name"] == "lookup")
    broken = json.loads(lines[number])["trace_id"]
    lines[number] = lines[number][:70]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = evaltrace.run(evaluate_traces(path, [exact, used_the_tool]))

    by_trace = {entry.name: entry for entry in result.entries}
    failed = by_trace.pop(broken)
    assert failed.status is CompletionStatus.LOG_FILE_ERROR
    assert failed.error is not None and failed.error.where == "trace_file"
    assert failed.error.message.startswith(f"{path}, line {number + 1}: not valid JSON")
    assert [e.status for e in failed.evaluations] == ["errored"] * 2
    assert len(by_trace) == 2
    assert all(e.status == "scored" for entry in by_trace.values() for e in entry.evaluations)


def test_a_line_of_no_trace_is_an_error_of_the_run(
    exported: tuple[Path, list[list[float | None]], list[str]],
) -> None:
    path, _, _ = exported
    with path.open("a", encoding="utf-8") as file:
        file.write("garbage\n")

    result = evaltrace.run(evaluate_traces(path, [used_the_tool]))

    (error,) = result.errors
    assert error.where == "trace_file" and error.message.startswith(f"{path}, line ")
    assert all(entry.status is CompletionStatus.SUCCESS for entry in result.entries)
    assert not result.passed


def test_the_roots_load_traces_returns_are_scored_one_trace_each(
    exported: tuple[Path, list[list[float | None]], list[str]],
) -> None:
    path, _, trace_ids = exported

    result = evaltrace.run(evaluate_traces(load_traces(path), [used_the_tool]))

    assert sorted(entry.name for entry in result.entries) == sorted(trace_ids)


def model_said_it(evaluable: Evaluable) -> float:
    return 1.0 if evaluable.output_value("output") == evaluable.expectation else 0.0


def test_an_otlp_json_export_is_scored_from_its_model_call() -> None:
    result = evaltrace.run(
        evaluate_traces(
            FIXTURES / "otlp_export.json",
            [model_said_it],
            from_trace=last_llm_call,
            expectations={0: "It's sunny."},
        )
    )

    (entry,) = result.entries
    assert entry.evaluations[0].score == 1.0
    assert entry.trace_ids == ["5b8efff798038103d269b633813fc60c"]


def test_phoenix_span_json_is_scored_trace_by_trace() -> None:
    for name in ("phoenix_spans.json", "phoenix_spans_otlp.json"):
        result = evaltrace.run(evaluate_traces(FIXTURES / name, [used_the_model]))

        assert len(result.entries) == 2
        assert all(entry.status is CompletionStatus.SUCCESS for entry in result.entries)


def used_the_model(ctx: EvaluatorContext) -> bool:
    return last_llm_call(ctx.trace or []).output_value("output") is not None


def test_a_selector_that_finds_nothing_errors_its_entry() -> None:
    result = evaltrace.run(
        evaluate_traces(FIXTURES / "phoenix_spans.json", [exact], from_trace=by_name("missing"))
    )

    entry = result.entries[0]
    assert entry.status is CompletionStatus.ERROR
    assert entry.error is not None and entry.error.where == "from_trace"
    assert entry.evaluations[0].error == entry.error


def test_an_evaluator_that_raises_errors_its_evaluation_only() -> None:
    def broken(evaluable: Evaluable) -> float:
        raise RuntimeError("no score today")

    result = evaltrace.run(evaluate_traces(FIXTURES / "phoenix_spans.json", [broken, exact]))

    for entry in result.entries:
        first, second = entry.evaluations
        assert first.error is not None and first.error.message == "no score today"
        assert second.status == "scored"


def test_trace_trees_given_lazily_are_read_as_they_are_scored() -> None:
    traces = split_traces(load_traces(FIXTURES / "phoenix_spans.json"))
    taken: list[int] = []

    def lazily() -> Iterator[list[ObservationNode]]:
        for index, trace in enumerate(traces):
            taken.append(index)
            yield trace

    seen: list[list[int]] = []

    def records_what_was_taken(evaluable: Evaluable) -> float:
        seen.append(list(taken))
        return 1.0

    evaltrace.run(evaluate_traces(lazily(), [records_what_was_taken], concurrency=1))

    assert seen == [[0], [0, 1]]


def test_something_that_is_not_traces_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"traces\[0\]\[0\] is int, not an ObservationNode"):
        evaltrace.run(evaluate_traces([[1]], [exact]))
    with pytest.raises(TypeError, match="traces must be a trace file's path"):
        evaltrace.run(evaluate_traces(42, [exact]))  # type: ignore[arg-type]


def test_a_trace_file_read_once_can_be_scored() -> None:
    traces = read_traces(FIXTURES / "phoenix_spans.json")

    result = evaltrace.run(evaluate_traces(traces, [used_the_model], name="phoenix"))

    assert result.name == "phoenix" and len(result.entries) == 2


def anything(evaluable: Evaluable) -> float:
    return 1.0


@pytest.mark.parametrize("loop", PARENT_CYCLES.values(), ids=PARENT_CYCLES)
def test_a_trace_whose_parent_links_loop_is_a_log_file_error(
    tmp_path: Path, loop: list[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([span_line(7, None, "top", trace_id=2), *loop]), encoding="utf-8")

    result = evaltrace.run(evaluate_traces(path, [anything]))

    sound, looped = result.entries
    assert sound.status is CompletionStatus.SUCCESS
    assert looped.status is CompletionStatus.LOG_FILE_ERROR
    assert looped.error is not None and looped.error.where == "trace_file"
    assert looped.error.message.startswith(f"{path}, line 2: ")
    assert "names itself as its parent" in looped.error.message or (
        "go round in a loop" in looped.error.message
    )
    assert not result.passed


READ_A_FIFO = """
import os, sys, evaltrace
from evaltrace import evaluate_traces, load_traces
from evaltrace.errors import NotATraceFileError
from evaltrace.trace import read_traces

path = sys.argv[1]
os.mkfifo(path)
try:
    {call}
except NotATraceFileError as exc:
    print(exc)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize(
    "call",
    [
        "evaltrace.run(evaluate_traces(path, [lambda evaluable: 1.0]))",
        "load_traces(path)",
        "list(read_traces(path))",
    ],
)
def test_a_named_pipe_is_refused_without_being_opened(tmp_path: Path, call: str) -> None:
    path = tmp_path / "spans.jsonl"
    code = textwrap.dedent(READ_A_FIFO).format(call=call)

    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"{path} is a named pipe, not a regular file: a trace file is a file of evaltrace's "
        "JSON lines, an OTLP-JSON export or Phoenix span JSON"
    )


def test_a_folder_is_not_a_trace_file(tmp_path: Path) -> None:
    with pytest.raises(NotATraceFileError, match="is a folder, not a regular file"):
        evaltrace.run(evaluate_traces(tmp_path, [anything]))


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{{{ not json\n\x01\x02 nor this\n", "no line of it is a span (line 1: not valid JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "it holds binary data, not text"),
    ],
    ids=["garbage", "binary"],
)
def test_a_file_of_which_no_line_is_a_span_is_refused(
    tmp_path: Path, content: bytes, said: str
) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_bytes(content)

    with pytest.raises(NotATraceFileError) as caught:
        evaltrace.run(evaluate_traces(path, [anything]))

    assert str(caught.value).startswith(f"{path}: no line of it is a span")
    assert said in str(caught.value)


DATASET_YAML = """\
name: recipes
evaluators: [ExactMatch]
entries:
  - entry_kwargs: {dish: soup}
    expectation: soup
"""


@pytest.mark.parametrize("reader", [load_traces, read_traces], ids=["load_traces", "read_traces"])
def test_a_dataset_file_given_as_traces_is_named_as_a_dataset(
    tmp_path: Path, reader: object
) -> None:
    path = tmp_path / "recipes.evaltrace.yaml"
    path.write_text(DATASET_YAML, encoding="utf-8")

    with pytest.raises(NotATraceFileError) as caught:
        reader(path)  # type: ignore[operator]

    assert str(caught.value) == (
        f"{path}: no line of it is a span; this is a dataset file: run `evaltrace test {path}`"
    )
