"""Agent and task outcomes read from stored agent logs (seed 002, DESIGN.md item 18).

The trace files under ``fixtures/outcomes/runs`` were written by real evaltrace captures
(``fixtures/outcomes/make_outcome_fixtures.py``); the broken ones were cut from good ones.
The Mindcraft experiment under ``instrumentation_examples/multi_agent_task/mindcraft`` holds
chat-transcript logs in the two shapes Mindcraft writes (a bot's ``memory.json`` with its
``turns``, and a bare list of messages), several repetitions per task folder, one models'
folder per model, and a task file in Mindcraft's own shape.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace import capture_traces, save_traces, wrap
from evaltrace.errors import ConfigurationError
from evaltrace.results import (
    TaskDefinition,
    aggregate_results_to_dataframe,
    analyze_agent_log,
    collect_task_outcomes,
    combine_agent_statuses,
    extract_task_outcome,
    extract_task_outcomes,
    format_outcome_summary,
    load_task_definitions,
    task_outcomes_to_csv,
)
from evaltrace.results.model import CompletionStatus
from evaltrace.results.outcomes import (
    DEFAULT_SCORE_PATTERN,
    DEFAULT_TIMEOUT_MARKER,
    TASK_STATUS_PRECEDENCE,
)

S = CompletionStatus
FIXTURES = Path(__file__).parent / "fixtures" / "outcomes"
RUNS = FIXTURES / "runs"
TASKS = load_task_definitions(FIXTURES / "tasks.json")
MINDCRAFT = (
    Path(__file__).parents[1] / "instrumentation_examples" / "multi_agent_task" / "mindcraft"
)
EXPERIMENTS = MINDCRAFT / "experiments"
MINDCRAFT_TASKS = MINDCRAFT / "example_tasks.json"
BREAD = "multiagent_cooking_1_bread"
WOOL = "multiagent_crafting_pink_wool_full_plan__depth_0"
SHEARS = "techtree_1_shears_with_2_iron_ingot"
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


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
        ("cooking_empty_file", "the file is empty"),
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
        # agents share the task's score: one agent's success settles it beside a bad log
        ([S.SUCCESS, S.LOG_FILE_ERROR], S.SUCCESS),
        ([S.SUCCESS, S.ERROR], S.SUCCESS),
        # any other status could be overruled by what the unreadable log holds
        ([S.LOG_FILE_ERROR, S.TIMED_OUT], S.LOG_FILE_ERROR),
        ([S.LOG_FILE_ERROR, S.FAILED_PARTIAL_SCORE], S.LOG_FILE_ERROR),
        ([S.LOG_FILE_ERROR, S.NO_SCORE_LOGGED], S.LOG_FILE_ERROR),
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


def test_a_task_with_more_agent_files_than_agents_is_a_log_file_error() -> None:
    assert combine_agent_statuses([S.SUCCESS], extra_files=1) is S.LOG_FILE_ERROR


@pytest.mark.parametrize(
    ("found", "task"),
    [([S.SUCCESS], S.SUCCESS), ([S.FAILED_SCORE_ZERO], S.LOG_FILE_ERROR)],
)
def test_a_missing_agent_file_counts_as_an_unreadable_log(
    found: list[CompletionStatus], task: CompletionStatus
) -> None:
    assert combine_agent_statuses(found, missing_agents=1) is task


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


def test_a_missing_agent_file_beside_a_success_is_a_success_with_the_problem_listed() -> None:
    task = outcome("cooking_agent_missing")
    assert task.overall_completion_status is S.SUCCESS
    assert task.total_agent_logs_found == 1
    statuses = [agent.completion_status for agent in task.agent_outcomes]
    assert statuses == [S.SUCCESS, S.LOG_FILE_ERROR]
    assert task.agent_outcomes[1].path is None
    assert "1 agent log(s) for the 2 agents of task 'cooking_agent_missing'" in task.problems[0]


def test_more_agent_logs_than_agents_is_a_log_file_error(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    shutil.copy(agent_file("cooking_success", 0), tmp_path / "run" / "planner.jsonl")
    shutil.copy(agent_file("cooking_success", 1), tmp_path / "run" / "worker.jsonl")
    definition = TaskDefinition(task_id="cook", task_type="cooking", agent_count=1)
    task = extract_task_outcome(tmp_path / "run", definition)
    assert task.overall_completion_status is S.LOG_FILE_ERROR
    assert len(task.agent_outcomes) == 2
    assert "2 agent logs, but task 'cook' has 1 agent(s)" in task.problems[0]


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
    with pytest.raises(ConfigurationError, match=r"\(type: Field required\)"):
        extract_task_outcome(RUNS / "cooking_success", {"task_id": "t", "agent_count": 2})


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
    assert found.unknown_folders == [str(RUNS / "stray_folder")]
    assert found.tasks_without_run == ["cooking_not_run"]


def test_an_experiment_folder_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"experiment folder .* is not a folder"):
        collect_task_outcomes(tmp_path / "nowhere", TASKS)


def test_the_summary_gives_the_success_rate_overall_and_by_task_type() -> None:
    text = format_outcome_summary(collect_task_outcomes(RUNS, TASKS))
    lines = text.splitlines()
    assert lines[0] == "13 task runs, 4 successful: success rate 30.8%"
    assert lines[1] == "by task type:"
    assert lines[2].split() == ["construction", "2", "runs", "1", "successful", "50.0%"]
    assert lines[3].split() == ["cooking", "7", "runs", "2", "successful", "28.6%"]
    assert lines[4].split() == ["crafting", "4", "runs", "1", "successful", "25.0%"]
    assert (
        "statuses: SUCCESS 4, LOG_FILE_ERROR 3, TIMED_OUT 2, FAILED_PARTIAL_SCORE 1, "
        "FAILED_SCORE_ZERO 1, NO_SCORE_LOGGED 2"
    ) in lines
    assert f"folders with no task definition (not counted): {RUNS / 'stray_folder'}" in lines
    assert "tasks with no run folder: cooking_not_run" in lines


def test_the_summary_shows_the_first_twenty_problems_and_counts_the_rest(tmp_path: Path) -> None:
    (tmp_path / "cook").mkdir()
    for number in range(25):
        (tmp_path / "cook" / f"andy_{number}.json").write_text("[{")
    found = collect_task_outcomes(tmp_path, {"cook": {"type": "cooking"}})
    lines = format_outcome_summary(found).splitlines()
    shown = lines[lines.index("problems:") + 1 :]
    assert len(shown) == 21 and shown[0].startswith(f"  {tmp_path / 'cook' / 'andy_0.json'}, ")
    assert shown[-1].startswith("  ... and 5 more: the problems and parse_errors columns")


def test_the_models_are_shown_when_the_runs_are_of_several() -> None:
    def summary(folder: Path) -> str:
        found = collect_task_outcomes(folder, MINDCRAFT_TASKS, model_from_path="{model}/{task}")
        return format_outcome_summary(found)

    assert "by model:" not in summary(EXPERIMENTS / "gpt-4o-mini")
    assert "by model:" in summary(EXPERIMENTS)


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


# --- Mindcraft chat-transcript logs ------------------------------------------------------------


def transcript(path: Path, *messages: tuple[str, str], turns: bool = False) -> Path:
    """Write a chat-transcript log: a bare list of messages, or a memory file with turns."""
    listed = [{"role": role, "content": content} for role, content in messages]
    document: object = {"memory": "", "turns": listed, "taskStart": 0} if turns else listed
    path.write_text(json.dumps(document, indent=2))
    return path


def test_a_bare_list_of_messages_is_read_as_a_chat_transcript(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json",
        ("system", "Build a shear."),
        ("assistant", '!craftRecipe("shears", 1)'),
        ("system", "Task ended with score : 1"),
    )
    agent = analyze_agent_log(log)
    assert (agent.completion_status, agent.raw_score) == (S.SUCCESS, 1.0)
    assert agent.final_message == "Task ended with score : 1"
    assert agent.log_processed and agent.parse_errors == [] and not agent.timed_out


def test_a_memory_file_with_turns_is_read_as_a_chat_transcript(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json", ("system", "Task ended with score : 0.45"), turns=True
    )
    agent = analyze_agent_log(log)
    assert (agent.completion_status, agent.raw_score) == (S.FAILED_PARTIAL_SCORE, 0.45)


def test_the_timeout_marker_in_a_system_message_times_the_agent_out(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json",
        ("system", "Task timeout reached"),
        ("system", "Task ended with score : 0"),
    )
    agent = analyze_agent_log(log)
    assert (agent.completion_status, agent.timed_out, agent.raw_score) == (S.TIMED_OUT, True, 0.0)


def test_a_score_of_one_is_a_success_whatever_the_order_of_the_timeout_marker(
    tmp_path: Path,
) -> None:
    first = transcript(
        tmp_path / "a.json",
        ("system", "Task timeout reached"),
        ("system", "Task ended with score : 1"),
    )
    then = transcript(
        tmp_path / "b.json",
        ("system", "Task ended with score : 1"),
        ("system", "Task timeout reached"),
    )
    for log in (first, then):
        agent = analyze_agent_log(log)
        assert (agent.completion_status, agent.timed_out) == (S.SUCCESS, True)


def test_only_system_messages_give_the_score_and_the_final_message(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json",
        ("system", "Collaborate with other agents to craft an pink_wool"),
        ("user", "jill: Task ended with score : 1"),
        ("assistant", "Task timeout reached? No."),
    )
    agent = analyze_agent_log(log)
    assert (agent.completion_status, agent.timed_out) == (S.NO_SCORE_LOGGED, False)
    assert agent.final_message == "Collaborate with other agents to craft an pink_wool"


def test_the_last_score_message_counts(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json",
        ("system", "Task ended with score : 0"),
        ("system", "Task ended with score : 1"),
    )
    assert analyze_agent_log(log).raw_score == 1.0


def test_an_empty_message_list_logged_no_score(tmp_path: Path) -> None:
    log = tmp_path / "andy_0.json"
    log.write_text("[]")
    agent = analyze_agent_log(log)
    assert (agent.completion_status, agent.log_processed) == (S.NO_SCORE_LOGGED, True)


def test_a_cut_off_transcript_is_a_log_file_error_naming_file_and_line(tmp_path: Path) -> None:
    full = transcript(tmp_path / "jill_1.json", ("system", "Task ended with score : 1"), turns=True)
    full.write_text(full.read_text()[:40])
    agent = analyze_agent_log(full)
    assert agent.completion_status is S.LOG_FILE_ERROR and not agent.log_processed
    assert agent.parse_errors[0].startswith(f"{full}, line ")
    assert "not valid JSON" in agent.parse_errors[0]
    assert "resourceSpans" not in agent.parse_errors[0]  # not a trace file's hint


@pytest.mark.parametrize("document", [{"messages": []}, [{"text": "Task ended"}]])
def test_a_json_log_of_neither_shape_says_what_a_log_may_be(
    tmp_path: Path, document: object
) -> None:
    log = tmp_path / "andy_0.json"
    log.write_text(json.dumps(document))
    agent = analyze_agent_log(log)
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert agent.parse_errors[0].endswith(
        'An agent log is a chat transcript (a JSON list of {"role", "content"} messages, or an '
        'object with "turns") or a trace file (JSON lines, OTLP-JSON or Phoenix span JSON).'
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            "Task ended with score : undefined",
            "message 0: the score 'undefined' is not a number in [0, 1]",
        ),
        ("Task ended with score : 2", "message 0: the score 2.0 is outside [0, 1]"),
        ("Task ended with score : NaN", "message 0: the score 'NaN' is not a number in [0, 1]"),
    ],
)
def test_a_score_message_without_a_score_in_range_is_a_log_file_error(
    tmp_path: Path, content: str, reason: str
) -> None:
    log = transcript(tmp_path / "andy_0.json", ("system", content))
    agent = analyze_agent_log(log)
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert agent.parse_errors == [f"{log}, {reason}"]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"turns": "hello"}, '"turns" must be a list of messages; found str'),
        ([{"role": "system", "content": "hi"}, "Task ended"], "message 1 is not an object with"),
        (
            [{"role": "system", "content": "hi"}, {"content": "x"}],
            "message 1 is not an object with",
        ),
    ],
)
def test_a_transcript_of_the_wrong_shape_is_a_log_file_error_saying_where(
    tmp_path: Path, document: object, reason: str
) -> None:
    log = tmp_path / "andy_0.json"
    log.write_text(json.dumps(document))
    agent = analyze_agent_log(log)
    assert agent.completion_status is S.LOG_FILE_ERROR
    assert agent.parse_errors[0].startswith(f"{log}")
    assert reason in agent.parse_errors[0]


def test_the_score_pattern_and_the_timeout_marker_can_be_changed(tmp_path: Path) -> None:
    log = transcript(
        tmp_path / "andy_0.json",
        ("system", "Out of time!"),
        ("system", "Final score = 0.75 (3 of 4 blocks)"),
    )
    agent = analyze_agent_log(
        log, score_pattern=r"Final score = (?P<score>[\d.]+)", timeout_marker="Out of time"
    )
    assert (agent.completion_status, agent.raw_score, agent.timed_out) == (
        S.TIMED_OUT,
        0.75,
        True,
    )
    assert analyze_agent_log(log).completion_status is S.NO_SCORE_LOGGED
    assert DEFAULT_TIMEOUT_MARKER == "Task timeout reached"
    assert "Task ended with score : " in DEFAULT_SCORE_PATTERN


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("Task ended", "capture the score in a group"), ("score : (", "not a regular expression")],
)
def test_a_bad_score_pattern_is_refused(tmp_path: Path, pattern: str, message: str) -> None:
    log = transcript(tmp_path / "andy_0.json", ("system", "Task ended with score : 1"))
    with pytest.raises(ConfigurationError, match="score_pattern") as raised:
        analyze_agent_log(log, score_pattern=pattern)
    assert message in str(raised.value)


def test_trace_files_are_still_read_as_traces() -> None:
    agent = analyze_agent_log(RUNS / "crafting_otlp" / "agent_0.json")
    assert (agent.completion_status, agent.raw_score) == (S.SUCCESS, 1.0)


# --- Mindcraft task definitions -----------------------------------------------------------------


def test_agent_count_defaults_to_one() -> None:
    definitions = load_task_definitions(MINDCRAFT_TASKS)
    assert definitions[SHEARS].agent_count == 1
    assert definitions[SHEARS].task_type == "techtree"
    assert definitions.problems == []


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('"debug": {"goal": "stand still"}', "task debug: invalid task definition (type: Field"),
        ('"debug": {"type": "debug", "agent_count": 0}', "task debug: invalid task definition"),
        ('"debug": "stand still"', "task debug: a task definition must be an object"),
        (
            '"debug": {"task_id": "other", "type": "debug"}',
            "task 'debug' has task_id 'other'",
        ),
    ],
)
def test_a_bad_task_is_listed_as_a_problem_and_skipped(
    tmp_path: Path, bad: str, problem: str
) -> None:
    path = tmp_path / "example_tasks.json"
    path.write_text('{"cook": {"type": "cooking", "agent_count": 2}, ' + bad + "}")
    definitions = load_task_definitions(path)
    assert list(definitions) == ["cook"]
    assert len(definitions.problems) == 1
    assert definitions.problems[0].startswith(f"{path}: ")
    assert problem in definitions.problems[0]


def test_a_task_defined_twice_keeps_the_first_and_lists_the_second(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(
        json.dumps(
            [
                {"task_id": "a", "type": "cooking"},
                {"task_id": "a", "type": "crafting"},
            ]
        )
    )
    definitions = load_task_definitions(path)
    assert definitions["a"].task_type == "cooking"
    assert "task id 'a' is defined twice" in definitions.problems[0]


def test_skipped_tasks_are_shown_in_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text('{"cooking_success": {"type": "cooking", "agent_count": 2}, "x": 3}')
    found = collect_task_outcomes(RUNS, path)
    assert found.definition_problems == load_task_definitions(path).problems
    assert f"task definitions skipped: {found.definition_problems[0]}" in (
        format_outcome_summary(found).splitlines()
    )


def test_definitions_may_be_given_as_the_parsed_task_file() -> None:
    tasks = json.loads(MINDCRAFT_TASKS.read_text())
    tasks["debug"] = {"goal": "stand still"}
    found = collect_task_outcomes(EXPERIMENTS, tasks)
    assert len(found.outcomes) == 12
    assert {outcome.agent_count for outcome in found.outcomes if outcome.task_id == SHEARS} == {1}
    assert len(found.definition_problems) == 1
    assert found.definition_problems[0].startswith("tasks: task debug: invalid task definition")


# --- repetitions in one task folder ---------------------------------------------------------


def test_logs_named_agent_and_repetition_give_one_outcome_per_repetition() -> None:
    definitions = load_task_definitions(MINDCRAFT_TASKS)
    runs = extract_task_outcomes(EXPERIMENTS / "gpt-4o-mini" / WOOL, definitions[WOOL])
    assert [run.repetition for run in runs] == [0, 1]
    assert [run.overall_completion_status for run in runs] == [S.TIMED_OUT, S.SUCCESS]
    assert [[Path(agent.path or "").name for agent in run.agent_outcomes] for run in runs] == [
        ["andy_0.json", "jill_0.json"],
        ["andy_1.json", "jill_1.json"],
    ]
    assert [run.total_agent_logs_found for run in runs] == [2, 2]


def test_a_single_agent_task_has_one_repetition_per_numbered_log() -> None:
    definitions = load_task_definitions(MINDCRAFT_TASKS)
    runs = extract_task_outcomes(EXPERIMENTS / "gpt-4o-mini" / SHEARS, definitions[SHEARS])
    assert [(run.repetition, run.overall_completion_status) for run in runs] == [
        (0, S.SUCCESS),
        (1, S.FAILED_SCORE_ZERO),
    ]


def test_numbered_agents_of_one_run_are_not_repetitions() -> None:
    runs = extract_task_outcomes(RUNS / "cooking_success", TASKS["cooking_success"])
    assert len(runs) == 1 and runs[0].repetition is None
    assert runs[0].total_agent_logs_found == 2


def test_a_repetition_missing_an_agent_log_names_the_agent(tmp_path: Path) -> None:
    shutil.copytree(EXPERIMENTS / "gpt-4o-mini" / WOOL, tmp_path / WOOL)
    (tmp_path / WOOL / "jill_1.json").unlink()
    definition = load_task_definitions(MINDCRAFT_TASKS)[WOOL]
    first, second = extract_task_outcomes(tmp_path / WOOL, definition)
    assert first.problems == []
    assert second.overall_completion_status is S.SUCCESS  # andy logged the task's score of 1
    assert second.total_agent_logs_found == 1
    assert "repetition 1" in second.problems[0] and "missing: jill" in second.problems[0]


def test_extract_task_outcome_refuses_a_folder_of_several_repetitions() -> None:
    definition = load_task_definitions(MINDCRAFT_TASKS)[WOOL]
    with pytest.raises(ConfigurationError, match="extract_task_outcomes") as raised:
        extract_task_outcome(EXPERIMENTS / "gpt-4o-mini" / WOOL, definition)
    assert "2 repetitions" in str(raised.value)


def test_an_unreadable_log_beside_a_success_is_a_success_with_the_problem_listed() -> None:
    definition = load_task_definitions(MINDCRAFT_TASKS)[BREAD]
    run = extract_task_outcomes(EXPERIMENTS / "gpt-4o-mini" / BREAD, definition)[1]
    assert run.overall_completion_status is S.SUCCESS and run.overall_is_successful
    andy, jill = run.agent_outcomes
    assert andy.completion_status is S.SUCCESS
    assert jill.completion_status is S.LOG_FILE_ERROR
    record = run.to_record()
    assert record["agent_log_errors"] == 1
    assert record["parse_errors"] == jill.parse_errors[0]
    assert "jill_1.json, line " in record["parse_errors"]


# --- experiments: several folders, nested folders, the model from the path -------------------


def test_a_folder_of_experiment_folders_is_searched_for_task_folders() -> None:
    found = collect_task_outcomes(EXPERIMENTS, MINDCRAFT_TASKS)
    assert len(found.outcomes) == 12
    assert found.unknown_folders == [] and found.tasks_without_run == []
    assert {Path(outcome.folder).parent.name for outcome in found.outcomes} == {
        "claude-3-5-haiku",
        "gpt-4o-mini",
    }


def test_several_experiment_folders_are_read_in_one_call() -> None:
    found = collect_task_outcomes(
        [EXPERIMENTS / "gpt-4o-mini", EXPERIMENTS / "claude-3-5-haiku"], MINDCRAFT_TASKS
    )
    assert len(found.outcomes) == 12
    assert found.folders == [
        str(EXPERIMENTS / "gpt-4o-mini"),
        str(EXPERIMENTS / "claude-3-5-haiku"),
    ]
    assert Path(found.outcomes[0].folder).parent.name == "gpt-4o-mini"


def test_a_task_folder_found_twice_is_read_once() -> None:
    found = collect_task_outcomes([EXPERIMENTS, EXPERIMENTS / "gpt-4o-mini"], MINDCRAFT_TASKS)
    assert len(found.outcomes) == 12


def test_the_model_comes_from_the_folder_layout() -> None:
    found = collect_task_outcomes(EXPERIMENTS, MINDCRAFT_TASKS, model_from_path="{model}/{task}")
    models = {(Path(o.folder).parent.name, o.model_name) for o in found.outcomes}
    assert models == {("gpt-4o-mini", "gpt-4o-mini"), ("claude-3-5-haiku", "claude-3-5-haiku")}


def test_the_model_template_may_skip_folders_and_match_part_of_a_name(tmp_path: Path) -> None:
    run = tmp_path / "techtree" / "run_llama-3" / "2025-01-01" / SHEARS
    shutil.copytree(EXPERIMENTS / "gpt-4o-mini" / SHEARS, run)
    found = collect_task_outcomes(tmp_path, MINDCRAFT_TASKS, model_from_path="run_{model}/*/{task}")
    assert [outcome.model_name for outcome in found.outcomes] == ["llama-3", "llama-3"]


def test_the_model_the_logs_name_wins_over_the_path(tmp_path: Path) -> None:
    shutil.copytree(RUNS / "cooking_success", tmp_path / "other-model" / "cooking_success")
    found = collect_task_outcomes(tmp_path, TASKS, model_from_path="{model}/{task}")
    assert found.outcomes[0].model_name == "gpt-4o-mini"  # the model of its LLM spans


def test_a_folder_the_model_template_does_not_fit_is_a_problem(tmp_path: Path) -> None:
    shutil.copytree(EXPERIMENTS / "gpt-4o-mini" / SHEARS, tmp_path / SHEARS)
    found = collect_task_outcomes(tmp_path, MINDCRAFT_TASKS, model_from_path="run_{model}/{task}")
    assert [outcome.model_name for outcome in found.outcomes] == [None, None]
    assert "does not fit --model-from-path 'run_{model}/{task}'" in found.outcomes[0].problems[0]


@pytest.mark.parametrize(
    "template", ["{model}", "{task}/{model}", "{model}/{model}/{task}", "{task}"]
)
def test_a_model_template_must_name_the_model_once_and_end_with_the_task(template: str) -> None:
    with pytest.raises(ConfigurationError, match="model_from_path"):
        collect_task_outcomes(EXPERIMENTS, MINDCRAFT_TASKS, model_from_path=template)


def test_a_mindcraft_experiment_gives_the_dataframe_of_its_own_analysis_script() -> None:
    found = collect_task_outcomes(EXPERIMENTS, MINDCRAFT_TASKS, model_from_path="{model}/{task}")
    frame = aggregate_results_to_dataframe(found)
    mindcraft_columns = {
        "task_id",
        "model_name",
        "agent_count",
        "task_type",
        "overall_raw_score",
        "overall_is_successful",
        "overall_completion_status",
        "total_agent_logs_found",
        "metric_total_recipe_steps",
        "metric_unique_target_items",
    }
    assert mindcraft_columns <= set(frame.columns)
    assert len(frame) == 12 and set(frame["repetition"]) == {0, 1}
    rates = frame.groupby(["task_type", "model_name"])["overall_is_successful"].mean()
    assert rates.to_dict() == {
        ("cooking", "claude-3-5-haiku"): 0.5,
        ("cooking", "gpt-4o-mini"): 1.0,
        ("techtree", "claude-3-5-haiku"): 0.5,
        ("techtree", "gpt-4o-mini"): 0.5,
    }
    by_type = frame.groupby("task_type")["overall_is_successful"].mean().to_dict()
    assert by_type == {"cooking": 0.75, "techtree": 0.5}
    shears = frame[frame["task_id"] == SHEARS]
    assert set(shears["agent_count"]) == {1} and shears["metric_total_recipe_steps"].isna().all()
    statuses = frame["overall_completion_status"].value_counts().to_dict()
    assert statuses == {"SUCCESS": 7, "FAILED_SCORE_ZERO": 3, "TIMED_OUT": 2}


def test_the_csv_has_the_repetition_and_the_agents_parse_errors() -> None:
    found = collect_task_outcomes(EXPERIMENTS / "gpt-4o-mini", MINDCRAFT_TASKS)
    stream = io.StringIO()
    task_outcomes_to_csv(found, stream)
    header, *rows = stream.getvalue().splitlines()
    columns = header.split(",")
    assert {"repetition", "parse_errors"} <= set(columns)
    bread_1 = next(row for row in rows if row.startswith(f"{BREAD},") and ",1," in row)
    assert "jill_1.json, line " in bread_1


# --- evaltrace outcomes on a Mindcraft experiment ---------------------------------------------


def evaltrace(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


def test_the_command_reads_a_mindcraft_experiment_as_it_is() -> None:
    done = evaltrace(
        MINDCRAFT,
        "outcomes",
        "experiments",
        "--tasks",
        "example_tasks.json",
        "--model-from-path",
        "{model}/{task}",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:9] == [
        "12 task runs, 7 successful: success rate 58.3%",
        "by task type:",
        "  cooking       4 runs      3 successful   75.0%",
        "  techtree      8 runs      4 successful   50.0%",
        "by model:",
        "  claude-3-5-haiku      6 runs      3 successful   50.0%",
        "  gpt-4o-mini           6 runs      4 successful   66.7%",
        "statuses: SUCCESS 7, TIMED_OUT 2, FAILED_SCORE_ZERO 3",
        "problems:",
    ]
    assert lines[9] == (
        f"  experiments/gpt-4o-mini/{BREAD}/jill_1.json, line 29: not valid JSON (column 7: "
        "Expecting property name enclosed in double quotes): the file is cut off or corrupt"
    )
    assert len(lines) == 10


def test_the_command_takes_several_folders_and_the_patterns(tmp_path: Path) -> None:
    run = tmp_path / "exp" / "cook"
    run.mkdir(parents=True)
    transcript(run / "andy_0.json", ("system", "Out of time"), ("system", "Final score = 0"))
    transcript(run / "andy_1.json", ("system", "Final score = 1"))
    (tmp_path / "tasks.json").write_text('{"cook": {"type": "cooking"}}')
    done = evaltrace(
        tmp_path,
        "outcomes",
        "exp",
        str(EXPERIMENTS / "gpt-4o-mini"),
        "--tasks",
        "tasks.json",
        "--score-pattern",
        r"Final score = (\d+)",
        "--timeout-marker",
        "Out of time",
        "--csv",
        "out.csv",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "2 task runs, 1 successful: success rate 50.0%"
    assert "statuses: SUCCESS 1, TIMED_OUT 1" in done.stdout
    assert (tmp_path / "out.csv").read_text().count("\n") == 3


def test_the_command_refuses_a_bad_score_pattern(tmp_path: Path) -> None:
    done = evaltrace(
        tmp_path,
        "outcomes",
        str(EXPERIMENTS),
        "--tasks",
        str(MINDCRAFT_TASKS),
        "--score-pattern",
        "no group",
    )
    assert done.returncode == 2
    assert "score_pattern" in done.stderr and "Traceback" not in done.stderr
