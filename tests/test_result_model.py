"""The saved result: exact JSON round trip, completion statuses by precedence, runner entries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from evaltrace import UNSET, Evaluable, NamedData, evaluate_inputs, wrap
from evaltrace.errors import ResultFileError
from evaltrace.evals import Evaluation, EvaluationError
from evaltrace.results import load_result
from evaltrace.results.model import (
    SCHEMA_VERSION,
    CompletionStatus,
    EntryResult,
    RunResult,
    entry_status,
)

S = CompletionStatus


def scored(score: float) -> Evaluation:
    return Evaluation(score=score, evaluator="e")


def errored(kind: str, where: str = "evaluator") -> Evaluation:
    return Evaluation.errored(EvaluationError(type=kind, message="m", where=where))


SKIPPED = Evaluation.skip("nothing to compare")
TRACE_UNREADABLE = EvaluationError(type="TraceFormatError", message="line 3", where="trace_file")
RUNNABLE_RAISED = EvaluationError(type="ValueError", message="boom", where="runnable")
RUNNABLE_TIMED_OUT = EvaluationError(type="EvaluatorTimeoutError", message="5 s", where="runnable")
RUNNABLE_PAST_TIMEOUT = EvaluationError(
    type="RunnableTimeoutError", message="5 s", where="runnable"
)


@pytest.mark.parametrize(
    ("evaluations", "error", "status"),
    [
        # LOG_FILE_ERROR wins over everything, even a run error and a pass
        ([scored(1.0)], TRACE_UNREADABLE, S.LOG_FILE_ERROR),
        ([errored("ValueError")], TRACE_UNREADABLE, S.LOG_FILE_ERROR),
        # ERROR: the runnable raised, or an evaluator failed (not by timing out)
        ([errored("ValueError", "runnable")], RUNNABLE_RAISED, S.ERROR),
        ([scored(1.0), errored("KeyError")], None, S.ERROR),
        ([errored("TimeoutError"), errored("KeyError")], None, S.ERROR),
        ([errored("EvaluatorTimeoutError")], RUNNABLE_RAISED, S.ERROR),
        # TIMED_OUT: only timeouts went wrong
        ([errored("EvaluatorTimeoutError", "runnable")], RUNNABLE_TIMED_OUT, S.TIMED_OUT),
        ([errored("RunnableTimeoutError", "runnable")], RUNNABLE_PAST_TIMEOUT, S.TIMED_OUT),
        ([scored(1.0), errored("TimeoutError")], None, S.TIMED_OUT),
        ([errored("APITimeoutError", "judge")], None, S.TIMED_OUT),
        # NO_SCORE_LOGGED: nothing scored the entry
        ([], None, S.NO_SCORE_LOGGED),
        ([SKIPPED], None, S.NO_SCORE_LOGGED),
        # the scores decide the rest
        ([scored(1.0), SKIPPED], None, S.SUCCESS),
        ([scored(0.5), scored(0.9)], None, S.SUCCESS),
        ([scored(0.0), scored(0.0)], None, S.FAILED_SCORE_ZERO),
        ([scored(0.0), SKIPPED], None, S.FAILED_SCORE_ZERO),
        ([scored(0.0), scored(1.0)], None, S.FAILED_PARTIAL_SCORE),
        ([scored(0.3)], None, S.FAILED_PARTIAL_SCORE),
    ],
)
def test_status_follows_the_documented_precedence(
    evaluations: list[Evaluation], error: EvaluationError | None, status: CompletionStatus
) -> None:
    assert entry_status(evaluations, error) is status


def test_the_threshold_decides_between_success_and_a_partial_score() -> None:
    assert entry_status([scored(0.6)], threshold=0.5) is S.SUCCESS
    assert entry_status([scored(0.6)], threshold=0.7) is S.FAILED_PARTIAL_SCORE


def test_only_success_counts_as_a_pass() -> None:
    assert [status for status in CompletionStatus if status.passed] == [S.SUCCESS]


class Details(BaseModel):
    expected: str
    actual: str


def full_result() -> RunResult:
    when = datetime(2026, 11, 23, 10, 41, 7, 123456, tzinfo=UTC)
    entry = EntryResult(
        index=0,
        name="greeting",
        description="greets by name",
        input={"user_id": "u1"},
        eval_input=[NamedData(name="profile", value={"name": "Ada", "tags": [1, 2.5, None]})],
        output="Hello Ada",
        eval_output=[NamedData(name="greeting", value="Hello Ada")],
        expectation=None,
        eval_metadata={"lang": "en"},
        evaluations=[
            Evaluation(
                score=0.1 + 0.2,
                reasoning="é and </script>",
                details=Details(expected="a", actual="b"),
                evaluator="intent",
            ),
            Evaluation.errored(ValueError("bad"), where="evaluator", evaluator="judge"),
            Evaluation.skip("no expectation", evaluator="f1"),
        ],
        started_at=when,
        duration_s=0.012,
        trace_ids=["0af7651916cd43dd8448eb211c80319c"],
    )
    no_expectation = EntryResult(index=1, name="1", error=RUNNABLE_RAISED)
    return RunResult(
        run_id="20261123T104107.123456Z",
        name="greetings",
        source="greetings.json",
        evaluators=["intent", "judge", "f1"],
        entries=[entry, no_expectation],
        dataset_results={"intent::fscore": Evaluation(score=0.75, details={"tp": 3})},
        started_at=when,
        finished_at=when,
        duration_s=1.5,
        settings={"concurrency": 8, "timeout": 300.0},
    )


def test_a_run_result_round_trips_through_json_exactly() -> None:
    result = full_result()
    again = RunResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert again.model_dump_json() == result.model_dump_json()


def test_an_absent_expectation_stays_absent_and_none_stays_none() -> None:
    result = RunResult.model_validate_json(full_result().model_dump_json())
    assert result.entries[0].expectation is None and result.entries[0].has_expectation
    assert result.entries[1].expectation is UNSET and not result.entries[1].has_expectation
    assert "expectation" not in result.entries[1].model_dump(mode="json")


def test_model_details_are_kept_as_json_data() -> None:
    entry = full_result().entries[0]
    assert entry.evaluations[0].details == {"expected": "a", "actual": "b"}


def test_status_counts_and_pass() -> None:
    result = full_result()
    assert result.status_counts == {S.ERROR: 2}
    assert not result.passed
    assert not RunResult(name="empty").passed


def test_a_result_saved_by_a_newer_evaltrace_is_refused_and_an_older_one_migrated(
    tmp_path: Path,
) -> None:
    data = full_result().model_dump(mode="json")
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**data, "schema_version": SCHEMA_VERSION + 1}))
    older = tmp_path / "older.json"
    older.write_text(json.dumps({**data, "schema_version": 1}))

    with pytest.raises(
        ResultFileError, match=f"saved with schema_version {SCHEMA_VERSION + 1}, by a newer"
    ):
        load_result(newer)
    migrated = load_result(older)
    assert migrated.schema_version == SCHEMA_VERSION
    assert migrated.entries == full_result().entries


def test_a_result_of_version_2_reads_with_nothing_recorded_of_version_3(tmp_path: Path) -> None:
    data = {"schema_version": 2, "name": "v2", "entries": [{"index": 0, "name": "a"}]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))

    result = load_result(path)

    assert result.schema_version == SCHEMA_VERSION == 3
    assert result.statistics is None and result.label_counts == {} and result.judge_usage == {}
    assert result.entries[0].epochs == [] and result.entries[0].usage == {}


@pytest.mark.anyio
async def test_the_runner_gives_each_input_as_a_saved_entry() -> None:
    @wrap
    def app(question: str) -> str:
        if question == "boom":
            raise ValueError("no answer")
        return wrap(question.upper(), purpose="output", name="answer")

    def is_upper(evaluable: Evaluable) -> bool:
        return str(evaluable.output_value("answer")).isupper()

    cases = [Evaluable(expectation="HI", description="greeting"), Evaluable()]
    ok, failed = await evaluate_inputs(app, ["hi", "boom"], [is_upper], evaluables=cases)

    entry = ok.to_entry(name="first")
    assert (entry.name, entry.status, entry.output, entry.expectation) == (
        "first",
        S.SUCCESS,
        "HI",
        "HI",
    )
    assert entry.eval_output == [NamedData(name="answer", value="HI")]
    assert len(entry.trace_ids) == 1 and len(entry.trace_ids[0]) == 32
    assert entry.started_at is not None and entry.duration_s > 0
    broken = failed.to_entry()
    assert (broken.name, broken.status) == ("1", S.ERROR)
    assert broken.error is not None and broken.error.where == "runnable"
    assert broken.error.message == "no answer"
    saved = RunResult(name="app", entries=[entry, broken])
    assert RunResult.model_validate_json(saved.model_dump_json()) == saved


@pytest.mark.anyio
async def test_saved_entries_redact_secrets_as_spans_do() -> None:
    def app(request: dict[str, str]) -> dict[str, str]:
        return {"answer": "4", "token": "t-123"}

    (item,) = await evaluate_inputs(
        app, [{"question": "2+2?", "api_key": "sk-live"}], [lambda e: True]
    )
    entry = item.to_entry()
    assert entry.input == {"question": "2+2?", "api_key": "[REDACTED]"}
    assert entry.output == {"answer": "4", "token": "[REDACTED]"}
    assert "sk-live" not in entry.model_dump_json() and "t-123" not in entry.model_dump_json()


class Verdict(BaseModel):
    """Details of an evaluation given as a model."""

    label: str


@pytest.mark.parametrize(
    "fields",
    [
        {"index": 0, "name": "0", "evaluations": [scored(1.0)]},
        {
            "index": 3,
            "name": "0af7651916cd43dd8448eb211c80319c",
            "description": "answer",
            "input": {"question": "q"},
            "output": "Paris",
            "eval_input": [NamedData(name="question", value="q")],
            "eval_output": [NamedData(name="answer", value="Paris")],
            "expectation": None,
            "evaluations": [scored(0.0), Evaluation(score=1.0, details=Verdict(label="ok"))],
            "status": CompletionStatus.FAILED_PARTIAL_SCORE,
            "started_at": datetime(2026, 1, 1, tzinfo=UTC),
            "duration_s": 0.5,
            "trace_ids": ["0af7651916cd43dd8448eb211c80319c"],
        },
        {
            "index": 1,
            "name": "1",
            "evaluations": [],
            "error": EvaluationError(type="X", message="m"),
        },
    ],
    ids=["defaults", "every field", "error"],
)
def test_an_entry_made_from_checked_values_is_the_entry_validation_makes(
    fields: dict[str, object],
) -> None:
    checked = EntryResult.from_checked(**fields)
    validated = EntryResult(**fields)  # type: ignore[arg-type]

    assert checked == validated and repr(checked) == repr(validated)
    assert checked.model_fields_set == validated.model_fields_set
    assert checked.model_dump_json() == validated.model_dump_json()
    assert EntryResult.model_validate_json(checked.model_dump_json()) == validated
