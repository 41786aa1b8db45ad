"""run_and_evaluate and assert_pass: one run per input, isolation, errors as data."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
from typing import Any

import anyio
import pytest

from evaltrace import (
    Evaluable,
    Evaluation,
    Evaluator,
    EvaluatorContext,
    NamedData,
    capture_traces,
    wrap,
)
from evaltrace.engine import (
    EvalAssertionError,
    assert_pass,
    evaluate_inputs,
    run_and_evaluate,
    run_captured,
)
from evaltrace.evals import ScoreThreshold


class CountingApp:
    """A runnable that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, question: str) -> str:
        with self._lock:
            self.calls += 1
        return question.upper()


def upper_ok(evaluable: Evaluable) -> float:
    question = evaluable.input_value()
    return 1.0 if evaluable.output_value() == str(question).upper() else 0.0


async def nonempty(evaluable: Evaluable) -> bool:
    return bool(evaluable.output_value())


@pytest.mark.anyio
async def test_run_and_evaluate_scores_an_undecorated_function() -> None:
    result = await run_and_evaluate(upper_ok, CountingApp(), "hi")
    assert (result.score, result.evaluator) == (1.0, "upper_ok")


@pytest.mark.anyio
async def test_run_and_evaluate_merges_the_expectation() -> None:
    def matches(evaluable: Evaluable) -> bool:
        return evaluable.output_value() == evaluable.expected_output

    assert (await run_and_evaluate(matches, str.upper, "x", expected_output="X")).score == 1.0
    assert (await run_and_evaluate(matches, str.upper, "x", expected_output="Y")).score == 0.0


@pytest.mark.anyio
async def test_run_and_evaluate_reports_a_raising_runnable_as_errored() -> None:
    def app(question: str) -> str:
        raise ConnectionError("database down")

    result = await run_and_evaluate(upper_ok, app, "q")
    assert result.error is not None
    assert (result.error.type, result.error.where) == ("ConnectionError", "runnable")
    assert result.evaluator == "upper_ok"


@pytest.mark.anyio
async def test_partial_trace_of_a_raising_runnable_is_kept() -> None:
    @wrap
    def step() -> int:
        return 1

    async def app(question: str) -> str:
        step()
        raise ValueError("late failure")

    run = await run_captured(app, "q")
    assert isinstance(run.error, ValueError)
    (root,) = run.trace
    assert root.span.name == "app" and root.span.status == "error"
    assert [child.span.name for child in root.children] == ["step"]


@pytest.mark.anyio
async def test_the_run_span_records_its_kind_mark_input_and_output() -> None:
    async def app(question: str) -> str:
        return question.upper()

    run = await run_captured(app, "q")

    (span,) = run.handler.raw_spans
    assert dict(span.attributes or {}) == {
        "openinference.span.kind": "CHAIN",
        "evaltrace.run": True,
        "input.value": '"q"',
        "input.mime_type": "application/json",
        "output.value": '"Q"',
        "output.mime_type": "application/json",
    }


@pytest.mark.anyio
async def test_runnable_timeout_is_errored() -> None:
    async def slow(question: str) -> str:
        await anyio.sleep(30)
        return "late"

    result = await run_and_evaluate(upper_ok, slow, "q", timeout=0.05)
    assert result.error is not None and "did not finish within 0.05 s" in result.error.message


@pytest.mark.anyio
async def test_wrap_outputs_become_the_evaluated_output() -> None:
    @wrap
    async def app(question: str) -> dict[str, str]:
        wrap("draft", purpose="state", name="draft")
        wrap(question.upper(), purpose="output", name="answer")
        return {"ignored": "because wrap outputs exist"}

    seen: list[Evaluable] = []

    def probe(evaluable: Evaluable) -> float:
        seen.append(evaluable)
        return 1.0

    await run_and_evaluate(probe, app, "q")
    assert [(d.name, d.value) for d in seen[0].eval_output or []] == [
        ("draft", "draft"),
        ("answer", "Q"),
    ]


