"""The 21 autoevals factories and AutoevalsAdapter, against the loopback judge server."""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Iterator
from typing import Any

import autoevals
import numpy
import pydantic
import pytest

from evaltrace.evals.evaluable import UNSET, Evaluable, NamedData
from evaltrace.evals.evaluator import evaluate
from evaltrace.judges import (
    AnswerCorrectness,
    AnswerRelevancy,
    AutoevalsAdapter,
    Battle,
    ClosedQA,
    ContextRelevancy,
    EmbeddingSimilarity,
    ExactMatch,
    Factuality,
    Faithfulness,
    Humor,
    JSONDiff,
    LevenshteinMatch,
    ListContains,
    Moderation,
    NumericDiff,
    Possible,
    Repeated,
    Security,
    Sql,
    Summary,
    Translation,
    ValidJSON,
    configure_judge,
)
from evaltrace.judges.scorers import AdapterOptions
from evaltrace.testing.fake_judge import FakeJudgeServer, RecordedRequest, serve_fake_judge

JUDGE_MODEL = "judge-model-1"
EMBEDDING_MODEL = "judge-embedding-1"


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.fixture
def judge(judge_server: FakeJudgeServer) -> Iterator[FakeJudgeServer]:
    judge_server.reset()
    judge_server.reset_stats()
    with configure_judge(
        base_url=judge_server.base_url,
        api_key="test-key",
        model=JUDGE_MODEL,
        embedding_model=EMBEDDING_MODEL,
    ):
        yield judge_server


def case(
    output: Any,
    expected: Any = UNSET,
    question: Any = None,
    metadata: dict[str, Any] | None = None,
) -> Evaluable:
    return Evaluable(
        eval_input=[] if question is None else [NamedData(name="question", value=question)],
        eval_output=[NamedData(name="answer", value=output)],
        expectation=expected,
        eval_metadata=metadata,
    )


def prompt_of(request: RecordedRequest) -> str:
    messages = request.body.get("messages") or request.body.get("input") or []
    return "\n".join(str(message["content"]) for message in messages)


def only(requests: list[RecordedRequest], path: str) -> list[RecordedRequest]:
    return [request for request in requests if request.path == path]


# -- pure scorers ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_levenshtein_match_scores_edit_similarity() -> None:
    result = await LevenshteinMatch()(case("kitten", "sitting"))

    assert result.score == pytest.approx(1 - 3 / 7)
    assert result.evaluator == "LevenshteinMatch"


@pytest.mark.anyio
async def test_levenshtein_match_compares_structured_values_as_json_text() -> None:
    result = await LevenshteinMatch()(case({"city": "Paris"}, '{"city": "Paris"}'))

    assert result.score == 1.0


@pytest.mark.anyio
async def test_exact_match_compares_objects_as_json() -> None:
    assert (await ExactMatch()(case({"a": 1, "b": [2]}, '{"a": 1, "b": [2]}'))).score == 1.0
    assert (await ExactMatch()(case("Paris", "paris"))).score == 0.0


@pytest.mark.anyio
async def test_numeric_diff_scores_relative_difference() -> None:
    result = await NumericDiff()(case(105, 100))

    assert result.score == pytest.approx(1 - 5 / 205)


@pytest.mark.anyio
async def test_json_diff_scores_structural_similarity() -> None:
    same = await JSONDiff()(case({"name": "Ann", "age": 30}, '{"name": "Ann", "age": 30}'))
    half = await JSONDiff()(case({"name": "Ann", "age": 30}, {"name": "Ann", "age": 0}))

    assert same.score == 1.0
    assert half.score == pytest.approx(0.5)


@pytest.mark.anyio
async def test_valid_json_passes_the_schema_to_autoevals_as_expected() -> None:
    schema = {"type": "object", "required": ["answer"]}
    evaluator = ValidJSON(schema=schema)

    assert (await evaluator(case('{"answer": 42}'))).score == 1.0
    assert (await evaluator(case('{"other": 42}'))).score == 0.0
    assert (await evaluator(case("not json"))).score == 0.0


