"""Per-entry metric evaluators: where documents and answers are read, and what they score."""

from __future__ import annotations

import inspect
import json
import math
import sys
from typing import Any

import openai
import pytest
from opentelemetry import trace as otel_trace

from evaltrace import wrap
from evaltrace.engine import run_and_evaluate, run_captured
from evaltrace.errors import ConfigurationError
from evaltrace.evals import Evaluable, NamedData, evaluate, last_llm_call, root
from evaltrace.evals.evaluable import HOW_TO_GIVE_AN_EXPECTATION
from evaltrace.llm.config import configure_judge, judge_config
from evaltrace.llm.embeddings import openai_embedder
from evaltrace.metrics import EmptyGroundTruthWarning, recall
from evaltrace.metrics.evaluators import (
    AnswerExactMatch,
    AnswerF1,
    DocumentMAP,
    DocumentMRR,
    DocumentNDCG,
    DocumentRecall,
    RetrievalDetails,
    SemanticAnswerSimilarity,
)
from evaltrace.testing.fake_judge import FakeJudgeServer
from evaltrace.trace import ObservationNode

pytestmark = pytest.mark.anyio


def case(**fields: Any) -> Evaluable:
    return Evaluable(**fields)


def relevant(*documents: Any) -> dict[str, Any]:
    return {"relevant_documents": list(documents)}


# retrieved documents: a named wrap value


async def test_document_recall_reads_the_retrieved_documents_wrap_value() -> None:
    def app(question: str) -> str:
        wrap(["a", "x", "b"], purpose="output", name="retrieved_documents")
        return "answer"

    evaluation = await run_and_evaluate(
        DocumentRecall(mode="multi_hit"),
        app,
        "q",
        evaluable=Evaluable(eval_metadata=relevant("a", "b", "c")),
    )

    # found {a, b} of {a, b, c}: 2 / 3
    assert evaluation.score == pytest.approx(2 / 3)
    details = RetrievalDetails.model_validate(evaluation.details)
    assert details.hits == ["a", "b"]
    assert details.hit_ranks == [1, 3]
    assert details.missed == ["c"]
    assert details.source == "output 'retrieved_documents'"
    assert details.mode == "multi_hit"


async def test_single_hit_recall_is_one_when_anything_relevant_was_retrieved() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["x", "c"])],
        eval_metadata=relevant("a", "b", "c"),
    )
    assert (await DocumentRecall(mode="single_hit")(evaluable)).score == 1.0


async def test_a_custom_output_name_is_read_with_retrieved_from() -> None:
    evaluable = case(
        eval_output=[
            NamedData(name="retrieved_documents", value=["x"]),
            NamedData(name="reranked", value=["x", "a"]),
        ],
        expectation=["a"],
    )
    # "a" first appears at rank 2: 1 / 2
    assert (await DocumentMRR(retrieved_from="reranked")(evaluable)).score == 0.5


# retrieved documents: retriever spans


def openinference_app(question: str) -> str:
    """An app whose retriever is traced by a third-party instrumentor (OpenInference style)."""
    attributes: dict[str, Any] = {"openinference.span.kind": "RETRIEVER"}
    for index, (doc_id, text) in enumerate(
        [("d3", "France borders Spain."), ("d1", "Paris is in France."), ("d2", "Berlin.")]
    ):
        prefix = f"retrieval.documents.{index}.document"
        attributes[f"{prefix}.id"] = doc_id
        attributes[f"{prefix}.content"] = text
        attributes[f"{prefix}.score"] = 1.0 - index / 10
        attributes[f"{prefix}.metadata"] = json.dumps({"url": f"https://example.org/{doc_id}"})
    tracer = otel_trace.get_tracer("tests.openinference")
    with tracer.start_as_current_span("vector_search", attributes=attributes):
        pass
    return "Paris"


async def test_openinference_retriever_span_attributes_give_the_documents() -> None:
    base = Evaluable(eval_metadata=relevant({"id": "d1"}))

    evaluation = await run_and_evaluate(
        DocumentMRR(key="id"), openinference_app, "q", evaluable=base
    )

    # d1 is at rank 2: 1 / 2
    assert evaluation.score == 0.5
    details = RetrievalDetails.model_validate(evaluation.details)
    assert details.source == "retriever span 'vector_search'"
    assert details.n_retrieved == 3


