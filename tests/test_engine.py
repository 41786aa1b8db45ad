"""One engine: every way of running goes through it and behaves the same."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaltrace import (
    Evaluable,
    Evaluation,
    assert_dataset_pass,
    assert_pass,
    evaluate_inputs,
    evaluate_traces,
    run_and_evaluate,
    run_dataset,
)
from evaltrace.engine import (
    Entry,
    EntryPoint,
    EntrySource,
    EvaluatorPlans,
    Output,
    RunConfig,
    execute,
)
from evaltrace.pipeline import evaluate_runnable
from evaltrace.results import CompletionStatus, load_result
from evaltrace.trace import save_traces

pytestmark = pytest.mark.anyio

LOOPING_APP = """\
import asyncio


def shout(question: str) -> str:
    loop = asyncio.get_event_loop()  # old sync code asks for the thread's loop
    return loop.run_until_complete(asyncio.sleep(0, result=question.upper()))


def looping_check(evaluable):
    loop = asyncio.get_event_loop()
    return loop.run_until_complete(asyncio.sleep(0, result=1.0))
"""


def shout(question: str) -> str:
    loop = asyncio.get_event_loop()
    return loop.run_until_complete(asyncio.sleep(0, result=question.upper()))


def looping_check(evaluable: Evaluable) -> float:
    loop = asyncio.get_event_loop()
    return float(loop.run_until_complete(asyncio.sleep(0, result=1.0)))


def project(folder: Path) -> Path:
    (folder / "app.py").write_text(LOOPING_APP)
    dataset = folder / "loop.evaltrace.json"
    dataset.write_text(
        json.dumps(
            {
                "runnable": "app.py:shout",
                "evaluators": ["app.py:looping_check"],
                "entries": [
                    {"name": f"e{n}", "entry_kwargs": {"question": f"q{n}"}} for n in range(3)
                ],
            }
        )
    )
    return dataset


async def test_a_sync_app_running_its_own_event_loop_works_through_every_adapter(
    tmp_path: Path,
) -> None:
    rows = await evaluate_inputs(shout, ["a", "b"], [looping_check])
    assert [row.run.output for row in rows if row.run is not None] == ["A", "B"]
    assert all(row.evaluations[0].score == 1.0 for row in rows)

    assert (await run_and_evaluate(looping_check, shout, "c")).score == 1.0
    matrix = await assert_pass(shout, ["d"], [looping_check])
    assert matrix[0][0].score == 1.0

    dataset = project(tmp_path)
    result = await run_dataset(dataset, output_dir=tmp_path / "out")
    assert result.status_counts == {CompletionStatus.SUCCESS: 3}
    assert [entry.output for entry in result.entries] == ["Q0", "Q1", "Q2"]
    passed = await assert_dataset_pass(None, dataset)
    assert len(passed.results) == 3

    pipeline = await evaluate_runnable(shout, ["e"], ["E"], progress=False)
    assert pipeline.run.entries[0].output == "E" and pipeline.run.entries[0].error is None

    traces = tmp_path / "out" / result.run_id / "traces.jsonl"
    stored = await evaluate_traces(traces, [looping_check])
    assert [entry.status for entry in stored.entries] == [CompletionStatus.SUCCESS] * 3


def test_the_command_line_runs_a_sync_app_that_runs_its_own_event_loop(tmp_path: Path) -> None:
    project(tmp_path)
    env = {**os.environ, "CI": "1"}
    command = [sys.executable, "-m", "evaltrace", "test", "--no-scorecard"]

    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)

    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "evaltrace_results").iterdir()
    traces = subprocess.run(
        [*command, "--traces", str(run / "traces.jsonl"), "--evaluator", "app.py:looping_check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert traces.returncode == 0, traces.stderr


class Counted:
    """An output evaltrace can only show by its ``repr``, counting how often it is asked."""

    calls = 0

    def __repr__(self) -> str:
        Counted.calls += 1
        return "Counted()"


async def test_a_runs_output_is_encoded_once_on_its_way_to_the_saved_result() -> None:
    Counted.calls = 0

    def app(question: str) -> Counted:
        return Counted()

    (row,) = await evaluate_inputs(app, ["q"], [lambda evaluable: 1.0])

    assert row.to_entry().output == "Counted()"
    assert Counted.calls == 1


async def test_evaluate_inputs_and_run_dataset_save_the_same_entry(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "def upper(question: str) -> str:\n    return question.upper()\n"
    )
    dataset = tmp_path / "d.evaltrace.json"
    dataset.write_text(
        json.dumps(
            {
                "runnable": "app.py:upper",
                "evaluators": ["ExactMatch"],
                "entries": [{"name": "0", "entry_kwargs": {"question": "x"}, "expectation": "X"}],
            }
        )
    )

    def upper(question: str) -> str:
        return question.upper()

    from evaltrace.judges import ExactMatch

    (row,) = await evaluate_inputs(
        lambda kwargs: upper(**kwargs),
        [{"question": "x"}],
        [ExactMatch()],
        evaluables=[Evaluable(expectation="X")],
    )
    (entry,) = (await run_dataset(dataset)).entries
    live = row.to_entry(name="0")

    keep = ["index", "name", "input", "output", "expectation", "status", "eval_output"]
    assert live.model_dump(include=set(keep)) == entry.model_dump(include=set(keep))
    assert [e.score for e in live.evaluations] == [e.score for e in entry.evaluations] == [1.0]


class Numbers(EntrySource):
    """A source of this test's own: the engine runs any source."""

    def __init__(self, count: int) -> None:
        self.runnable = EntryPoint.of(lambda n: n * 2, name="double")
        self._plan = EvaluatorPlans().of([lambda e: float(e.output_value() % 4 == 0)])
        self._count = count

    @property
    def name(self) -> str:
        return "numbers"

    def __len__(self) -> int:
        return self._count

    def entries(self) -> Iterator[Entry]:
        for n in range(self._count):
            yield Entry(index=n, evaluators=self._plan, input=n, name=f"n{n}")