@pytest.mark.anyio
async def test_valid_json_reads_the_schema_from_eval_metadata_not_the_expectation() -> None:
    evaluable = case(
        '{"other": 1}',
        expected={"type": "array"},
        metadata={"schema": {"type": "object", "required": ["answer"]}},
    )

    result = await ValidJSON()(evaluable)

    assert result.score == 0.0
    assert (await ValidJSON()(case('{"other": 1}', expected={"type": "array"}))).score == 1.0


@pytest.mark.anyio
async def test_list_contains_pairs_items() -> None:
    result = await ListContains()(case(["apple", "pear"], ["pear", "apple"]))

    assert result.score == 1.0
    assert isinstance(result.score, float)
    assert result.details["pairs"] == [["apple", "apple", 1.0], ["pear", "pear", 1.0]]


@pytest.mark.anyio
async def test_list_contains_without_scipy_is_errored_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)

    result = await ListContains()(case(["a", "b"], ["a", "c"]))

    assert result.status == "errored"
    assert result.error is not None
    assert result.error.type == "MissingExtraError"
    assert "pip install 'evaltrace[scipy]'" in result.error.message


class _NumpyScorer(autoevals.Scorer):
    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> autoevals.Score:
        return autoevals.Score(
            name="numpy",
            score=numpy.float64(0.25),
            metadata={"vector": numpy.array([1.0, 2.0]), "pair": ("a", numpy.int64(3))},
        )


@pytest.mark.anyio
async def test_numpy_scores_and_metadata_become_plain_python() -> None:
    result = await AutoevalsAdapter(_NumpyScorer())(case("x"))

    assert result.score == 0.25
    assert type(result.score) is float
    assert result.details == {"vector": [1.0, 2.0], "pair": ["a", 3]}
    json.dumps(result.details)


class _SkippingScorer(autoevals.Scorer):
    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> autoevals.Score:
        return autoevals.Score(name="skipper", score=None, metadata={"rationale": "no verdict"})


@pytest.mark.anyio
async def test_a_none_score_is_a_skipped_evaluation_with_the_scorers_reason() -> None:
    result = await AutoevalsAdapter(_SkippingScorer(), name="skipper")(case("x"))

    assert result.status == "skipped"
    assert result.score is None
    assert "no verdict" in result.reasoning


class _FailingScorer(autoevals.Scorer):
    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> autoevals.Score:
        raise RuntimeError("scorer exploded")


@pytest.mark.anyio
async def test_a_scorer_exception_is_an_errored_evaluation() -> None:
    result = await AutoevalsAdapter(_FailingScorer(), name="failing")(case("x"))

    assert result.status == "errored"
    assert result.error is not None
    assert result.error.type == "RuntimeError"
    assert result.error.message == "scorer exploded"
    assert result.evaluator == "failing"


@pytest.mark.anyio
async def test_a_missing_expectation_skips_a_comparison_scorer() -> None:
    result = await LevenshteinMatch()(case("Paris"))

    assert result.status == "skipped"
    assert "expectation" in result.reasoning


@pytest.mark.anyio
async def test_an_entrys_own_expectation_wins_over_a_fixed_expected() -> None:
    evaluator = AutoevalsAdapter(autoevals.ExactMatch, expected="fixed")

    own = await evaluator(case("own", "own"))
    fallback = await evaluator(case("fixed"))

    assert own.score == 1.0, own.reasoning
    assert fallback.score == 1.0, fallback.reasoning


@pytest.mark.anyio
async def test_an_entrys_expected_key_in_eval_metadata_wins_over_a_fixed_expected() -> None:
    evaluator = ExactMatch(expected="fixed", expected_key="gold")

    own = await evaluator(case("Rome", metadata={"gold": "Rome"}))
    fallback = await evaluator(case("fixed", metadata={}))

    assert own.score == 1.0, own.reasoning
    assert fallback.score == 1.0, fallback.reasoning


@pytest.mark.anyio
async def test_exact_match_with_a_fixed_pydantic_model_scores_an_output_equal_to_its_dump() -> None:
    class Booking(pydantic.BaseModel):
        city: str
        nights: int

    evaluator = ExactMatch(expected=Booking(city="Rome", nights=2))

    same = await evaluator(case({"city": "Rome", "nights": 2}))
    other = await evaluator(case({"city": "Rome", "nights": 3}))

    assert same.score == 1.0, same.reasoning
    assert other.score == 0.0, other.reasoning


