"""The RAG pipeline: retrieval metrics from the retriever span, answer F1, Faithfulness.

Run twice, as users run it: as a dataset (``evaltrace test``) and through the Haystack-style
``evaluate_runnable``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltrace import RunResult, run_dataset
from evaltrace.pipeline import Metric
from evaltrace.results import CompletionStatus

from .rag_app import dataset_cases, evaluate_pipeline

DATASET = Path(__file__).with_name("rag_pipeline.evaltrace.yaml")


def scores(run: RunResult, evaluator: str) -> dict[str, float | None]:
    return {
        entry.name: evaluation.score
        for entry in run.entries
        for evaluation in entry.evaluations
        if evaluation.evaluator == evaluator
    }


@pytest.fixture(scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return await run_dataset(DATASET, output_dir=tmp_path_factory.mktemp("results"))


@pytest.mark.anyio
async def test_every_question_passes(run: RunResult) -> None:
    assert {entry.status for entry in run.entries} == {CompletionStatus.SUCCESS}


@pytest.mark.anyio
async def test_retrieval_metrics_come_from_the_retriever_span(run: RunResult) -> None:
    mrr = scores(run, "DocumentMRR")
    recall = scores(run, "DocumentRecall")

    assert mrr["home-office-days"] == 0.5  # the equipment section ranks first
    assert recall["business-class"] == 0.5  # the learning-budget section is not retrieved
    assert [mrr[name] for name in ("annual-leave", "sick-note")] == [1.0, 1.0]


@pytest.mark.anyio
async def test_faithfulness_finds_the_one_unsupported_statement(run: RunResult) -> None:
    [entry] = [entry for entry in run.entries if entry.name == "parental-leave"]
    [judged] = [e for e in entry.evaluations if e.evaluator == "faithful_to_retrieved"]

    assert judged.score == pytest.approx(2 / 3)
    assert isinstance(judged.details, dict)
    unsupported = [
        item["statement"] for item in judged.details["faithfulness"] if not item["verdict"]
    ]
    assert unsupported == ["Two additional unpaid weeks are available on request."]
    others = [
        score for name, score in scores(run, "faithful_to_retrieved").items() if name != entry.name
    ]
    assert others == [1.0] * 7


@pytest.mark.anyio
async def test_answer_f1_compares_the_answer_with_the_expectation(run: RunResult) -> None:
    f1 = scores(run, "AnswerF1")

    assert f1["annual-leave"] == pytest.approx(12 / 13)
    assert min(score or 0.0 for score in f1.values()) >= 0.5


@pytest.mark.anyio
async def test_evaluate_runnable_scores_the_pipeline_and_its_retriever() -> None:
    questions, expected = dataset_cases()

    result = await evaluate_pipeline(questions, expected)

    mrr = result.calculate_metrics(Metric.MRR, component="retrieve", key="id")
    recall = result.calculate_metrics(
        Metric.RECALL, component="retrieve", key="id", mode="multi_hit"
    )
    assert mrr.per_input[3] == 0.5 and mrr.score == pytest.approx(7.5 / 8)
    assert recall.per_input[7] == 0.5
    assert result.calculate_metrics(Metric.F1).score == pytest.approx(0.773, abs=1e-3)
    [retrieval] = result.run.entries[0].components["retrieve"]
    assert isinstance(retrieval.output, list)
    assert [doc["id"] for doc in retrieval.output if isinstance(doc, dict)] == [
        "hb-01",
        "hb-03",
        "hb-04",
    ]
