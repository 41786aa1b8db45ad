"""Faults inside a run that must never lose it: values JSON cannot hold, ``StopIteration``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import numpy as np
import pytest

from evaltrace import Evaluable, Evaluation, NamedData, evaluate, evaluate_inputs
from evaltrace.errors import StopIterationError
from evaltrace.results import EntryResult, RunResult

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))

pytestmark = pytest.mark.anyio


def test_details_json_cannot_hold_are_encoded_when_the_evaluation_is_made() -> None:
    lock = anyio.Lock()
    evaluation = Evaluation(
        score=1.0,
        details={
            "count": np.int64(3),
            "ratio": np.float32(0.5),
            "vector": np.arange(3),
            "nested": {"flag": np.bool_(True)},
            "lock": lock,
        },
    )

    assert evaluation.details["count"] == 3 and type(evaluation.details["count"]) is int
    assert evaluation.details["ratio"] == 0.5
    assert evaluation.details["vector"] == [0, 1, 2]
    assert evaluation.details["nested"] == {"flag": True}
    assert isinstance(evaluation.details["lock"], str) and "Lock" in evaluation.details["lock"]
    saved = EntryResult(index=0, name="0", evaluations=[evaluation])
    assert EntryResult.model_validate_json(saved.model_dump_json()) == saved


def test_secret_like_keys_of_details_are_redacted_as_values_are() -> None:
    evaluation = Evaluation(score=1.0, details={"api_key": "sk-secret", "tokens": 12})

    assert evaluation.details == {"api_key": "[REDACTED]", "tokens": 12}


def test_outputs_and_metadata_that_json_cannot_hold_are_saved_as_encoded_data() -> None:
    entry = EntryResult(
        index=0,
        name="0",
        output={"v": np.int64(7)},  # type: ignore[dict-item]
        eval_metadata={"m": np.float64(0.25)},  # type: ignore[dict-item]
        eval_output=[NamedData(name="answer", value=np.arange(2))],
    )

    assert entry.output == {"v": 7}
    assert entry.eval_metadata == {"m": 0.25}
    assert RunResult.model_validate_json(RunResult(name="r", entries=[entry]).model_dump_json())


CHECKS = """\
import numpy
import threading

from evaltrace import Evaluation


def odd_details(evaluable):
    if evaluable.expectation == "3":
        return Evaluation(
            score=1.0,
            details={"v": numpy.int64(3), "f": numpy.float32(0.5), "a": numpy.arange(3),
                     "lock": threading.Lock()},
        )
    return Evaluation(score=1.0)