@pytest.mark.anyio
async def test_runnable_runs_once_per_input_whatever_the_number_of_evaluators() -> None:
    app = CountingApp()
    matrix = await assert_pass(app, ["a", "b", "c"], [upper_ok, nonempty, upper_ok, nonempty])
    assert app.calls == 3
    assert [len(row) for row in matrix] == [4, 4, 4]
    assert all(e.score == 1.0 for row in matrix for e in row)


@pytest.mark.anyio
async def test_evaluables_with_output_are_scored_without_running() -> None:
    app = CountingApp()
    done = Evaluable(
        eval_input=[NamedData(name="input", value="a")],
        eval_output=[NamedData(name="output", value="A")],
    )
    pending = Evaluable(eval_input=[NamedData(name="input", value="b")])
    matrix = await assert_pass(app, ["a", "b"], [upper_ok], evaluables=[done, pending])
    assert app.calls == 1
    assert [row[0].score for row in matrix] == [1.0, 1.0]


@pytest.mark.anyio
async def test_evaluables_length_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="evaluables has 1 items but eval_inputs has 2"):
        await assert_pass(str.upper, ["a", "b"], [upper_ok], evaluables=[Evaluable()])


@pytest.mark.anyio
async def test_three_hundred_concurrent_inputs_each_see_only_their_own_output() -> None:
    in_flight = 0
    high_water = 0

    @wrap
    async def app(number: int) -> str:
        nonlocal in_flight, high_water
        in_flight += 1
        high_water = max(high_water, in_flight)
        wrap(number, purpose="input", name="number")
        await anyio.sleep(0.001 * (number % 7))
        wrap(f"echo-{number}", purpose="output", name="echo")
        wrap(number * 2, purpose="state", name="double")
        in_flight -= 1
        return "done"

    def own_output(evaluable: Evaluable) -> Evaluation:
        number = evaluable.input_value("number")
        ok = evaluable.output_value("echo") == f"echo-{number}"
        ok = ok and evaluable.output_value("double") == number * 2
        return Evaluation(score=1.0 if ok else 0.0, reasoning=f"number {number}")

    async def async_own_output(evaluable: Evaluable, *, trace: Any = None) -> float:
        (root,) = trace  # the span the runner opens around the run
        (app_node,) = root.children
        expected = evaluable.input_value("number")
        return (
            1.0
            if root.span.input == expected and app_node.span.input == {"number": expected}
            else 0.0
        )

    matrix = await assert_pass(
        app, list(range(300)), [own_output, async_own_output], concurrency=50
    )
    assert len(matrix) == 300
    assert all(e.score == 1.0 for row in matrix for e in row)
    assert high_water <= 50


@pytest.mark.anyio
async def test_failing_evaluators_leave_the_other_results_intact() -> None:
    # Only `hangs` ever yields to the event loop inside its time limit, so it is the only one
    # the timeout can stop, however loaded the machine: the outcome is deterministic.
    async def app(text: str) -> str:
        return text.upper()

    async def ok(evaluable: Evaluable) -> float:
        return 1.0 if evaluable.output_value() == str(evaluable.input_value()).upper() else 0.0

    async def raises(evaluable: Evaluable) -> float:
        raise RuntimeError("broken evaluator")

    async def hangs(evaluable: Evaluable) -> float:
        await anyio.Event().wait()  # never set
        return 1.0

    async def nan(evaluable: Evaluable) -> float:
        return float("nan")

    async def too_high(evaluable: Evaluable) -> float:
        return 1.5

    async def text(evaluable: Evaluable) -> str:
        return ""  # a string is a label, but an empty one is no result

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, ["a", "b"], [ok, raises, hangs, nan, too_high, text], timeout=0.1)
    for row in info.value.results:
        assert row[0].score == 1.0
        assert [e.status for e in row[1:]] == ["errored"] * 5
        assert row[2].error is not None and row[2].error.type == "EvaluatorTimeoutError"


@pytest.mark.anyio
async def test_failing_sync_evaluators_leave_the_other_results_intact() -> None:
    def raises(evaluable: Evaluable) -> float:
        raise RuntimeError("broken evaluator")

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(
            str.upper, ["a", "b"], [upper_ok, raises, lambda e: float("nan"), lambda e: ""]
        )
    for row in info.value.results:
        assert row[0].score == 1.0
        assert [e.status for e in row[1:]] == ["errored"] * 3