async def test_openinference_document_metadata_can_be_the_compared_key() -> None:
    gold = {"metadata": {"url": "https://example.org/d2"}}
    base = Evaluable(eval_metadata=relevant(gold))

    evaluation = await run_and_evaluate(
        DocumentMRR(key="metadata.url"), openinference_app, "q", evaluable=base
    )

    # d2 is at rank 3: 1 / 3
    assert evaluation.score == pytest.approx(1 / 3)
    assert evaluation.details["hits"] == ["https://example.org/d2"]


async def test_the_output_of_a_decorated_retriever_gives_the_documents() -> None:
    @wrap(kind="retriever")
    def search(query: str) -> list[str]:
        return ["a", "x", "b"]

    def app(question: str) -> str:
        search(question)
        return "answer"

    evaluation = await run_and_evaluate(
        DocumentMAP(), app, "q", evaluable=Evaluable(eval_metadata=relevant("a", "b"))
    )

    # hits at ranks 1 and 3: (1/1 + 2/3) / 2
    assert evaluation.score == pytest.approx((1 + 2 / 3) / 2)


async def test_the_retriever_span_that_ended_last_is_used() -> None:
    @wrap(kind="retriever")
    def first_pass(query: str) -> list[str]:
        return ["x", "y"]

    @wrap(kind="retriever")
    def second_pass(query: str) -> list[str]:
        return ["a", "y"]

    def app(question: str) -> str:
        first_pass(question)
        second_pass(question)
        return "answer"

    evaluation = await run_and_evaluate(
        DocumentMRR(), app, "q", evaluable=Evaluable(eval_metadata=relevant("a"))
    )

    assert evaluation.score == 1.0
    assert evaluation.details["source"] == "retriever span 'second_pass'"


async def test_retrieved_from_a_span_name_reads_that_span() -> None:
    @wrap(kind="retriever")
    def search(query: str) -> list[str]:
        return ["x", "a"]

    @wrap(kind="reranker")
    def rerank(documents: list[str]) -> list[str]:
        return ["a", "x"]

    def app(question: str) -> str:
        rerank(search(question))
        return "answer"

    base = Evaluable(eval_metadata=relevant("a"))
    before = await run_and_evaluate(DocumentMRR(), app, "q", evaluable=base)
    after = await run_and_evaluate(DocumentMRR(retrieved_from="rerank"), app, "q", evaluable=base)

    assert (before.score, after.score) == (0.5, 1.0)


async def test_a_selector_callable_picks_the_documents() -> None:
    def pick(evaluable: Evaluable, trace: list[ObservationNode] | None) -> Any:
        return evaluable.output_value("hits")

    evaluable = case(eval_output=[NamedData(name="hits", value=["x", "y", "a"])], expectation=["a"])
    # "a" at rank 3: 1 / 3
    assert (await DocumentMRR(retrieved_from=pick)(evaluable)).score == pytest.approx(1 / 3)


async def test_ndcg_counts_only_the_first_k_ranks() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["x", "a"])],
        expectation=["a"],
    )
    # DCG = 1 / log2(3) at rank 2; IDCG = 1 / log2(2) = 1
    assert (await DocumentNDCG()(evaluable)).score == pytest.approx(1 / math.log2(3))
    assert (await DocumentNDCG(k=1)(evaluable)).score == 0.0


# relevant documents


async def test_relevant_documents_in_eval_metadata_win_over_the_expectation() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["a", "b"])],
        expectation=["Paris", "paris, France"],  # acceptable answers, not documents
        eval_metadata=relevant("b"),
    )
    assert (await DocumentMRR()(evaluable)).score == 0.5


async def test_a_configured_relevant_key_is_read_from_eval_metadata() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["a", "b"])],
        eval_metadata={"gold": ["b"]},
    )
    assert (await DocumentMRR(relevant_key="gold")(evaluable)).score == 0.5


# missing and bad data


async def test_missing_relevant_documents_skip_the_evaluation() -> None:
    evaluable = case(eval_output=[NamedData(name="retrieved_documents", value=["a"])])

    evaluation = await evaluate(DocumentRecall(), evaluable)

    assert evaluation.status == "skipped"
    assert evaluation.score is None
    assert evaluation.reasoning == (
        "no relevant documents in the expectation or eval_metadata['relevant_documents']"
    )


async def test_missing_retrieved_documents_skip_the_evaluation() -> None:
    evaluable = case(eval_output=[NamedData(name="answer", value="Paris")], expectation=["a"])

    evaluation = await DocumentRecall()(evaluable, trace=None)

    assert evaluation.status == "skipped"
    assert "no retrieved documents" in evaluation.reasoning
    assert "retrieved_documents" in evaluation.reasoning