"""


def test_an_evaluator_detail_json_cannot_hold_never_loses_the_cli_run(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def echo(n: str) -> str:\n    return n\n")
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "odd.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:echo",
                "evaluators": ["checks.py:odd_details"],
                "entries": [
                    {"name": f"e{n}", "entry_kwargs": {"n": str(n)}, "expectation": str(n)}
                    for n in range(1, 7)
                ],
            }
        )
    )

    done = subprocess.run(
        [EVALTRACE, "test", "odd.evaltrace.json", "--no-scorecard"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )

    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "evaltrace_results").iterdir()
    result = RunResult.model_validate_json((run / "result.json").read_text())
    assert len(result.entries) == 6
    details = result.entries[2].evaluations[0].details
    assert isinstance(details, dict)
    assert (details["v"], details["f"], details["a"]) == (3, 0.5, [0, 1, 2])


def first_of_nothing(evaluable: Evaluable) -> Evaluation:
    return next(iter([]))


def stop_async_iteration(evaluable: Evaluable) -> Evaluation:
    raise StopAsyncIteration


async def test_a_sync_evaluator_raising_stop_iteration_is_errored_at_once() -> None:
    evaluable = Evaluable(eval_output=[NamedData(name="answer", value="x")])

    with anyio.fail_after(10):
        stopped = await evaluate(first_of_nothing, evaluable)
        async_stopped = await evaluate(stop_async_iteration, evaluable)

    assert stopped.error is not None and stopped.error.type == "StopIterationError"
    assert "raised StopIteration" in stopped.error.message
    assert async_stopped.error is not None and async_stopped.error.type == "StopAsyncIteration"


async def test_a_sync_runnable_raising_stop_iteration_errors_its_entry_at_once() -> None:
    def app(question: str) -> str:
        return next(iter([]))

    with anyio.fail_after(10):
        (row,) = await evaluate_inputs(app, ["q"], [lambda e: 1.0], timeout=60)

    assert row.run is not None and isinstance(row.run.error, StopIterationError)
    assert isinstance(row.run.error.__cause__, StopIteration)
    error = row.to_entry().error
    assert error is not None and error.type == "StopIterationError" and error.where == "runnable"


async def test_a_sync_app_that_runs_its_own_event_loop_works_in_a_worker_thread() -> None:
    import asyncio

    def app(question: str) -> str:
        loop = asyncio.get_event_loop()  # old sync code does this
        return loop.run_until_complete(asyncio.sleep(0, result=question.upper()))

    def app_with_run(question: str) -> str:
        return asyncio.run(asyncio.sleep(0, result=question.lower()))

    rows = await evaluate_inputs(app, ["a", "b"], [lambda e: 1.0], concurrency=1)
    rows += await evaluate_inputs(app_with_run, ["C"], [lambda e: 1.0])
    rows += await evaluate_inputs(app, ["d"], [lambda e: 1.0])

    assert [row.run.output for row in rows if row.run is not None] == ["A", "B", "c", "D"]
    assert all(row.run is not None and row.run.error is None for row in rows)


def test_reasoning_and_error_messages_are_redacted_when_the_evaluation_is_made() -> None:
    evaluation = Evaluation(score=0.0, reasoning="called https://u:hunter2@api/x with Bearer sk-1")
    failed = Evaluation.errored(RuntimeError("401 for api_key=sk-live-123"))

    assert "hunter2" not in evaluation.reasoning and "sk-1" not in evaluation.reasoning
    assert failed.error is not None and "sk-live-123" not in failed.error.message
    assert "sk-live-123" not in failed.reasoning


async def test_exported_evaluations_carry_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from evaltrace import capture_traces, init
    from evaltrace.evals.telemetry import export_evaluations

    def app(question: str) -> str:
        return question

    init(export_evaluations=True)
    try:
        with capture_traces() as handler:
            (row,) = await evaluate_inputs(app, ["q"], [lambda e: 1.0])
            assert row.run is not None
            export_evaluations(
                [Evaluation.errored(RuntimeError("denied: password=hunter2"), evaluator="x")],
                row.run.trace,
            )
    finally:
        init(export_evaluations=False)
    texts = json.dumps(
        [(s.name, dict(s.attributes or {}), s.status.description) for s in handler.raw_spans]
    )
    assert "hunter2" not in texts


def test_pass_criteria_may_be_a_threshold_number_and_nothing_else() -> None:
    from evaltrace import EvalAssertionError, assert_pass, run

    def app(question: str) -> str:
        return question

    matrix = run(assert_pass(app, ["q"], [lambda e: 0.6], pass_criteria=0.5))
    assert matrix[0][0].score == 0.6
    with pytest.raises(EvalAssertionError, match="0 of 1 inputs passed"):
        run(assert_pass(app, ["q"], [lambda e: 0.6], pass_criteria=0.7))
    with pytest.raises(TypeError, match="pass_criteria must be a ScoreThreshold"):
        run(assert_pass(app, ["q"], [lambda e: 0.6], pass_criteria="strict"))  # type: ignore[arg-type]


def test_wrap_many_takes_a_bool_only() -> None:
    from evaltrace import wrap

    with pytest.raises(TypeError, match=r"many=\.\.\.\) must be True or False, got 'yes'"):
        wrap("v", purpose="output", name="n", many="yes")


def test_the_terminal_report_escapes_bidirectional_overrides() -> None:
    from evaltrace._safe_text import printable

    assert printable("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert printable("a\u2066b\u2069c\u200f") == "a\\u2066b\\u2069c\\u200f"


def test_the_scorecard_is_written_with_the_permissions_of_the_other_result_files(
    tmp_path: Path,
) -> None:
    from evaltrace.results import save_dataset_scorecard

    (tmp_path / "result.json").write_text(RunResult(name="r").model_dump_json())
    page = save_dataset_scorecard(RunResult(name="r"), tmp_path / "scorecard.html")

    assert page.stat().st_mode & 0o777 == (tmp_path / "result.json").stat().st_mode & 0o777


def test_evaluators_given_in_code_win_over_the_files_with_a_warning(tmp_path: Path) -> None:
    from evaltrace import run
    from evaltrace.datasets import run_dataset
    from evaltrace.judges import ExactMatch

    (tmp_path / "app.py").write_text("def echo(n: str) -> str:\n    return n\n")
    dataset = tmp_path / "d.evaltrace.json"
    dataset.write_text(
        json.dumps(
            {
                "runnable": "app.py:echo",
                "evaluators": ["ExactMach"],
                "entries": [{"name": "a", "entry_kwargs": {"n": "x"}, "expectation": "x"}],
            }
        )
    )

    with pytest.warns(UserWarning, match=r"'ExactMach' \(not a known evaluator\).*ExactMatch"):
        result = run(run_dataset(dataset, evaluators=[ExactMatch()]))

    assert result.evaluators == ["ExactMatch"] and result.passed
