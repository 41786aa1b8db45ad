"""Epochs: the app itself run K times per entry, each run scored, reduced per entry."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace import assert_pass, evaluate_inputs, run_dataset
from evaltrace.engine import RunConfig
from evaltrace.judges import AtLeastKAggregationStrategy
from evaltrace.results import CompletionStatus, load_result

pytestmark = pytest.mark.anyio


def flaky_app() -> object:
    """An app right on its 1st and 3rd call of each input, wrong on its 2nd."""
    calls = itertools.count()

    def answer(question: str) -> str:
        return question.upper() if next(calls) % 3 != 1 else "wrong"

    return answer


def is_upper(evaluable: object) -> float:
    output = evaluable.output_value()  # type: ignore[attr-defined]
    return float(output != "wrong")


async def test_each_epoch_is_run_and_scored_and_the_entry_holds_their_reduction() -> None:
    (row,) = await evaluate_inputs(flaky_app(), ["q"], [is_upper], epochs=3)

    entry = row.to_entry()
    assert [epoch.epoch for epoch in entry.epochs] == [0, 1, 2]
    assert [epoch.output for epoch in entry.epochs] == ["Q", "wrong", "Q"]
    assert [epoch.evaluations[0].score for epoch in entry.epochs] == [1.0, 0.0, 1.0]
    assert entry.evaluations[0].score == pytest.approx(2 / 3)
    assert entry.evaluations[0].evaluator == "is_upper"
    assert len(entry.trace_ids) == 3 and len(set(entry.trace_ids)) == 3
    assert entry.output == "Q"


@pytest.mark.parametrize(
    ("reducer", "score"),
    [("mean", 2 / 3), ("median", 1.0), ("mode", 1.0), ("min", 0.0), ("max", 1.0)],
)
async def test_the_named_reducers_are_the_repeated_judges_strategies(
    reducer: str, score: float
) -> None:
    (row,) = await evaluate_inputs(flaky_app(), ["q"], [is_upper], epochs=3, reducer=reducer)

    assert row.evaluations[0].score == pytest.approx(score)


async def test_a_strategy_instance_reduces_too() -> None:
    (row,) = await evaluate_inputs(
        flaky_app(), ["q"], [is_upper], epochs=3, reducer=AtLeastKAggregationStrategy(k=3)
    )

    assert row.evaluations[0].score == 0.0  # 2 of 3 runs pass, 3 are needed


async def test_assert_pass_judges_the_reduced_evaluations() -> None:
    matrix = await assert_pass(flaky_app(), ["q"], [is_upper], epochs=3, reducer="max")

    assert matrix[0][0].score == 1.0


async def test_an_unknown_reducer_or_a_bad_count_is_refused_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="epochs must be a whole number >= 1, got 0"):
        RunConfig(epochs=0)
    with pytest.raises(ValueError, match="'avg'"):
        await evaluate_inputs(flaky_app(), ["q"], [is_upper], epochs=2, reducer="avg")


async def test_a_run_that_fails_every_epoch_is_an_errored_entry() -> None:
    def broken(question: str) -> str:
        raise RuntimeError("down")

    (row,) = await evaluate_inputs(broken, ["q"], [is_upper], epochs=2)

    entry = row.to_entry()
    assert entry.status is CompletionStatus.ERROR
    assert entry.error is not None and entry.error.where == "runnable"
    assert [epoch.status for epoch in entry.epochs] == [CompletionStatus.ERROR] * 2


APP = """\
import itertools

calls = {}


def answer(question: str) -> str:
    n = calls[question] = calls.get(question, 0) + 1
    return question.upper() if n % 3 != 2 else "wrong"


def not_wrong(evaluable):
    return evaluable.output_value() != "wrong"
"""


def project(folder: Path, **top: object) -> Path:
    (folder / "app.py").write_text(APP)
    dataset = folder / "flaky.evaltrace.json"
    dataset.write_text(
        json.dumps(
            {
                "runnable": "app.py:answer",
                "evaluators": ["app.py:not_wrong"],
                **top,
                "entries": [
                    {"name": f"e{n}", "entry_kwargs": {"question": f"q{n}"}} for n in range(4)
                ],
            }
        )
    )
    return dataset


async def test_a_dataset_file_names_its_epochs_and_reducer(tmp_path: Path) -> None:
    dataset = project(tmp_path, epochs=3, reducer="min")

    result = await run_dataset(dataset, output_dir=tmp_path / "out")

    assert all(len(entry.epochs) == 3 for entry in result.entries)
    assert result.status_counts == {CompletionStatus.FAILED_SCORE_ZERO: 4}
    assert (result.settings["epochs"], result.settings["reducer"]) == (3, "min")
    assert result.fingerprint is not None and result.fingerprint.epochs == 3
    saved = load_result(tmp_path / "out" / result.run_id)
    assert saved.entries == result.entries


def test_evaltrace_test_takes_epochs_and_writes_every_runs_trace(tmp_path: Path) -> None:
    project(tmp_path)
    env = {**os.environ, "CI": "1"}

    done = subprocess.run(
        [sys.executable, "-m", "evaltrace", "test", "--epochs", "3", "--reducer", "max",
         "--no-scorecard"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    refused = subprocess.run(
        [sys.executable, "-m", "evaltrace", "test", "--epochs", "2", "--reducer", "avg"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "evaltrace_results").iterdir()
    result = load_result(run)
    assert all(len(entry.epochs) == 3 for entry in result.entries)
    spans = (run / "traces.jsonl").read_text().splitlines()
    trace_ids = {json.loads(line)["trace_id"] for line in spans}
    assert trace_ids == {t for entry in result.entries for t in entry.trace_ids}
    assert len(trace_ids) == 12
    assert refused.returncode == 2 and "--reducer" in refused.stderr