async def test_a_document_without_the_compared_key_matches_nothing_and_is_counted() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["plain text", {"id": "d1"}, {}])],
        expectation=[{"id": "d1"}, {"id": "d2"}, {"content": "no id"}],
    )

    evaluation = await DocumentRecall(mode="multi_hit", key="id")(evaluable)

    # the relevant set is {d1, d2} (the third has no id); d1 found: 1 / 2
    assert evaluation.status == "scored"
    assert evaluation.score == 0.5
    details = RetrievalDetails.model_validate(evaluation.details)
    assert (details.n_retrieved_without_key, details.n_relevant_without_key) == (2, 1)
    assert details.hit_ranks == [2]
    assert "2 retrieved and 1 relevant documents have no 'id'" in evaluation.reasoning


async def test_relevant_documents_that_all_lack_the_key_score_zero_and_say_why() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=[{"id": "d1"}])],
        expectation=["d1"],
    )

    with pytest.warns(EmptyGroundTruthWarning):
        evaluation = await DocumentMRR(key="id")(evaluable)

    assert evaluation.score == 0.0
    assert "none of the 1 relevant documents has 'id'" in evaluation.reasoning


async def test_document_recall_defaults_to_the_mode_of_the_recall_function() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["x", "c"])],
        eval_metadata=relevant("a", "b", "c"),
    )
    function_default = inspect.signature(recall).parameters["mode"].default

    evaluation = await DocumentRecall()(evaluable)

    assert DocumentRecall().mode == function_default == "single_hit"
    assert evaluation.score == recall(["x", "c"], ["a", "b", "c"]) == 1.0


@pytest.mark.parametrize("evaluator", [DocumentRecall, DocumentMRR, DocumentMAP, DocumentNDCG])
def test_an_unknown_key_is_refused_when_the_evaluator_is_built(evaluator: Any) -> None:
    with pytest.raises(ConfigurationError, match="invalid document key 'embedding'") as caught:
        evaluator(key="embedding")
    assert 'key="content", key="id"' in str(caught.value)


async def test_ndcg_grades_by_the_scores_of_the_relevant_documents() -> None:
    # Haystack's graded case: 0.6592
    evaluable = case(
        eval_output=[
            NamedData(name="retrieved_documents", value=["doc1", "doc2", "doc3", "doc4", "doc5"])
        ],
        eval_metadata=relevant(
            *(
                {"content": name, "score": score}
                for name, score in [
                    ("doc1", 3),
                    ("doc2", 2),
                    ("doc3", 3),
                    ("doc6", 2),
                    ("doc7", 3),
                    ("doc8", 2),
                ]
            )
        ),
    )

    evaluation = await DocumentNDCG()(evaluable)

    assert evaluation.score == pytest.approx(0.6592, abs=1e-4)
    assert RetrievalDetails.model_validate(evaluation.details).graded is True


async def test_relevant_documents_mixing_scored_and_unscored_are_an_error() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["a"])],
        expectation=[{"content": "a", "score": 2}, "b"],
    )

    evaluation = await DocumentNDCG()(evaluable)

    assert evaluation.status == "errored"
    assert evaluation.error is not None and evaluation.error.type == "DocumentScoreError"


async def test_retrieved_documents_that_are_not_a_list_are_an_error() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value="a")], expectation=["a"]
    )

    evaluation = await DocumentRecall()(evaluable)

    assert evaluation.status == "errored"
    assert evaluation.error is not None
    assert "expected a list of documents, found str 'a'" in evaluation.error.message


async def test_an_empty_relevant_list_scores_zero_with_a_warning() -> None:
    evaluable = case(
        eval_output=[NamedData(name="retrieved_documents", value=["a"])], expectation=[]
    )

    with pytest.warns(EmptyGroundTruthWarning):
        evaluation = await DocumentRecall()(evaluable)

    assert evaluation.score == 0.0
    assert "empty" in evaluation.reasoning


# answers


async def test_exact_match_normalizes_only_when_asked() -> None:
    evaluable = case(
        eval_output=[NamedData(name="answer", value="The Eiffel Tower!")],
        expectation="eiffel tower",
    )

    assert (await AnswerExactMatch()(evaluable)).score == 0.0
    assert (await AnswerExactMatch(normalize=True)(evaluable)).score == 1.0


async def test_answer_f1_is_the_squad_token_f1() -> None:
    evaluable = case(
        eval_output=[NamedData(name="answer", value="Paris is the capital")], expectation="Paris"
    )

    evaluation = await AnswerF1()(evaluable)

    # tokens {paris, is, capital} vs {paris}: P = 1/3, R = 1, F1 = 2PR / (P + R) = 0.5
    assert evaluation.score == 0.5
    assert evaluation.details["references"] == ["Paris"]