async def test_any_source_runs_into_a_saved_folder_with_counts(tmp_path: Path) -> None:
    result = await execute(
        Numbers(6),
        RunConfig(concurrency=2),
        output=Output(parent=tmp_path),
        keep=False,
    )

    assert result.entries == [] and result.entry_count == 6
    assert result.counts == {CompletionStatus.SUCCESS: 3, CompletionStatus.FAILED_SCORE_ZERO: 3}
    saved = load_result(tmp_path / result.run_id)
    assert [entry.output for entry in saved.entries] == [0, 2, 4, 6, 8, 10]
    assert saved.counts == result.counts


async def test_the_run_config_refuses_bad_settings_with_their_name() -> None:
    with pytest.raises(ValueError, match="concurrency must be a whole number >= 1, got 0"):
        RunConfig(concurrency=0)
    with pytest.raises(ValueError, match="threshold must be a number in \\[0, 1\\], got 2"):
        RunConfig(threshold=2)
    with pytest.raises(TypeError, match="attributes must be a mapping"):
        RunConfig(attributes=["x"])  # type: ignore[arg-type]


async def test_stored_traces_and_a_live_run_of_them_score_alike(tmp_path: Path) -> None:
    from evaltrace import capture_traces

    def app(question: str) -> str:
        return question.upper()

    with capture_traces() as handler:
        rows = await evaluate_inputs(app, ["a", "b"], [lambda e: e.output_value() == "A"])
    save_traces(handler.trace, tmp_path / "t.jsonl")

    stored = await evaluate_traces(tmp_path / "t.jsonl", [lambda e: e.output_value() == "A"])

    assert [r.evaluations[0].score for r in rows] == [
        e.evaluations[0].score for e in stored.entries
    ]
    assert all(isinstance(e.evaluations[0], Evaluation) for e in stored.entries)