@pytest.mark.anyio
async def test_eval_assertion_error_shows_a_readable_table() -> None:
    def exact(evaluable: Evaluable) -> Evaluation:
        expected = evaluable.expected_output
        ok = evaluable.output_value() == expected
        return Evaluation(score=1.0 if ok else 0.0, reasoning=f"expected {expected!r}")

    def length(evaluable: Evaluable) -> float:
        output = str(evaluable.output_value())
        if output.startswith("ERR"):
            raise ValueError("cannot measure an error")
        return min(1.0, len(output) / 10)

    def app(text: str) -> str:
        return "ERR" if text == "bad" else text.upper()

    cases = [
        Evaluable(expectation="HELLO"),
        Evaluable(expectation="nothing"),
        Evaluable(expectation="A VERY LONG QUESTION ABOUT THE WEATHER IN PARIS"),
    ]
    inputs = ["hello", "bad", "a very long question about the weather in Paris"]
    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, inputs, [exact, length], evaluables=cases)
    pad = " " * 81
    assert str(info.value) == (
        "assert_pass failed: 2 of 3 inputs passed (67%); required every score >= 0.5 on at "
        "least 100% of inputs\n"
        "#  input                     output                    expected                  "
        "evaluator  score  result  reasoning / error\n"
        "0  hello                     HELLO                     HELLO                     "
        "exact      1.00   pass    expected 'HELLO'\n"
        f"{pad}length     0.50   pass\n"
        "1  bad                       ERR                       nothing                   "
        "exact      0.00   FAIL    expected 'nothing'\n"
        f"{pad}length     -      ERROR   ValueError: cannot measure an error\n"
        "2  a very long question ab…  A VERY LONG QUESTION AB…  A VERY LONG QUESTION AB…  "
        "exact      1.00   pass    expected 'A VERY LONG QUESTION ABOUT THE WEATHER IN PARIS'\n"
        f"{pad}length     1.00   pass"
    )
    assert [[e.status for e in row] for row in info.value.results] == [
        ["scored", "scored"],
        ["scored", "errored"],
        ["scored", "scored"],
    ]


@pytest.mark.anyio
async def test_score_threshold_pct_and_empty_inputs() -> None:
    await assert_pass(
        str.upper,
        ["a", "b"],
        [lambda e: e.output_value() == "A"],
        pass_criteria=ScoreThreshold(pct=0.5),
    )
    with pytest.raises(EvalAssertionError, match="no inputs were given"):
        await assert_pass(str.upper, [], [upper_ok])


@pytest.mark.anyio
async def test_failure_table_of_a_large_run_lists_only_failing_inputs() -> None:
    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(
            str.upper, [f"q{i}" for i in range(80)], [lambda e: e.output_value() != "Q7"]
        )
    lines = str(info.value).splitlines()
    assert lines[0].startswith("assert_pass failed: 79 of 80 inputs passed")
    assert [line.split()[:2] for line in lines[2:]] == [["7", "q7"]]


def test_score_threshold_ignores_skipped_and_fails_errored() -> None:
    criteria = ScoreThreshold(threshold=0.5)
    skipped = Evaluation.skip("no reference")
    errored = Evaluation.errored(RuntimeError("x"))
    good = Evaluation(score=0.9)
    assert criteria([[good, skipped]]) == (
        True,
        "1 of 1 inputs passed (100%); required every score >= 0.5 on at least 100% of inputs",
    )
    assert criteria([[good, errored]])[0] is False
    passed, message = criteria([[skipped]])
    assert not passed and message.startswith("no input was scored")
    with pytest.raises(ValueError, match="pct must be a number in"):
        ScoreThreshold(pct=1.5)


@pytest.mark.anyio
async def test_custom_pass_criteria_receive_the_matrix() -> None:
    seen: list[list[list[Evaluation]]] = []

    def never(matrix: list[list[Evaluation]]) -> tuple[bool, str]:
        seen.append(matrix)
        return False, "custom rule said no"

    with pytest.raises(EvalAssertionError, match="custom rule said no"):
        await assert_pass(str.upper, ["a"], [upper_ok], pass_criteria=never)
    assert len(seen[0]) == 1 and len(seen[0][0]) == 1


