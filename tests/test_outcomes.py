"""Agent and task outcomes read from stored agent traces (seed 002, DESIGN.md item 18).

The trace files under ``fixtures/outcomes/runs`` were written by real evaltrace captures
(``fixtures/outcomes/make_outcome_fixtures.py``); the broken ones were cut from good ones.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from evaltrace import capture_traces, save_traces, wrap
from evaltrace.errors import ConfigurationError
from evaltrace.results import (
    TaskDefinition,
    analyze_agent_log,
    collect_task_outcomes,
    combine_agent_statuses,
    extract_task_outcome,
    format_outcome_summary,
    load_task_definitions,
    task_outcomes_to_csv,
)
from evaltrace.results.model import CompletionStatus
from evaltrace.results.outcomes import TASK_STATUS_PRECEDENCE

S = CompletionStatus
FIXTURES = Path(__file__).parent / "fixtures" / "outcomes"
RUNS = FIXTURES / "runs"
TASKS = load_task_definitions(FIXTURES / "tasks.json")


def agent_file(task: str, number: int = 0) -> Path:
    return RUNS / task / f"agent_{number}.jsonl"


def outcome(task: str):  # type: ignore[no-untyped-def]
    return extract_task_outcome(RUNS / task, TASKS[task])


# --- one agent's trace file -------------------------------------------------------------------


def test_an_agent_that_logged_a_score_of_one_succeeded() -> None:
    agent = analyze_agent_log(agent_file("cooking_success"))
    assert agent.completion_status is S.SUCCESS
    assert agent.raw_score == 1.0
    assert agent.final_message == "Task ended with score : 1"
    assert agent.log_processed and agent.parse_errors == [] and not agent.timed_out
    assert agent.models == ["gpt-4o-mini"]


def test_an_agent_with_a_score_between_zero_and_one_is_a_partial_failure() -> None:
    agent = analyze_agent_log(agent_file("construction_partial"))
    assert (agent.completion_status, agent.raw_score) == (S.FAILED_PARTIAL_SCORE, 0.5)


def test_an_agent_with_a_score_of_zero_failed_with_zero() -> None:
    agent = analyze_agent_log(agent_file("crafting_zero"))
    assert (agent.completion_status, agent.raw_score) == (S.FAILED_SCORE_ZERO, 0.0)


def test_an_agent_whose_run_raised_timeout_error_timed_out() -> None:
    agent = analyze_agent_log(agent_file("crafting_timed_out", 0))
    assert agent.completion_status is S.TIMED_OUT
    assert agent.timed_out and agent.raw_score is None
    assert agent.error == "TimeoutError: Task timeout reached"


def test_a_timeout_event_from_the_harness_times_the_agent_out_and_keeps_its_score() -> None:
    agent = analyze_agent_log(agent_file("crafting_timeout_event"))
    assert (agent.completion_status, agent.timed_out, agent.raw_score) == (S.TIMED_OUT, True, 0.2)


def test_without_a_final_message_value_the_last_model_answer_is_the_final_message() -> None:
    agent = analyze_agent_log(agent_file("cooking_no_score"))
    assert agent.final_message == "working on cook"


def test_an_agent_that_logged_no_score_is_no_score_logged() -> None:
    agent = analyze_agent_log(agent_file("cooking_no_score"))
    assert (agent.completion_status, agent.raw_score, agent.log_processed) == (
        S.NO_SCORE_LOGGED,
        None,
        True,
    )


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        ("cooking_empty_file", "holds no span (an empty file)"),
        ("cooking_corrupt_line", "line 2: not valid JSON"),
        ("cooking_truncated", "line 2: not valid JSON"),
    ],
)
def test_an_empty_corrupt_or_truncated_file_is_a_log_file_error_naming_file_and_line(
    task: str, reason: str
) -> None:
    agent = analyze_agent_log(agent_file(task))
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert not agent.log_processed and agent.raw_score is None
    assert len(agent.parse_errors) == 1
    assert str(agent_file(task)) in agent.parse_errors[0]
    assert reason in agent.parse_errors[0]


def test_a_missing_file_is_a_log_file_error(tmp_path: Path) -> None:
    agent = analyze_agent_log(tmp_path / "agent_9.jsonl")
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert "cannot be read" in agent.parse_errors[0]


def test_an_otlp_json_export_is_read_like_our_jsonl() -> None:
    agent = analyze_agent_log(RUNS / "crafting_otlp" / "agent_0.json")
    assert (agent.completion_status, agent.raw_score) == (S.SUCCESS, 1.0)


def record_agent(path: Path, score: object) -> Path:
    @wrap(kind="agent")
    def agent() -> None:
        wrap(score, purpose="output", name="score")

    with capture_traces() as handler:
        agent()
    save_traces(handler.trace, path)
    return path


@pytest.mark.parametrize(
    ("score", "reason"),
    [
        (7, "the 'score' value 7 is outside [0, 1]"),
        ("1.0", "the 'score' value '1.0' is not a number in [0, 1]"),
        (True, "the 'score' value True is not a number in [0, 1]"),
    ],
)
def test_a_score_that_is_not_a_number_in_range_is_a_log_file_error(
    tmp_path: Path, score: object, reason: str
) -> None:
    agent = analyze_agent_log(record_agent(tmp_path / "agent_0.jsonl", score))
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert agent.parse_errors == [f"{tmp_path / 'agent_0.jsonl'}: {reason}"]


def test_the_last_score_recorded_counts(tmp_path: Path) -> None:
    @wrap(kind="agent")
    def agent() -> None:
        wrap(0.0, purpose="output", name="score", many=True)
        wrap(1.0, purpose="output", name="score", many=True)

    with capture_traces() as handler:
        agent()
    save_traces(handler.trace, tmp_path / "agent.jsonl")
    assert analyze_agent_log(tmp_path / "agent.jsonl").raw_score == 1.0


def test_the_score_can_be_recorded_under_another_name() -> None:
    agent = analyze_agent_log(agent_file("cooking_success"), score_name="points")
    assert agent.completion_status is S.NO_SCORE_LOGGED


# --- the precedence of agent statuses into the task status -----------------------------------


@pytest.mark.parametrize(
    ("agents", "task"),
    [
        ([], S.NO_SCORE_LOGGED),
        ([S.SUCCESS], S.SUCCESS),
        ([S.SUCCESS, S.SUCCESS], S.SUCCESS),
        # an unreadable log wins over everything: the run is not counted until it is fixed
        ([S.SUCCESS, S.LOG_FILE_ERROR], S.LOG_FILE_ERROR),
        ([S.LOG_FILE_ERROR, S.TIMED_OUT], S.LOG_FILE_ERROR),
        # any agent's score of 1 makes the task a success, even next to a timeout
        ([S.TIMED_OUT, S.SUCCESS], S.SUCCESS),
        ([S.FAILED_SCORE_ZERO, S.TIMED_OUT, S.SUCCESS], S.SUCCESS),
        ([S.NO_SCORE_LOGGED, S.SUCCESS], S.SUCCESS),
        # without a success, a timeout explains the failure
        ([S.FAILED_PARTIAL_SCORE, S.TIMED_OUT], S.TIMED_OUT),
        ([S.FAILED_SCORE_ZERO, S.TIMED_OUT], S.TIMED_OUT),
        ([S.NO_SCORE_LOGGED, S.TIMED_OUT], S.TIMED_OUT),
        # then the best score any agent logged
        ([S.FAILED_SCORE_ZERO, S.FAILED_PARTIAL_SCORE], S.FAILED_PARTIAL_SCORE),
        ([S.NO_SCORE_LOGGED, S.FAILED_SCORE_ZERO], S.FAILED_SCORE_ZERO),
        ([S.NO_SCORE_LOGGED, S.NO_SCORE_LOGGED], S.NO_SCORE_LOGGED),
    ],
)
def test_task_status_precedence(agents: list[CompletionStatus], task: CompletionStatus) -> None:
    assert combine_agent_statuses(agents) is task
    assert combine_agent_statuses(list(reversed(agents))) is task


def test_the_precedence_covers_every_status_once() -> None:
    assert sorted(TASK_STATUS_PRECEDENCE) == sorted(CompletionStatus)


@pytest.mark.parametrize(("missing", "extra"), [(1, 0), (0, 1)])
def test_a_task_with_too_few_or_too_many_agent_files_is_a_log_file_error(
    missing: int, extra: int
) -> None:
    status = combine_agent_statuses([S.SUCCESS], missing_agents=missing, extra_files=extra)
    assert status is S.LOG_FILE_ERROR


# --- one task run folder ----------------------------------------------------------------------


def test_a_two_agent_task_that_succeeded_carries_its_definition() -> None:
    task = outcome("cooking_success")
    assert task.overall_completion_status is S.SUCCESS and task.overall_is_successful
    assert (task.task_id, task.task_type, task.agent_count) == ("cooking_success", "cooking", 2)
    assert task.difficulty == "easy"
    assert task.difficulty_metrics == {"total_recipe_steps": 4, "unique_target_items": 2}
    assert (task.total_agent_logs_found, task.overall_raw_score) == (2, 1.0)
    assert task.model_name == "gpt-4o-mini"


def test_task_metadata_comes_from_the_definition_not_the_folder_name() -> None:
    definition = {"task_id": "anything", "type": "construction", "agent_count": 2}
    task = extract_task_outcome(RUNS / "cooking_success", definition)
    assert (task.task_id, task.task_type) == ("anything", "construction")


@pytest.mark.parametrize(
    ("task", "status", "score"),
    [
        ("construction_partial", S.FAILED_PARTIAL_SCORE, 0.5),
        ("crafting_zero", S.FAILED_SCORE_ZERO, 0.0),
        ("crafting_timed_out", S.TIMED_OUT, 0.0),
        ("cooking_no_score", S.NO_SCORE_LOGGED, None),
        ("cooking_empty_file", S.LOG_FILE_ERROR, None),
        ("cooking_corrupt_line", S.LOG_FILE_ERROR, None),
        ("cooking_truncated", S.LOG_FILE_ERROR, None),
    ],
)
def test_each_fixture_run_gets_its_status(
    task: str, status: CompletionStatus, score: float | None
) -> None:
    found = outcome(task)
    assert (found.overall_completion_status, found.overall_raw_score) == (status, score)
    assert found.overall_is_successful is False


def test_a_missing_agent_file_is_a_log_file_error_agent_not_dropped() -> None:
    task = outcome("cooking_agent_missing")
    assert task.overall_completion_status is S.LOG_FILE_ERROR
    assert task.total_agent_logs_found == 1
    statuses = [agent.completion_status for agent in task.agent_outcomes]
    assert statuses == [S.SUCCESS, S.LOG_FILE_ERROR]
    assert task.agent_outcomes[1].path is None
    assert "1 agent trace file(s) for the 2 agents" in task.problems[0]


def test_more_agent_files_than_agents_is_a_log_file_error(tmp_path: Path) -> None:
    shutil.copytree(RUNS / "cooking_success", tmp_path / "run")
    definition = TaskDefinition(task_id="cook", task_type="cooking", agent_count=1)
    task = extract_task_outcome(tmp_path / "run", definition)
    assert task.overall_completion_status is S.LOG_FILE_ERROR
    assert len(task.agent_outcomes) == 2
    assert "2 agent trace files, but task 'cook' has 1 agent(s)" in task.problems[0]


def test_three_agents_are_read_in_name_order_and_one_success_wins() -> None:
    task = outcome("construction_three_agents")
    assert [Path(agent.path or "").name for agent in task.agent_outcomes] == [
        "agent_0.jsonl",
        "agent_1.jsonl",
        "agent_2.jsonl",
    ]
    statuses = [agent.completion_status for agent in task.agent_outcomes]
    assert statuses == [S.FAILED_SCORE_ZERO, S.TIMED_OUT, S.SUCCESS]
    assert task.overall_completion_status is S.SUCCESS


def test_agent_files_are_ordered_naturally(tmp_path: Path) -> None:
    for number in (10, 2, 1):
        shutil.copy(agent_file("crafting_zero"), tmp_path / f"agent_{number}.jsonl")
    definition = TaskDefinition(task_id="t", task_type="crafting", agent_count=3)
    task = extract_task_outcome(tmp_path, definition)
    names = [Path(agent.path or "").name for agent in task.agent_outcomes]
    assert names == ["agent_1.jsonl", "agent_2.jsonl", "agent_10.jsonl"]


def test_a_folder_without_agent_files_is_no_score_logged() -> None:
    task = outcome("cooking_no_files")
    assert task.overall_completion_status is S.NO_SCORE_LOGGED
    assert (task.total_agent_logs_found, task.agent_outcomes, task.problems) == (0, [], [])


def test_a_task_run_folder_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"task run folder of task .* is not a folder"):
        extract_task_outcome(tmp_path / "nowhere", TASKS["cooking_success"])


def test_an_invalid_task_definition_names_the_field() -> None:
    with pytest.raises(ConfigurationError, match="agent_count"):
        extract_task_outcome(RUNS / "cooking_success", {"task_id": "t", "type": "cooking"})


# --- task definitions file --------------------------------------------------------------------


def test_definitions_keyed_by_task_id_take_their_id_from_the_key() -> None:
    assert TASKS["crafting_otlp"] == TaskDefinition(
        task_id="crafting_otlp", task_type="crafting", agent_count=1
    )


def test_definitions_can_be_a_list_with_task_ids(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"task_id": "a", "type": "cooking", "agent_count": 1}]))
    assert list(load_task_definitions(path)) == ["a"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2", "is not JSON"),
        ('"tasks"', "must hold a JSON object keyed by task id or a list"),
        (
            '{"a": {"type": "cooking"}}',
            "task a: invalid task definition (agent_count: Field required",
        ),
        ('{"a": {"task_id": "b", "type": "x", "agent_count": 1}}', "task 'a' has task_id 'b'"),
        (
            '[{"task_id": "a", "type": "x", "agent_count": 1}, '
            '{"task_id": "a", "type": "x", "agent_count": 1}]',
            "task id 'a' is defined twice",
        ),
    ],
)
def test_a_bad_definitions_file_says_what_is_wrong(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=r"tasks\.json") as raised:
        load_task_definitions(path)
    assert message in str(raised.value)


# --- an experiment folder, the summary and the CSV --------------------------------------------


def test_collecting_an_experiment_reads_every_defined_run_and_lists_the_rest() -> None:
    found = collect_task_outcomes(RUNS, FIXTURES / "tasks.json")
    assert len(found.outcomes) == 13
    assert found.unknown_folders == ["stray_folder"]
    assert found.tasks_without_run == ["cooking_not_run"]


def test_an_experiment_folder_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"experiment folder .* is not a folder"):
        collect_task_outcomes(tmp_path / "nowhere", TASKS)


def test_the_summary_gives_the_success_rate_overall_and_by_task_type() -> None:
    text = format_outcome_summary(collect_task_outcomes(RUNS, TASKS))
    lines = text.splitlines()
    assert lines[0] == "13 task runs, 3 successful: success rate 23.1%"
    assert lines[1] == "by task type:"
    assert lines[2].split() == ["construction", "2", "runs", "1", "successful", "50.0%"]
    assert lines[3].split() == ["cooking", "7", "runs", "1", "successful", "14.3%"]
    assert lines[4].split() == ["crafting", "4", "runs", "1", "successful", "25.0%"]
    assert lines[5] == (
        "statuses: LOG_FILE_ERROR 4, SUCCESS 3, TIMED_OUT 2, FAILED_PARTIAL_SCORE 1, "
        "FAILED_SCORE_ZERO 1, NO_SCORE_LOGGED 2"
    )
    assert "folders with no task definition (not counted): stray_folder" in lines
    assert "tasks with no run folder: cooking_not_run" in lines


def test_the_summary_of_no_run_says_so() -> None:
    assert format_outcome_summary([]) == "0 task runs, 0 successful: success rate n/a"


def test_task_outcomes_write_one_csv_row_per_run() -> None:
    found = collect_task_outcomes(RUNS, TASKS)
    stream = io.StringIO()
    assert task_outcomes_to_csv(found, stream) == 13
    header, *rows = stream.getvalue().splitlines()
    assert header.startswith("task_id,task_type,agent_count,difficulty,model_name,")
    assert header.endswith(
        ",metric_blueprint_blocks,metric_total_recipe_steps,metric_unique_target_items"
    )
    three = next(row for row in rows if row.startswith("construction_three_agents,"))
    assert ",SUCCESS," in three and "FAILED_SCORE_ZERO;TIMED_OUT;SUCCESS" in three
