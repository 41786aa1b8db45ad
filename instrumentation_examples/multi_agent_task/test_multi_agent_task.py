"""Two agents on tasks: each agent's trace stored as a file, read back into task outcomes.

Also the Mindcraft-shaped experiment in ``mindcraft/``: chat-transcript logs read as they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltrace import RunResult, run_dataset
from evaltrace.results import (
    CompletionStatus,
    aggregate_results_to_dataframe,
    analyze_agent_log,
    collect_task_outcomes,
    format_outcome_summary,
)

HERE = Path(__file__).parent
DATASET = HERE / "multi_agent_task.evaltrace.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
async def run(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MULTI_AGENT_RUNS", str(runs))  # where the team stores its task runs
        return await run_dataset(DATASET, output_dir=tmp_path_factory.mktemp("results"))


@pytest.mark.anyio
async def test_every_task_ends_as_its_entry_expects(run: RunResult) -> None:
    outcomes = {entry.name: entry.output for entry in run.entries}

    assert outcomes == {
        "cook_bread": "SUCCESS",
        "cook_cake": "FAILED_PARTIAL_SCORE",
        "craft_pickaxe": "SUCCESS",
        "craft_lantern": "SUCCESS",
        "build_shelter": "TIMED_OUT",
    }
    assert {entry.status for entry in run.entries} == {CompletionStatus.SUCCESS}


@pytest.mark.anyio
async def test_each_agent_leaves_its_own_trace_file(run: RunResult, runs: Path) -> None:
    folders = sorted(path.name for path in runs.iterdir())

    assert folders == ["build_shelter", "cook_bread", "cook_cake", "craft_lantern", "craft_pickaxe"]
    for folder in folders:
        assert sorted(path.name for path in (runs / folder).iterdir()) == [
            "planner.jsonl",
            "worker.jsonl",
        ]
    bread = analyze_agent_log(runs / "cook_bread" / "planner.jsonl")
    assert bread.final_message == "Task ended with score 1.0: 2/2 steps, bread made"


@pytest.mark.anyio
async def test_a_cut_off_log_is_a_log_file_error_naming_the_line(
    run: RunResult, runs: Path
) -> None:
    worker = analyze_agent_log(runs / "craft_lantern" / "worker.jsonl")
    planner = analyze_agent_log(runs / "craft_lantern" / "planner.jsonl")

    assert worker.completion_status is CompletionStatus.LOG_FILE_ERROR
    assert "worker.jsonl, line" in worker.parse_errors[0]
    assert planner.completion_status is CompletionStatus.SUCCESS


@pytest.mark.anyio
async def test_the_cut_off_log_is_listed_beside_the_success_the_planner_logged(
    run: RunResult, runs: Path
) -> None:
    outcomes = collect_task_outcomes(runs, HERE / "tasks.json")
    lantern = next(o for o in outcomes.outcomes if o.task_id == "craft_lantern")

    assert lantern.overall_completion_status is CompletionStatus.SUCCESS
    assert lantern.to_record()["agent_log_errors"] == 1
    assert "worker.jsonl, line" in lantern.to_record()["parse_errors"]
    assert "worker.jsonl, line" in format_outcome_summary(outcomes).split("problems:")[1]


@pytest.mark.anyio
async def test_the_stalled_worker_timed_out_and_the_planner_logged_zero(
    run: RunResult, runs: Path
) -> None:
    worker = analyze_agent_log(runs / "build_shelter" / "worker.jsonl")
    planner = analyze_agent_log(runs / "build_shelter" / "planner.jsonl")

    assert worker.timed_out and worker.completion_status is CompletionStatus.TIMED_OUT
    assert worker.error is not None and worker.error.startswith("TimeoutError")
    assert planner.raw_score == 0.0


@pytest.mark.anyio
async def test_success_rates_by_task_type(run: RunResult, runs: Path) -> None:
    outcomes = collect_task_outcomes(runs, HERE / "tasks.json")
    frame = aggregate_results_to_dataframe(outcomes)

    rates = frame.groupby("task_type")["overall_is_successful"].mean().to_dict()
    assert rates == {"construction": 0.0, "cooking": 0.5, "crafting": 1.0}
    cake = frame.set_index("task_id").loc["cook_cake"]
    assert cake["overall_raw_score"] == 0.6
    assert cake["agent_statuses"] == "FAILED_PARTIAL_SCORE;FAILED_PARTIAL_SCORE"


MINDCRAFT = HERE / "mindcraft"


def test_a_mindcraft_experiment_is_read_as_mindcraft_writes_it() -> None:
    outcomes = collect_task_outcomes(
        MINDCRAFT / "experiments",
        MINDCRAFT / "example_tasks.json",
        model_from_path="{model}/{task}",
    )
    frame = aggregate_results_to_dataframe(outcomes)

    rates = frame.groupby(["task_type", "model_name"])["overall_is_successful"].mean()
    assert rates.to_dict() == {
        ("cooking", "claude-3-5-haiku"): 0.5,
        ("cooking", "gpt-4o-mini"): 1.0,
        ("techtree", "claude-3-5-haiku"): 0.5,
        ("techtree", "gpt-4o-mini"): 0.5,
    }
    assert sorted(frame["repetition"].unique()) == [0, 1]
    assert outcomes.definition_problems == [] and outcomes.unknown_folders == []