@pytest.mark.anyio
async def test_missing_injected_input_is_reported_with_the_entry_and_names() -> None:
    @wrap
    def app(question: str) -> str:
        return str(wrap("live", purpose="input", name="context"))

    case = Evaluable(eval_input=[NamedData(name="question", value="q")], description="entry A")
    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, ["q"], [upper_ok], evaluables=[case])
    error = info.value.results[0][0].error
    assert error is not None and error.type == "MissingEvalInputError"
    assert "name='context'" in error.message and "'question'" in error.message
    assert "entry A" in error.message


@pytest.mark.anyio
async def test_runs_inside_an_outer_capture_are_also_seen_by_it() -> None:
    async with capture_traces() as outer:
        await assert_pass(str.upper, ["a", "b"], [upper_ok])
    assert sorted(span.input for span in outer.spans) == ["a", "b"]


@pytest.mark.anyio
async def test_progress_is_reported_once_per_input_and_a_broken_callback_loses_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from evaltrace.engine import evaluate_inputs

    seen: list[tuple[int, int]] = []

    def progress(item: object, done: int, total: int) -> None:
        seen.append((done, total))
        if done == 2:
            raise RuntimeError("display broke")

    results = await evaluate_inputs(str.upper, ["a", "b", "c"], [upper_ok], on_progress=progress)
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]
    assert [r.evaluations[0].score for r in results] == [1.0, 1.0, 1.0]
    assert "on_progress callback raised" in caplog.text


@pytest.mark.anyio
async def test_cancelling_a_run_cancels_all_of_its_evaluators() -> None:
    from evaltrace.engine import evaluate_inputs

    started: list[str] = []
    finished: list[str] = []

    def slow(label: str) -> Any:
        async def evaluator(evaluable: Evaluable) -> float:
            started.append(label)
            await anyio.sleep(5)
            finished.append(label)
            return 1.0

        evaluator.__name__ = label
        return evaluator

    with anyio.move_on_after(0.2):
        await evaluate_inputs(str.upper, ["a"], [slow("first"), slow("second"), slow("third")])
    await anyio.sleep(0.05)
    assert sorted(started) == ["first", "second", "third"]
    assert finished == []
    import asyncio

    ours = [t for t in asyncio.all_tasks() if "evaluate" in t.get_coro().__qualname__]
    assert ours == []


class Unprintable(Exception):
    """An exception whose text cannot be had."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class NoRepr:
    """A value whose repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@pytest.mark.anyio
async def test_an_unprintable_exception_from_an_evaluator_errors_only_its_result() -> None:
    def raises(evaluable: Evaluable) -> float:
        raise Unprintable()

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(str.upper, ["a", "b"], [upper_ok, raises])
    for row in info.value.results:
        assert row[0].score == 1.0
        assert row[1].error is not None
        assert (row[1].error.type, row[1].error.message) == (
            "Unprintable",
            "<unprintable Unprintable>",
        )
    assert "Unprintable: <unprintable Unprintable>" in str(info.value)


@pytest.mark.anyio
async def test_an_unprintable_exception_from_the_runnable_errors_its_rows() -> None:
    def app(question: str) -> str:
        raise Unprintable()

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, ["a", "b"], [upper_ok])
    for (evaluation,) in info.value.results:
        assert evaluation.error is not None
        assert (evaluation.error.where, evaluation.error.message) == (
            "runnable",
            "<unprintable Unprintable>",
        )


@pytest.mark.anyio
async def test_values_whose_repr_raises_do_not_break_the_failure_table() -> None:
    def app(question: object) -> str:
        return "answer"

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(
            app,
            [NoRepr()],
            [lambda e: 0.0],
            evaluables=[Evaluable(expectation={"doc": NoRepr()})],  # type: ignore[dict-item]
        )
    row = str(info.value).splitlines()[2]
    assert row.split()[:3] == ["0", '"<unprintable', 'NoRepr>"']
    (item,) = info.value.inputs
    assert item.evaluable is not None and isinstance(item.evaluable.expectation, dict)
    assert "NoRepr" in str(item.evaluable.expectation["doc"])  # encoded by the capture codec