@pytest.mark.anyio
async def test_keys_select_named_outputs_inputs_and_metadata() -> None:
    evaluable = Evaluable(
        eval_input=[NamedData(name="q", value="ignored"), NamedData(name="city", value="Rome")],
        eval_output=[NamedData(name="answer", value="Rome"), NamedData(name="log", value="...")],
        eval_metadata={"gold": "Rome"},
    )
    by_output = ExactMatch(output_key="answer", expected_key="gold")
    by_input = AutoevalsAdapter(
        autoevals.ExactMatch, output_key="answer", input_key="city", expected_key="gold"
    )

    assert (await by_output(evaluable)).score == 1.0
    assert (await by_input(evaluable)).score == 1.0
    missing = await ExactMatch(output_key="nope", expected_key="gold")(evaluable)
    assert missing.status == "skipped"
    assert "'nope'" in missing.reasoning and "'answer'" in missing.reasoning


def test_a_factory_rejects_an_unknown_keyword_listing_the_accepted_ones() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) 'critera'.*criteria"):
        ClosedQA(critera="typo")


FACTORIES = [
    LevenshteinMatch,
    ExactMatch,
    NumericDiff,
    JSONDiff,
    ValidJSON,
    ListContains,
    EmbeddingSimilarity,
    Factuality,
    ClosedQA,
    Battle,
    Humor,
    Security,
    Sql,
    Summary,
    Translation,
    Possible,
    Moderation,
    ContextRelevancy,
    Faithfulness,
    AnswerRelevancy,
    AnswerCorrectness,
]


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda factory: factory.__name__)
def test_a_factory_accepts_exactly_the_keywords_its_type_declares(factory: Any) -> None:
    (options_type,) = typing.get_args(typing.get_type_hints(factory)["options"])
    declared = options_type.__optional_keys__ - AdapterOptions.__optional_keys__

    assert "output_key" in options_type.__optional_keys__
    for keyword in declared:
        assert factory(**{keyword: 0.5}).name == factory.__name__
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        factory(not_a_keyword=1)


# -- LLM classifiers, through chat completions and the Responses API -------------------------

