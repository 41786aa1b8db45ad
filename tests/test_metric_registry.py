"""One registry of metrics, shared by the per-entry evaluators and pipeline evaluation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evaltrace.evals import Evaluable, NamedData
from evaltrace.metrics import (
    Comparison,
    DocumentMRR,
    DocumentRecall,
    Metric,
    PairMetric,
    Scoring,
    metric_names,
    register_metric,
    registered_metric,
)
from evaltrace.pipeline import EvaluationResult, MetricsResult
from evaltrace.results.model import EntryResult, RunResult


def saved(*pairs: tuple[Any, Any]) -> EvaluationResult:
    """A pipeline evaluation whose final outputs and expected outputs are ``pairs``."""
    entries = [
        EntryResult(index=index, name=str(index), output=output, expectation=expected)
        for index, (output, expected) in enumerate(pairs)
    ]
    return EvaluationResult(RunResult(name="app", entries=entries))


@pytest.fixture
def restore_mrr() -> Iterator[None]:
    original = registered_metric(Metric.MRR)
    yield
    register_metric(Metric.MRR, original, replace=True)


def test_every_built_in_metric_is_registered_under_its_name() -> None:
    assert set(Metric) <= set(metric_names())
    assert all(isinstance(registered_metric(metric), PairMetric) for metric in Metric)


def test_a_per_pair_function_registered_with_compares_is_computed_by_name() -> None:
    @register_metric("test_first_word", compares="answers", replace=True)
    def first_word(answer: str, references: list[str], *, case: bool = True) -> float:
        if not case:
            answer, references = answer.lower(), [ref.lower() for ref in references]
        return float(any(answer.split()[:1] == ref.split()[:1] for ref in references))

    result = saved(("Paris, France", "paris"), ("Lyon", ["Lyon", "Lille"]))

    assert first_word("a b", ["a"]) == 1.0  # the decorator returns the function itself
    assert result.calculate_metrics("test_first_word").per_input == [0.0, 1.0]
    folded = result.calculate_metrics("test_first_word", case=False)
    assert folded.per_input == [0.0, 1.0]  # "paris," keeps its comma
    assert folded.parameters == {"case": False}


def test_a_registered_pair_metric_gets_its_values_checked_for_shape() -> None:
    register_metric("test_length", lambda answer, references: 1.0, compares="answers", replace=True)

    with pytest.raises(ValueError, match=r"input #0 \(the pipeline\): the output: expected text"):
        saved((["not", "text"], "x")).calculate_metrics("test_length")


def test_a_pair_metric_may_score_all_comparisons_at_once() -> None:
    batches: list[int] = []

    def build() -> Scoring:
        def score(comparisons: list[Comparison]) -> list[float]:
            batches.append(len(comparisons))
            return [float(c.output in c.expected) for c in comparisons]

        return Scoring(score=score)

    register_metric("test_batch", PairMetric(compares="answers", build=build), replace=True)

    scores = saved(("a", "a"), ("b", None), ("c", "x")).calculate_metrics("test_batch")

    assert scores.per_input == [1.0, None, 0.0]
    assert batches == [2]  # one call for the two inputs that can be scored


def test_an_option_a_pair_function_does_not_take_is_refused_before_scoring() -> None:
    register_metric(
        "test_exact", lambda a, refs: float(a in refs), compares="answers", replace=True
    )
    blind = saved(("a", None))  # nothing to score: the option is still checked

    with pytest.raises(TypeError, match="unexpected keyword argument 'strict'"):
        blind.calculate_metrics("test_exact", strict=True)


def test_a_whole_evaluation_metric_can_be_registered_with_the_decorator() -> None:
    @register_metric("test_count", replace=True)
    def count(result: EvaluationResult, **options: Any) -> MetricsResult:
        return MetricsResult.from_scores("count", [1.0 for _ in result.entries])

    assert saved(("a", "a"), ("b", "b")).calculate_metrics("test_count").score == 1.0


def test_a_name_is_not_taken_twice_without_replace() -> None:
    with pytest.raises(ValueError, match="'mrr' is already registered; pass replace=True"):
        register_metric(Metric.MRR, lambda result: None)


@pytest.mark.parametrize(
    ("metric", "options", "error", "message"),
    [
        (lambda a, b: 1.0, {"compares": "tables"}, ValueError, "compares must be"),
        ("not callable", {}, TypeError, "must be callable"),
        (
            PairMetric(compares="answers", build=Scoring),
            {"compares": "answers"},
            TypeError,
            "leave out compares=",
        ),
    ],
)
def test_a_metric_that_cannot_work_is_refused_when_registered(
    metric: Any, options: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        register_metric("test_refused", metric, replace=True, **options)


@pytest.mark.anyio
async def test_the_evaluator_and_the_pipeline_score_a_pair_alike() -> None:
    retrieved, relevant = [{"id": "x"}, {"id": "a"}], [{"id": "a"}]
    evaluable = Evaluable(
        eval_output=[NamedData(name="retrieved_documents", value=retrieved)], expectation=relevant
    )

    by_evaluator = await DocumentMRR(key="id")(evaluable)
    by_pipeline = saved((retrieved, relevant)).calculate_metrics(Metric.MRR, key="id")

    assert by_evaluator.score == by_pipeline.score == 0.5


def test_a_bad_option_gives_the_same_error_to_the_evaluator_and_the_pipeline() -> None:
    with pytest.raises(ValueError) as by_evaluator:
        DocumentRecall(mode="some_hits")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as by_pipeline:
        saved((["a"], ["a"])).calculate_metrics(Metric.RECALL, mode="some_hits")

    assert str(by_evaluator.value) == str(by_pipeline.value)
    assert "use 'single_hit' or 'multi_hit'" in str(by_evaluator.value)


@pytest.mark.anyio
async def test_replacing_a_built_in_name_leaves_the_evaluators_meaning_alone(
    restore_mrr: None,
) -> None:
    register_metric(Metric.MRR, lambda got, want: 0.0, compares="documents", replace=True)
    evaluable = Evaluable(
        eval_output=[NamedData(name="retrieved_documents", value=["a"])], expectation=["a"]
    )

    assert saved((["a"], ["a"])).calculate_metrics(Metric.MRR).score == 0.0
    assert (await DocumentMRR()(evaluable)).score == 1.0