@pytest.mark.anyio
async def test_the_failure_table_shows_the_output_and_the_expectation() -> None:
    def exact(evaluable: Evaluable) -> bool:
        return bool(evaluable.output_value() == evaluable.expectation)

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(
            str.upper,
            ["paris"],
            [exact],
            evaluables=[Evaluable(expectation="Paris")],
        )
    header, row = str(info.value).splitlines()[1:3]
    assert header.split() == [
        "#", "input", "output", "expected", "evaluator", "score", "result", "reasoning", "/",
        "error",
    ]  # fmt: skip
    assert row.split() == ["0", "paris", "PARIS", "Paris", "exact", "0.00", "FAIL"]


@pytest.mark.anyio
async def test_the_failure_table_has_no_expected_column_without_expectations() -> None:
    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(str.upper, ["paris"], [lambda e: 0.0])
    header, row = str(info.value).splitlines()[1:3]
    assert "expected" not in header
    assert row.split()[:4] == ["0", "paris", "PARIS", "lambda"]


@pytest.mark.anyio
async def test_the_failure_table_marks_the_output_of_a_failed_run_as_unknown() -> None:
    def app(question: str) -> str:
        raise ValueError("down")

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, ["q"], [upper_ok])
    row = str(info.value).splitlines()[2]
    assert row.split()[:4] == ["0", "q", "-", "upper_ok"]


@pytest.mark.anyio
@pytest.mark.parametrize("inputs", ["abc", b"abc"], ids=["str", "bytes"])
async def test_a_string_is_refused_as_the_input_list(inputs: Any) -> None:
    with pytest.raises(TypeError, match=r"eval_inputs must be a list .* got (str|bytes)"):
        await assert_pass(str.upper, inputs, [upper_ok])
    with pytest.raises(TypeError, match="wrap it in a list"):
        await evaluate_inputs(str.upper, inputs, [upper_ok])


@pytest.mark.anyio
async def test_a_single_evaluator_is_refused_as_the_evaluator_list() -> None:
    with pytest.raises(TypeError, match="evaluators must be a list"):
        await assert_pass(str.upper, ["a"], upper_ok)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_wrong_runnable_and_evaluables_types_are_refused() -> None:
    with pytest.raises(TypeError, match="runnable must be a callable"):
        await assert_pass("app", ["a"], [upper_ok])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"evaluables\[0\] is dict, not an evaltrace.Evaluable"):
        await assert_pass(str.upper, ["a"], [upper_ok], evaluables=[{}])  # type: ignore[list-item]


def test_an_abandoned_blocked_sync_evaluator_does_not_delay_exit() -> None:
    script = """
import threading
import anyio
from evaltrace.engine import evaluate_inputs

never = threading.Event()


def blocks(evaluable):
    never.wait()
    return 1.0


def app_blocks(question):
    never.wait()


async def main():
    rows = await evaluate_inputs(str.upper, ["a"], [blocks], timeout=0.1)
    print(rows[0].evaluations[0].error.type)
    rows = await evaluate_inputs(app_blocks, ["a"], [blocks], timeout=0.1)
    print(rows[0].evaluations[0].error.type, rows[0].evaluations[0].error.where)


anyio.run(main)
print("exiting")
"""
    # The guard only keeps a regression from hanging the suite; a healthy run exits at once.
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "EvaluatorTimeoutError",
        "RunnableTimeoutError runnable",
        "exiting",
    ]


@pytest.mark.anyio
async def test_each_input_may_have_its_own_evaluators() -> None:
    def is_upper(evaluable: Evaluable) -> bool:
        return str(evaluable.output_value()).isupper()

    def is_short(evaluable: Evaluable) -> bool:
        return len(str(evaluable.output_value())) < 3

    results = await evaluate_inputs(
        str.upper,
        ["a", "bbbb", "c"],
        [is_upper],
        per_input_evaluators=[None, [is_short, is_upper], [is_short]],
    )
    names = [[e.evaluator for e in item.evaluations] for item in results]
    assert names == [["is_upper"], ["is_short", "is_upper"], ["is_short"]]
    assert [[e.score for e in item.evaluations] for item in results] == [[1.0], [0.0, 1.0], [1.0]]