async def test_answer_f1_says_which_answer_it_compared_with_which() -> None:
    evaluable = case(
        eval_output=[NamedData(name="answer", value="Paris is the capital")], expectation="Paris"
    )

    evaluation = await AnswerF1()(evaluable)

    assert (
        evaluation.reasoning == "token F1 0.500: answer 'Paris is the capital' vs expected 'Paris'"
    )


async def test_a_long_answer_is_shortened_in_the_reasoning() -> None:
    long_answer = "Paris " * 40
    evaluable = case(eval_output=[NamedData(name="answer", value=long_answer)], expectation="x")

    reasoning = (await AnswerExactMatch()(evaluable)).reasoning

    assert reasoning.startswith("the answer does not match the expected answer: answer 'Paris")
    assert "…' vs expected 'x'" in reasoning
    assert len(reasoning) < 150


async def test_answer_f1_takes_the_best_of_several_acceptable_answers() -> None:
    evaluable = case(
        eval_output=[NamedData(name="answer", value="Paris")], expectation=["Lyon", "Paris"]
    )
    assert (await AnswerF1()(evaluable)).score == 1.0


async def test_the_answer_defaults_to_the_return_value_of_the_run() -> None:
    def app(question: str) -> str:
        wrap(["doc"], purpose="output", name="retrieved_documents")
        return "Paris"

    evaluation = await run_and_evaluate(AnswerExactMatch(), app, "q", expected_output="Paris")

    assert evaluation.score == 1.0


async def test_a_named_answer_output_is_read_with_answer_from() -> None:
    evaluable = case(
        eval_output=[
            NamedData(name="draft", value="Lyon"),
            NamedData(name="final", value="Paris"),
        ],
        expectation="Paris",
    )
    assert (await AnswerExactMatch(answer_from="final")(evaluable)).score == 1.0


async def test_a_missing_expected_answer_skips_the_evaluation() -> None:
    evaluable = case(eval_output=[NamedData(name="answer", value="Paris")])

    evaluation = await AnswerF1()(evaluable)

    assert evaluation.status == "skipped"
    assert evaluation.reasoning == (
        f"no expected answer: no expectation; {HOW_TO_GIVE_AN_EXPECTATION}"
    )


async def test_an_expectation_of_none_is_no_expected_answer_either() -> None:
    evaluable = case(eval_output=[NamedData(name="answer", value="Paris")], expectation=None)

    evaluation = await AnswerExactMatch()(evaluable)

    assert evaluation.status == "skipped"
    assert evaluation.reasoning == (
        f"no expected answer: the expectation is None; {HOW_TO_GIVE_AN_EXPECTATION}"
    )


async def test_an_expectation_that_is_not_text_is_an_error_naming_it() -> None:
    evaluable = case(eval_output=[NamedData(name="answer", value="Paris")], expectation={"a": 1})

    evaluation = await AnswerF1()(evaluable)

    assert evaluation.status == "errored"
    assert evaluation.error is not None
    assert evaluation.error.message == (
        "the expectation: expected the acceptable answers, a string or a list of strings, "
        'found dict {"a": 1}'
    )


async def test_an_answer_that_is_not_text_is_an_error() -> None:
    evaluable = case(
        eval_output=[NamedData(name="answer", value={"text": "Paris"})], expectation="x"
    )

    evaluation = await AnswerF1()(evaluable)

    assert evaluation.status == "errored"
    assert evaluation.error is not None
    assert "the answer (output 'answer'): expected text, found dict" in evaluation.error.message


# semantic answer similarity


def sas_case(answer: str, expected: str) -> Evaluable:
    return case(eval_output=[NamedData(name="answer", value=answer)], expectation=expected)


async def test_sas_scores_similar_answers_above_dissimilar_ones(
    fake_judge: FakeJudgeServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)
    sas = SemanticAnswerSimilarity(embed=openai_embedder(client, "text-embedding-3-small"))
    expected = "The capital of France is Paris"

    same = await sas(sas_case(expected, expected))
    similar = await sas(sas_case("Paris is the capital of France", expected))
    dissimilar = await sas(sas_case("Bananas grow on tropical plants", expected))

    assert same.score == pytest.approx(1.0)
    assert same.score is not None and similar.score is not None and dissimilar.score is not None
    assert similar.score > 0.7
    assert dissimilar.score < 0.3
    assert 0.0 <= dissimilar.score <= 1.0
    assert [r.path for r in fake_judge.requests] == ["/v1/embeddings"] * 3