CLASSIFIERS: list[tuple[Any, dict[str, Any], Evaluable, str, float, list[str], list[str]]] = [
    (
        Factuality,
        {},
        case("Paris is the capital.", "The capital is Paris.", "Capital of France?"),
        "C",
        1.0,
        ["A", "B", "C", "D", "E"],
        ["Paris is the capital.", "The capital is Paris.", "Capital of France?"],
    ),
    (
        ClosedQA,
        {},
        case("Paris", question="Capital of France?", metadata={"criteria": "Names a city"}),
        "Y",
        1.0,
        ["Y", "N"],
        ["Paris", "Capital of France?", "Names a city"],
    ),
    (
        Battle,
        {},
        case("def f(): return 1", "def g(): pass", "Write a function returning one"),
        "No",
        0.0,
        ["Yes", "No"],
        ["def f(): return 1", "def g(): pass", "Write a function returning one"],
    ),
    (Humor, {}, case("Why did the chicken cross?"), "Unsure", 0.5, ["Yes", "No", "Unsure"], []),
    (Security, {}, case("rm -rf /"), "Yes", 0.0, ["Yes", "No", "Unsure"], ["rm -rf /"]),
    (
        Sql,
        {},
        case("SELECT 1", "SELECT 1 AS one", "One row"),
        "Correct",
        1.0,
        ["Correct", "Incorrect"],
        ["SELECT 1", "SELECT 1 AS one", "One row"],
    ),
    (
        Summary,
        {},
        case("Short.", "Brief.", "A long text to summarise."),
        "B",
        1.0,
        ["A", "B"],
        ["Short.", "Brief.", "A long text to summarise."],
    ),
    (
        Translation,
        {},
        case("Hello", "Hello", "Bonjour", metadata={"language": "French"}),
        "Y",
        1.0,
        ["Y", "N"],
        ["Hello", "Bonjour", "French"],
    ),
    (
        Possible,
        {},
        case("Use a queue.", question="Handle a million users"),
        "B",
        1.0,
        ["A", "B"],
        ["Use a queue.", "Handle a million users"],
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("factory", "options", "evaluable", "choice", "score", "choices", "snippets"),
    CLASSIFIERS,
    ids=[row[0].__name__ for row in CLASSIFIERS],
)
async def test_llm_classifier_scores_through_chat_completions(
    judge: FakeJudgeServer,
    factory: Any,
    options: dict[str, Any],
    evaluable: Evaluable,
    choice: str,
    score: float,
    choices: list[str],
    snippets: list[str],
) -> None:
    judge.add_rule("", choice=choice, reasons="Because the scripted judge says so.")

    result = await factory(**options)(evaluable)

    assert result.score == score
    assert result.reasoning == "Because the scripted judge says so."
    assert result.details["choice"] == choice
    (request,) = judge.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == JUDGE_MODEL
    assert request.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "select_choice"},
    }
    tool = request.body["tools"][0]["function"]
    assert tool["name"] == "select_choice"
    assert tool["parameters"]["properties"]["choice"]["enum"] == choices
    for snippet in snippets:
        assert snippet in prompt_of(request)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("factory", "options", "evaluable", "choice", "score", "choices", "snippets"),
    CLASSIFIERS,
    ids=[row[0].__name__ for row in CLASSIFIERS],
)
async def test_llm_classifier_with_a_gpt5_model_uses_the_responses_api(
    judge: FakeJudgeServer,
    factory: Any,
    options: dict[str, Any],
    evaluable: Evaluable,
    choice: str,
    score: float,
    choices: list[str],
    snippets: list[str],
) -> None:
    judge.add_rule("", choice=choice)

    with configure_judge(model="gpt-5-mini"):
        result = await factory(**options)(evaluable)

    assert result.score == score
    (request,) = judge.requests
    assert request.path == "/v1/responses"
    assert request.body["model"] == "gpt-5-mini"
    tool = request.body["tools"][0]
    assert tool["name"] == "select_choice"
    assert tool["parameters"]["properties"]["choice"]["enum"] == choices
    for snippet in snippets:
        assert snippet in prompt_of(request)


@pytest.mark.anyio
async def test_a_model_given_to_the_factory_overrides_the_configured_one(
    judge: FakeJudgeServer,
) -> None:
    await Factuality(model="gpt-5-nano")(case("a", "a"))

    assert judge.requests[-1].path == "/v1/responses"
    assert judge.requests[-1].body["model"] == "gpt-5-nano"


@pytest.mark.anyio
async def test_structured_data_reaches_the_judge_as_json_text(judge: FakeJudgeServer) -> None:
    await Factuality()(case({"city": "Paris", "note": "{braces}"}, ["Paris"], {"q": 1}))

    prompt = prompt_of(judge.requests[-1])
    assert '{"city": "Paris", "note": "{braces}"}' in prompt
    assert '["Paris"]' in prompt
    assert '{"q": 1}' in prompt


@pytest.mark.anyio
async def test_closed_qa_uses_the_expectation_as_criterion_when_metadata_has_none(
    judge: FakeJudgeServer,
) -> None:
    result = await ClosedQA()(case("Paris", "Must name the capital", "Capital of France?"))
    skipped = await ClosedQA()(case("Paris", question="Capital of France?"))

    assert result.status == "scored"
    assert "[Criterion]: Must name the capital" in prompt_of(judge.requests[-1])
    assert skipped.status == "skipped"
    assert "'criteria'" in skipped.reasoning
    assert len(judge.requests) == 1


@pytest.mark.anyio
async def test_a_choice_outside_the_classifier_choices_is_errored(judge: FakeJudgeServer) -> None:
    judge.add_rule("", choice="Z")

    result = await Factuality()(case("a", "b"))

    assert result.status == "errored"
    assert result.error is not None
    assert result.error.type == "UnparseableJudgeAnswerError"
    assert "'Z'" in result.error.message


# -- embeddings and moderation ---------------------------------------------------------------