@pytest.mark.anyio
async def test_per_input_evaluators_are_checked_against_the_inputs() -> None:
    with pytest.raises(ValueError, match="has 1 items but eval_inputs has 2"):
        await evaluate_inputs(str.upper, ["a", "b"], [upper_ok], per_input_evaluators=[None])
    with pytest.raises(ValueError, match=r"per_input_evaluators\[0\] is None but no evaluators"):
        await evaluate_inputs(str.upper, ["a"], [], per_input_evaluators=[None])
    with pytest.raises(TypeError, match=r"per_input_evaluators\[0\]\[0\] is int"):
        await evaluate_inputs(str.upper, ["a"], [upper_ok], per_input_evaluators=[[3]])


class RecordsContexts(Evaluator):
    """Keeps the context of every entry it scores."""

    def __init__(self) -> None:
        self.seen: list[EvaluatorContext] = []

    async def evaluate(self, ctx: EvaluatorContext) -> bool:
        self.seen.append(ctx)
        return True


@pytest.mark.anyio
async def test_evaluators_learn_the_entry_and_the_run_from_the_context() -> None:
    judge = RecordsContexts()
    attributes = {"dataset": "capitals"}
    await evaluate_inputs(
        str.upper,
        ["a", "b"],
        [judge],
        evaluables=[Evaluable(expectation="A"), Evaluable(expectation="B")],
        entry_names=["first", "second"],
        run_id="run-7",
        attributes=attributes,
    )
    attributes["dataset"] = "changed after the run started"
    seen = sorted(judge.seen, key=lambda ctx: ctx.entry_index or 0)
    assert [(ctx.entry_name, ctx.entry_index) for ctx in seen] == [("first", 0), ("second", 1)]
    assert [(ctx.output(), ctx.expectation) for ctx in seen] == [("A", "A"), ("B", "B")]
    assert {ctx.run_id for ctx in seen} == {"run-7"}
    assert [dict(ctx.attributes) for ctx in seen] == [{"dataset": "capitals"}] * 2
    for ctx in seen:
        assert ctx.trace is not None and [node.span.name for node in ctx.trace] == ["upper"]
        assert ctx.duration_s is not None and ctx.duration_s >= 0


@pytest.mark.anyio
async def test_each_run_gets_one_new_run_id_shared_by_its_entries() -> None:
    judge = RecordsContexts()
    await evaluate_inputs(str.upper, ["a", "b"], [judge])
    await evaluate_inputs(str.upper, ["c"], [judge])
    first, second = {judge.seen[0].run_id, judge.seen[1].run_id}, judge.seen[2].run_id
    assert len(first) == 1 and None not in first and second not in first


@pytest.mark.anyio
async def test_entry_names_default_to_the_evaluables_descriptions() -> None:
    judge = RecordsContexts()
    cases = [Evaluable(description="greeting"), Evaluable()]
    await evaluate_inputs(str.upper, ["a", "b"], [judge], evaluables=cases, concurrency=1)
    assert [ctx.entry_name for ctx in judge.seen] == ["greeting", None]
    await evaluate_inputs(
        str.upper, ["a"], [judge], evaluables=cases[:1], entry_names=[None], concurrency=1
    )
    assert judge.seen[-1].entry_name == "greeting"