async def test_sas_uses_the_configured_judge_by_default(fake_judge: FakeJudgeServer) -> None:
    with configure_judge(base_url=fake_judge.base_url, api_key="test", embedding_model="emb-1"):
        evaluation = await SemanticAnswerSimilarity()(sas_case("Paris", "Paris"))

    assert evaluation.score == pytest.approx(1.0)
    assert evaluation.details["model"] == "emb-1"
    assert fake_judge.requests[0].body["model"] == "emb-1"


async def test_sas_without_any_embedding_source_is_an_error_saying_how_to_configure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "EVALTRACE_JUDGE_BASE_URL",
        "EVALTRACE_JUDGE_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    assert not judge_config().is_configured

    evaluation = await SemanticAnswerSimilarity()(sas_case("Paris", "Paris"))

    assert evaluation.status == "errored"
    assert evaluation.error is not None and "configure_judge" in evaluation.error.message


async def test_sas_with_a_local_model_needs_the_embeddings_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails

    evaluation = await SemanticAnswerSimilarity(local_model="all-MiniLM-L6-v2")(
        sas_case("Paris", "Paris")
    )

    assert evaluation.status == "errored"
    assert evaluation.error is not None
    assert "pip install 'evaltrace[embeddings]'" in evaluation.error.message


async def test_sas_accepts_a_sync_embedder_and_clips_negative_similarity() -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if text == "yes" else [-1.0, 0.0] for text in texts]

    evaluation = await SemanticAnswerSimilarity(embed=embed)(sas_case("no", "yes"))

    assert evaluation.score == 0.0
    assert evaluation.details["similarity"] == -1.0


async def test_evaluate_passes_the_trace_to_a_document_evaluator() -> None:
    def app(question: str) -> str:
        wrap(["a"], purpose="output", name="retrieved_documents")
        return "answer"

    outcome = await run_captured(app, "q")
    evaluable = root(outcome.trace).model_copy(update={"expectation": ["a"]})

    evaluation = await evaluate(DocumentMRR(), evaluable, trace=outcome.trace)

    assert evaluation.score == 1.0
    assert evaluation.evaluator == "DocumentMRR"


async def test_documents_recorded_one_by_one_are_read_from_the_trace() -> None:
    @wrap(kind="llm")
    def generate(question: str) -> str:
        return "answer"

    def app(question: str) -> str:
        for document in ["x", "a"]:
            wrap(document, purpose="output", name="retrieved_documents", many=True)
        return generate(question)

    evaluation = await run_and_evaluate(
        DocumentMRR(),
        app,
        "q",
        from_trace=last_llm_call,  # an evaluable without the documents: they come from the trace
        evaluable=Evaluable(eval_metadata=relevant("a")),
    )

    assert evaluation.score == 0.5


async def test_documents_recorded_twice_without_many_are_an_error_not_the_last_value() -> None:
    def app(question: str) -> str:
        wrap(["x"], purpose="output", name="retrieved_documents")
        wrap(["a"], purpose="output", name="retrieved_documents")
        return "answer"

    outcome = await run_captured(app, "q")
    evaluable = Evaluable(eval_metadata=relevant("a"))  # the documents come from the trace

    evaluation = await DocumentMRR()(evaluable, trace=outcome.trace)

    assert evaluation.status == "errored"
    assert evaluation.error is not None and evaluation.error.type == "DuplicateWrapNameError"
    assert "many=True" in evaluation.error.message


async def test_a_named_answer_is_also_read_from_the_values_the_trace_recorded() -> None:
    @wrap(kind="llm")
    def generate(question: str) -> str:
        return "draft"

    def app(question: str) -> str:
        generate(question)
        wrap("Paris", purpose="output", name="final_answer")
        return "done"

    evaluation = await run_and_evaluate(
        AnswerExactMatch(answer_from="final_answer"),
        app,
        "q",
        expected_output="Paris",
        from_trace=last_llm_call,  # an evaluable without "final_answer": it comes from the trace
    )

    assert evaluation.score == 1.0


async def test_sas_with_no_acceptable_answers_scores_zero_with_a_warning() -> None:
    evaluable = case(eval_output=[NamedData(name="answer", value="Paris")], expectation=[])

    with pytest.warns(EmptyGroundTruthWarning):
        evaluation = await SemanticAnswerSimilarity(embed=lambda texts: [[1.0] for _ in texts])(
            evaluable
        )

    assert evaluation.score == 0.0
    assert evaluation.reasoning == "no acceptable answers to compare with, so the score is 0.0"
