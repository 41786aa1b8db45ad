"""create_llm_evaluator: prompt templates, forced tool calls, and answers that do not parse."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from evaltrace.evals.evaluable import UNSET, Evaluable, NamedData
from evaltrace.judges import configure_judge, create_llm_evaluator
from evaltrace.testing.fake_judge import FakeJudgeServer, RecordedRequest, serve_fake_judge

JUDGE_MODEL = "judge-model-1"
GRADES = {"A": 1.0, "B": 0.5, "C": 0.0}


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.fixture
def judge(judge_server: FakeJudgeServer) -> Iterator[FakeJudgeServer]:
    judge_server.reset()
    judge_server.reset_stats()
    with configure_judge(base_url=judge_server.base_url, api_key="test-key", model=JUDGE_MODEL):
        yield judge_server


def case(
    output: Any = "Paris",
    expected: Any = "Paris",
    question: Any = "Capital of France?",
    metadata: dict[str, Any] | None = None,
) -> Evaluable:
    return Evaluable(
        eval_input=[NamedData(name="question", value=question)],
        eval_output=[NamedData(name="answer", value=output)],
        expectation=expected,
        eval_metadata=metadata,
        description="capital question",
    )


def prompt_of(request: RecordedRequest) -> str:
    """The rendered prompt: the user message (the judge's instructions lead as a system one)."""
    messages = request.body.get("messages") or request.body.get("input") or []
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "user")


def chat_reply(message: dict[str, Any]) -> str:
    """A well-formed chat completion carrying ``message``, for scripting odd judge answers."""
    return json.dumps(
        {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": JUDGE_MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "refusal": None, **message},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
        }
    )


@pytest.mark.anyio
async def test_choice_scores_force_a_select_choice_call_with_an_enum(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", choice="B", reasons="Half right.")
    grader = create_llm_evaluator(
        "grader",
        "Question: {eval_input}\nAnswer: {eval_output}\nReference: {expected_output}",
        choice_scores=GRADES,
    )

    result = await grader(case(output="Lyon"))

    assert result.score == 0.5
    assert result.reasoning == "Half right."
    assert result.details == {"model": JUDGE_MODEL, "choice": "B", "rationale": "Half right."}
    assert result.evaluator == "grader"
    (request,) = judge.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == JUDGE_MODEL
    assert request.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "select_choice"},
    }
    parameters = request.body["tools"][0]["function"]["parameters"]
    assert parameters["properties"]["choice"]["enum"] == ["A", "B", "C"]
    assert parameters["required"] == ["reasons", "choice"]
    assert "Question: Capital of France?\nAnswer: Lyon\nReference: Paris" in prompt_of(request)


@pytest.mark.anyio
async def test_without_choices_the_judge_submits_a_score(judge: FakeJudgeServer) -> None:
    judge.add_rule("", json={"reasons": "Mostly right.", "score": 0.75})
    scorer = create_llm_evaluator("scorer", "Rate: {eval_output}", use_reasoning=True)

    result = await scorer(case())

    assert result.score == 0.75
    assert result.reasoning == "Mostly right."
    body = judge.requests[-1].body
    assert body["tool_choice"]["function"]["name"] == "submit_score"
    score_schema = body["tools"][0]["function"]["parameters"]["properties"]["score"]
    assert score_schema == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "The score, from 0 (worst) to 1 (best).",
    }


@pytest.mark.anyio
async def test_without_reasoning_the_tool_has_no_reasons_field(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="A")
    grader = create_llm_evaluator(
        "terse", "Grade {eval_output}", choice_scores=GRADES, use_reasoning=False
    )

    result = await grader(case())

    assert result.score == 1.0
    parameters = judge.requests[-1].body["tools"][0]["function"]["parameters"]
    assert list(parameters["properties"]) == ["choice"]


@pytest.mark.anyio
async def test_a_gpt5_model_goes_through_the_responses_api(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="C", reasons="Wrong city.")
    grader = create_llm_evaluator(
        "grader", "Answer: {eval_output}", model="gpt-5-mini", choice_scores=GRADES
    )

    result = await grader(case(output="Lyon"))

    assert result.score == 0.0
    assert result.reasoning == "Wrong city."
    (request,) = judge.requests
    assert request.path == "/v1/responses"
    assert request.body["model"] == "gpt-5-mini"
    assert request.body["tool_choice"] == {"type": "function", "name": "select_choice"}
    assert request.body["tools"][0]["parameters"]["properties"]["choice"]["enum"] == list(GRADES)
    assert "Answer: Lyon" in prompt_of(request)


@pytest.mark.anyio
async def test_literal_braces_in_template_and_data_are_left_alone(judge: FakeJudgeServer) -> None:
    judge.add_rule("", json={"reasons": "ok", "score": 1})
    template = (
        'Reply like {"verdict": "yes"}. Code: def f(): return {x}\n'
        "Output: {eval_output}\nNotes: {eval_metadata[notes]}\nAbout: {description}"
    )
    scorer = create_llm_evaluator("braces", template)
    data = case(output="{eval_input} {0} {expected_output}", metadata={"notes": {"k": "{v}"}})

    result = await scorer(data)

    assert result.score == 1.0
    assert prompt_of(judge.requests[-1]).startswith(
        'Reply like {"verdict": "yes"}. Code: def f(): return {x}\n'
        "Output: {eval_input} {0} {expected_output}\n"
        'Notes: {"k": "{v}"}\n'
        "About: capital question"
    )