@pytest.mark.anyio
async def test_entry_names_and_attributes_are_checked() -> None:
    with pytest.raises(ValueError, match="entry_names has 1 items but eval_inputs has 2"):
        await evaluate_inputs(str.upper, ["a", "b"], [upper_ok], entry_names=["x"])
    with pytest.raises(TypeError, match=r"entry_names\[0\] is int, not a str or None"):
        await evaluate_inputs(str.upper, ["a"], [upper_ok], entry_names=[3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="attributes must be a mapping"):
        await evaluate_inputs(str.upper, ["a"], [upper_ok], attributes=["dataset"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="attributes keys must be str, got int 1"):
        await evaluate_inputs(str.upper, ["a"], [upper_ok], attributes={1: "x"})  # type: ignore[dict-item]


@pytest.mark.anyio
async def test_run_and_evaluate_gives_the_context_the_run() -> None:
    judge = RecordsContexts()
    case = Evaluable(description="one question", eval_metadata={"level": 1})
    result = await run_and_evaluate(judge, str.upper, "a", evaluable=case)
    assert (result.score, result.evaluator) == (1.0, "RecordsContexts")
    (ctx,) = judge.seen
    assert (ctx.entry_name, ctx.output(), dict(ctx.metadata)) == ("one question", "A", {"level": 1})
    assert ctx.trace is not None and ctx.duration_s is not None


class CountsInspections:
    """A callable evaluator that counts how often its signature is read (and is unhashable)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.inspections = 0

    @property
    def __signature__(self) -> inspect.Signature:
        self.inspections += 1
        return inspect.signature(lambda evaluable, *, trace=None: None)

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> bool:
        return trace is not None


@pytest.mark.anyio
async def test_an_evaluator_is_inspected_once_per_run_not_once_per_entry() -> None:
    judge = CountsInspections()
    results = await evaluate_inputs(str.upper, list("abcdefghij"), [judge, judge])
    assert all(e.score == 1.0 for item in results for e in item.evaluations)
    assert judge.inspections == 1


@pytest.mark.anyio
async def test_the_evaluators_of_one_input_wait_concurrently() -> None:
    arrived = 0
    everyone_here = anyio.Event()

    async def meets_the_others(evaluable: Evaluable) -> bool:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            everyone_here.set()
        await everyone_here.wait()  # one at a time, the first would wait here forever
        return True

    (row,) = await evaluate_inputs(
        str.upper, ["a"], [meets_the_others] * 3, timeout=30, concurrency=1
    )
    assert [e.score for e in row.evaluations] == [1.0, 1.0, 1.0]


@pytest.mark.anyio
async def test_an_evaluator_may_keep_a_cancel_scope_and_a_task_group_open_across_waits() -> None:
    async def scoped(evaluable: Evaluable) -> float:
        with anyio.fail_after(60):
            await anyio.sleep(0)
            async with anyio.create_task_group() as group:
                group.start_soon(anyio.sleep, 0)
                await anyio.sleep(0)
        return 1.0

    for timeout in (None, 60):
        rows = await evaluate_inputs(
            str.upper, ["a", "b"], [nonempty, scoped, scoped], timeout=timeout
        )
        assert [[e.status for e in row.evaluations] for row in rows] == [["scored"] * 3] * 2


@pytest.mark.anyio
async def test_a_hanging_evaluator_times_out_alone() -> None:
    async def hangs(evaluable: Evaluable) -> float:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    (row,) = await evaluate_inputs(str.upper, ["a"], [nonempty, hangs, nonempty], timeout=0.05)
    assert [e.status for e in row.evaluations] == ["scored", "errored", "scored"]
    assert row.evaluations[1].error is not None
    assert row.evaluations[1].error.type == "EvaluatorTimeoutError"


@pytest.mark.anyio
async def test_each_evaluator_runs_in_its_own_copy_of_the_context() -> None:
    import contextvars

    mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="clean")
    seen: list[str] = []

    async def dirties(evaluable: Evaluable) -> bool:
        seen.append(mark.get())
        mark.set("dirty")  # never reset: must not reach any other evaluator
        return True

    def reads(evaluable: Evaluable) -> bool:
        seen.append(mark.get())
        return True

    await evaluate_inputs(str.upper, ["a", "b", "c"], [dirties, reads, dirties], concurrency=1)
    assert seen == ["clean"] * 9


@pytest.mark.anyio
async def test_a_runnable_that_cannot_be_called_is_refused_as_evaluate_inputs_refuses_it() -> None:
    with pytest.raises(TypeError, match=r"runnable must be a callable .* got str 'not a function'"):
        await run_and_evaluate(upper_ok, "not a function", "q")  # type: ignore[arg-type]
