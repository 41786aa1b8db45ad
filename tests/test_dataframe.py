"""Results as tables: RunResult.to_dataframe, CSV export, task outcomes as a DataFrame."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pandas as pd
import pytest

from evaltrace.errors import MissingExtraError
from evaltrace.evals import Evaluation, EvaluationError
from evaltrace.results import (
    aggregate_results_to_dataframe,
    collect_task_outcomes,
    run_result_to_csv,
)
from evaltrace.results.model import EntryResult, RunResult

OUTCOMES = Path(__file__).parent / "fixtures" / "outcomes"


def entry(index: int, topic: str, scores: dict[str, float | None], **extra: object) -> EntryResult:
    evaluations = [
        Evaluation(score=score, evaluator=name)
        if score is not None
        else Evaluation.errored(EvaluationError(type="KeyError", message="'x'"), evaluator=name)
        for name, score in scores.items()
    ]
    return EntryResult(
        index=index,
        name=f"e{index}",
        eval_metadata={"topic": topic, "source": {"page": index}},
        evaluations=evaluations,
        duration_s=0.5 * (index + 1),
        **extra,  # type: ignore[arg-type]
    )


RESULT = RunResult(
    name="geo",
    run_id="20260101-000000",
    evaluators=["exact", "judge"],
    entries=[
        entry(0, "capitals", {"exact": 1.0, "judge": 0.8}),
        entry(1, "capitals", {"exact": 0.0, "judge": 0.6}),
        entry(2, "rivers", {"exact": 1.0, "judge": None}),
        entry(3, "rivers", {"judge": 0.1}),  # this entry has one evaluator only
        EntryResult(
            index=4,
            name="e4",
            eval_metadata={"topic": "rivers"},
            error=EvaluationError(type="ValueError", message="boom", where="runnable"),
        ),
    ],
)


def test_one_row_per_entry_and_evaluation_and_one_for_an_entry_without_any() -> None:
    frame = RESULT.to_dataframe()
    assert len(frame) == 2 + 2 + 2 + 1 + 1
    pairs = list(zip(frame["entry"], frame["evaluator"].fillna("-"), strict=True))
    assert pairs == [
        ("e0", "exact"), ("e0", "judge"), ("e1", "exact"), ("e1", "judge"),
        ("e2", "exact"), ("e2", "judge"), ("e3", "judge"), ("e4", "-"),
    ]  # fmt: skip


def test_groupby_over_a_metadata_column_gives_the_mean_scores() -> None:
    frame = RESULT.to_dataframe()
    means = frame.groupby(["meta.topic", "evaluator"])["score"].mean()
    assert means[("capitals", "exact")] == pytest.approx(0.5)
    assert means[("capitals", "judge")] == pytest.approx(0.7)
    assert means[("rivers", "exact")] == pytest.approx(1.0)
    assert means[("rivers", "judge")] == pytest.approx(0.1)  # the errored one is not a 0


def test_rows_carry_status_error_type_and_latency() -> None:
    frame = RESULT.to_dataframe().set_index(["entry", "evaluator"])
    errored = frame.loc[("e2", "judge")]
    assert (errored["evaluation_status"], errored["error_type"]) == ("errored", "KeyError")
    assert errored["entry_status"] == "ERROR" and bool(errored["passed"]) is False
    assert frame.loc[("e1", "judge"), "duration_s"] == 1.0
    failed_run = RESULT.to_dataframe().iloc[-1]
    assert (failed_run["error_type"], failed_run["error_where"]) == ("ValueError", "runnable")


def test_nested_metadata_is_flattened_with_dots() -> None:
    frame = RESULT.to_dataframe()
    assert list(frame["meta.source.page"].iloc[:2]) == [0, 0]
    assert [c for c in frame.columns if c.startswith("meta.")] == ["meta.source.page", "meta.topic"]


def test_an_empty_run_gives_an_empty_frame_with_the_columns() -> None:
    frame = RunResult(name="empty").to_dataframe()
    assert frame.empty and "score" in frame.columns and "evaluator" in frame.columns


def test_to_dataframe_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'evaltrace\[pandas\]'") as raised:
        RESULT.to_dataframe()
    assert raised.value.extra == "pandas"


def test_csv_round_trips_to_the_dataframe(tmp_path: Path) -> None:
    path = tmp_path / "result.csv"
    assert run_result_to_csv(RESULT, path) == 8
    back = pd.read_csv(path, keep_default_na=True)
    frame = RESULT.to_dataframe()
    assert list(back.columns) == list(frame.columns)
    for column in ["entry", "evaluator", "score", "passed", "duration_s", "meta.topic"]:
        pd.testing.assert_series_equal(
            back[column], frame[column], check_dtype=False, check_names=False
        )
    assert back.groupby("meta.topic")["score"].mean().to_dict() == pytest.approx(
        frame.groupby("meta.topic")["score"].mean().to_dict()
    )


def test_csv_needs_no_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    stream = io.StringIO()
    run_result_to_csv(RESULT, stream)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith(
        "run_id,run,entry_index,entry,description,entry_status,input,output,expectation,evaluator,"
    )
    assert lines[1].startswith("20260101-000000,geo,0,e0,,SUCCESS,,,,exact,scored,1.0,,True,")


def test_task_outcomes_as_a_dataframe_group_by_task_type() -> None:
    outcomes = collect_task_outcomes(OUTCOMES / "runs", OUTCOMES / "tasks.json")
    frame = aggregate_results_to_dataframe(outcomes)
    assert len(frame) == 13
    rates = frame.groupby("task_type")["overall_is_successful"].mean()
    assert rates.to_dict() == pytest.approx(
        {"construction": 0.5, "cooking": 2 / 7, "crafting": 0.25}
    )
    success = frame.set_index("task_id").loc["cooking_success"]
    assert success["metric_total_recipe_steps"] == 4 and success["agent_count"] == 2


def test_task_outcomes_dataframe_without_pandas_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match="aggregate_results_to_dataframe"):
        aggregate_results_to_dataframe([])


def test_the_frame_has_each_entrys_input_output_and_expectation() -> None:
    entry = EntryResult(
        index=0,
        name="a",
        input={"question": "2+2?"},
        output="4",
        expectation="4",
        evaluations=[Evaluation(score=1.0, evaluator="exact")],
    )
    unexpected = EntryResult(index=1, name="b", output="5")

    rows = RunResult(name="r", entries=[entry, unexpected]).to_records()

    assert (rows[0]["input"], rows[0]["output"], rows[0]["expectation"]) == (
        {"question": "2+2?"},
        "4",
        "4",
    )
    assert rows[1]["expectation"] is None and rows[1]["evaluator"] is None