def test_render_fills_named_items() -> None:
    judge = create_llm_evaluator("named", "{eval_input[question]} -> {eval_output[answer]}")

    assert judge.render(case()) == "Capital of France? -> Paris"


def test_an_unknown_placeholder_is_rejected_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match=r"\{eval_outptu\}; did you mean \{eval_output\}"):
        create_llm_evaluator("typo", "Answer: {eval_outptu}")


def test_a_key_on_a_placeholder_that_takes_none_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"takes no \[key\]"):
        create_llm_evaluator("keyed", "Expected: {expected_output[x]}")


def test_choice_scores_outside_zero_to_one_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"choice_scores\['A'\] = 2"):
        create_llm_evaluator("bad", "{eval_output}", choice_scores={"A": 2, "B": 0})


@pytest.mark.anyio
async def test_missing_template_data_skips_the_evaluation(judge: FakeJudgeServer) -> None:
    grader = create_llm_evaluator("needs", "{eval_metadata[rubric]} {expected_output}")

    no_metadata = await grader(case(metadata={"other": 1}))
    no_expectation = await grader(case(expected=UNSET, metadata={"rubric": "r"}))

    assert no_metadata.status == "skipped"
    assert "'rubric'" in no_metadata.reasoning and "'other'" in no_metadata.reasoning
    assert no_expectation.status == "skipped"
    assert "expectation" in no_expectation.reasoning
    assert judge.requests == []


# -- answers that do not parse ---------------------------------------------------------------


def assert_unparseable(result: Any, *fragments: str) -> None:
    assert result.status == "errored"
    assert result.score is None
    assert result.error.type == "UnparseableJudgeAnswerError"
    assert result.error.where == "judge"
    for fragment in fragments:
        assert fragment in result.error.message


@pytest.mark.anyio
async def test_a_choice_outside_the_enum_is_errored(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="Z")

    result = await create_llm_evaluator("g", "{eval_output}", choice_scores=GRADES)(case())

    assert_unparseable(result, "'Z'", "'A', 'B', 'C'")


@pytest.mark.anyio
async def test_a_score_out_of_range_is_errored(judge: FakeJudgeServer) -> None:
    judge.add_rule("", json={"reasons": "very good", "score": 7})

    result = await create_llm_evaluator("s", "{eval_output}")(case())

    assert_unparseable(result, "score 7", '"reasons": "very good"')


@pytest.mark.anyio
async def test_an_answer_without_the_tool_call_is_errored(judge: FakeJudgeServer) -> None:
    judge.malformed_next(body=chat_reply({"content": "I think it is B."}))

    result = await create_llm_evaluator("g", "{eval_output}", choice_scores=GRADES)(case())

    assert_unparseable(result, "did not call the 'select_choice' tool", "I think it is B.")


@pytest.mark.anyio
async def test_tool_arguments_that_are_not_json_are_errored(judge: FakeJudgeServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "submit_score", "arguments": "{"}}
    judge.malformed_next(body=chat_reply({"content": None, "tool_calls": [call]}))

    result = await create_llm_evaluator("s", "{eval_output}")(case())

    assert_unparseable(result, "not valid JSON", "'{'")


# -- clients ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_client_given_to_the_evaluator_is_used(judge_server: FakeJudgeServer) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    judge_server.add_rule("", choice="A")
    sync_client = openai.OpenAI(base_url=judge_server.base_url, api_key="own-key", max_retries=0)
    grader = create_llm_evaluator(
        "own", "{eval_output}", client=sync_client, model="own-model", choice_scores=GRADES
    )

    result = await grader(case())

    assert result.score == 1.0
    (request,) = judge_server.requests
    assert request.body["model"] == "own-model"
    assert request.headers["authorization"] == "Bearer own-key"


@pytest.mark.anyio
async def test_an_async_client_given_to_the_evaluator_is_awaited(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.reset()
    judge_server.reset_stats()
    judge_server.add_rule("", json={"reasons": "fine", "score": 0.25})
    async_client = openai.AsyncOpenAI(base_url=judge_server.base_url, api_key="k", max_retries=0)

    result = await create_llm_evaluator("own", "{eval_output}", client=async_client)(case())

    assert result.score == 0.25
    assert len(judge_server.requests) == 1


@pytest.mark.anyio
async def test_an_unconfigured_judge_is_errored(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVALTRACE_JUDGE_BASE_URL", "EVALTRACE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    result = await create_llm_evaluator("g", "{eval_output}")(case())

    assert result.status == "errored"
    assert result.error is not None
    assert result.error.type == "JudgeNotConfiguredError"
    assert "configure_judge(" in result.error.message