@pytest.mark.anyio
async def test_embedding_similarity_uses_the_configured_embedding_model(
    judge: FakeJudgeServer,
) -> None:
    same = await EmbeddingSimilarity()(case("a violet heron waded", "a violet heron waded"))
    different = await EmbeddingSimilarity()(case("quantum flux capacitor", "banana bread recipe"))

    assert same.score == pytest.approx(1.0)
    assert different.score is not None and different.score < same.score
    embeddings = only(judge.requests, "/v1/embeddings")
    assert {request.body["model"] for request in embeddings} == {EMBEDDING_MODEL}
    assert {request.body["input"] for request in embeddings} >= {
        "quantum flux capacitor",
        "banana bread recipe",
    }


@pytest.mark.anyio
async def test_moderation_scores_flagged_output_zero(judge: FakeJudgeServer) -> None:
    flagged = await Moderation()(case("I will kill the process"))
    clean = await Moderation()(case("Have a nice day"))

    assert flagged.score == 0.0
    assert clean.score == 1.0
    assert flagged.details["category_scores"]["violence"] > 0.5
    requests = only(judge.requests, "/v1/moderations")
    assert [request.body["input"] for request in requests] == [
        "I will kill the process",
        "Have a nice day",
    ]


# -- RAGAS scorers ---------------------------------------------------------------------------

CONTEXT = ["Paris is the capital of France.", "It is known for the Eiffel Tower."]


@pytest.mark.anyio
async def test_context_relevancy_scores_the_relevant_share_of_the_context(
    judge: FakeJudgeServer,
) -> None:
    relevant = "Paris is the capital of France."
    judge.add_rule("", json={"sentences": [{"sentence": relevant, "reasons": []}]})

    result = await ContextRelevancy()(
        case("Paris", question="Capital of France?", metadata={"context": CONTEXT})
    )

    assert result.score == pytest.approx(len(relevant) / len("\n".join(CONTEXT)))
    (request,) = judge.requests
    assert request.body["model"] == JUDGE_MODEL
    assert request.body["tool_choice"]["function"]["name"] == "extract_sentences"
    assert "Capital of France?" in prompt_of(request)
    assert "\n".join(CONTEXT) in prompt_of(request)


@pytest.mark.anyio
async def test_faithfulness_scores_supported_statements(judge: FakeJudgeServer) -> None:
    verdicts = [
        {"statement": "Paris is the capital.", "verdict": 1, "reason": "stated"},
        {"statement": "Paris has ten million people.", "verdict": 0, "reason": "not stated"},
    ]
    judge.add_rule("judge the faithfulness", json={"faithfulness": verdicts})
    judge.add_rule("", json={"statements": [item["statement"] for item in verdicts]})

    result = await Faithfulness(extra_metadata_keys={"context": "documents"})(
        case(
            "Paris is the capital; it has ten million people.",
            question="Tell me about Paris",
            metadata={"documents": CONTEXT},
        )
    )

    assert result.score == 0.5
    assert result.details["faithfulness"] == verdicts
    names = [request.body["tool_choice"]["function"]["name"] for request in judge.requests]
    assert names == ["extract_statements", "judge_statements"]
    assert "Paris has ten million people." in prompt_of(judge.requests[1])


@pytest.mark.anyio
async def test_answer_relevancy_embeds_with_the_configured_embedding_model(
    judge: FakeJudgeServer,
) -> None:
    question = "Which river flows through Paris?"
    judge.add_rule("", json={"question": question, "noncommittal": 0})

    result = await AnswerRelevancy(strictness=2)(
        case("The Seine.", question=question, metadata={"context": CONTEXT})
    )

    assert result.score == pytest.approx(1.0)
    chats = only(judge.requests, "/v1/chat/completions")
    assert len(chats) == 2
    assert {request.body["model"] for request in chats} == {JUDGE_MODEL}
    embeddings = only(judge.requests, "/v1/embeddings")
    assert embeddings and {request.body["model"] for request in embeddings} == {EMBEDDING_MODEL}


@pytest.mark.anyio
async def test_answer_correctness_blends_statement_f1_and_similarity(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule(
        "", json={"TP": ["Rome is the capital"], "FP": ["It is in Spain"], "FN": ["On the Tiber"]}
    )
    answer = "Rome is the capital of Italy and sits in Spain."

    result = await AnswerCorrectness()(case(answer, answer, "Capital of Italy?"))

    f1 = 1 / (1 + 0.5 * 2)
    assert result.score == pytest.approx(0.75 * f1 + 0.25 * 1.0)
    (chat,) = only(judge.requests, "/v1/chat/completions")
    assert chat.body["tool_choice"]["function"]["name"] == "classify_statements"
    assert answer in prompt_of(chat)
    embeddings = only(judge.requests, "/v1/embeddings")
    assert embeddings and {request.body["model"] for request in embeddings} == {EMBEDDING_MODEL}


# -- server faults ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_error_is_an_errored_evaluation(judge: FakeJudgeServer) -> None:
    judge.fail_next(500)

    with configure_judge(max_retries=0):
        result = await Factuality()(case("a", "b"))

    assert result.status == "errored"
    assert result.error is not None
    assert result.error.type == "InternalServerError"
    assert result.error.where == "judge"


@pytest.mark.anyio
async def test_a_malformed_reply_is_an_errored_evaluation(judge: FakeJudgeServer) -> None:
    judge.malformed_next()

    result = await Factuality()(case("a", "b"))

    assert result.status == "errored"
    assert result.error is not None and result.error.where == "judge"


@pytest.mark.anyio
async def test_a_judge_hanging_past_the_evaluation_timeout_is_errored(
    judge: FakeJudgeServer,
) -> None:
    judge.hang_next(2.0)

    result = await evaluate(Factuality(), case("a", "b"), timeout=0.3)

    assert result.status == "errored"
    assert result.error is not None and result.error.type == "EvaluatorTimeoutError"


@pytest.mark.anyio
async def test_a_judge_hanging_past_the_client_timeout_is_errored(
    judge: FakeJudgeServer,
) -> None:
    judge.hang_next(2.0)

    with configure_judge(timeout=0.3, max_retries=0):
        result = await Factuality()(case("a", "b"))

    assert result.status == "errored"
    assert result.error is not None and result.error.type == "APITimeoutError"


@pytest.mark.anyio
async def test_a_rate_limit_once_is_retried_and_succeeds(judge: FakeJudgeServer) -> None:
    judge.rate_limit_once()
    judge.add_rule("", choice="C")

    result = await Factuality()(case("a", "a"))

    assert result.score == 1.0
    assert len(judge.requests) == 2


# -- repeated judging ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_repeated_factuality_aggregates_three_judge_calls(judge: FakeJudgeServer) -> None:
    judge.add_rule("Capital of France?", sequence=["A", "C", "D"])

    result = await Repeated(Factuality(), n=3, strategy="median")(
        case("Paris", "Paris", "Capital of France?")
    )

    assert result.score == 0.4  # sorted([0.4, 1.0, 0.0])[3 // 2]
    assert result.details["num_judges"] == 3
    assert sorted(run["score"] for run in result.details["runs"]) == [0.0, 0.4, 1.0]
    assert len(judge.requests) == 3


@pytest.mark.anyio
async def test_an_adapter_builds_a_custom_classifier_with_the_judges_client_and_model(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", choice="yes")
    tone = AutoevalsAdapter(
        autoevals.LLMClassifier,
        judge="completion",
        scorer_options={
            "name": "tone",
            "prompt_template": "Is this reply polite? {{output}}",
            "choice_scores": {"yes": 1.0, "no": 0.0},
        },
        as_text=True,
    )

    result = await tone(case({"reply": "Thank you!"}))

    assert result.score == 1.0
    assert result.evaluator == "LLMClassifier"
    (request,) = judge.requests
    assert request.body["model"] == JUDGE_MODEL
    assert 'Is this reply polite? {"reply": "Thank you!"}' in prompt_of(request)


@pytest.mark.anyio
async def test_a_scorer_instance_built_without_a_client_uses_the_judges_client(
    judge: FakeJudgeServer,
) -> None:
    judge.add_rule("", choice="C")
    scorer = autoevals.Factuality(model="instance-model")

    result = await AutoevalsAdapter(scorer, judge="completion", as_text=True)(case("a", "a"))

    assert result.score == 1.0
    assert judge.requests[-1].body["model"] == "instance-model"
