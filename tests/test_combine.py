"""Combining an entry's metrics: MetricsAggregator, WeightedMetricsAggregator, CombinedEvaluator."""

from __future__ import annotations

from typing import Any

import pytest

from evaltrace.evals.evaluable import Evaluable, NamedData
from evaltrace.evals.evaluation import Evaluation
from evaltrace.judges.combine import (
    AggregationResult,
    CombinedEvaluator,
    MetricResult,
    MetricsAggregator,
    WeightedMetricsAggregator,
    rubric_score_from_details,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def an_evaluable() -> Evaluable:
    return Evaluable(
        eval_input=[NamedData(name="question", value="capital of France?")],
        eval_output=[NamedData(name="answer", value="Paris")],
    )


def details_of(result: Evaluation) -> dict[str, Any]:
    assert isinstance(result.details, dict)
    return result.details


RUBRIC = {1: 0.0, 2: 0.5, 3: 1.0}


def weighted() -> WeightedMetricsAggregator:
    return WeightedMetricsAggregator(
        weights={"accuracy": 3, "style": 1},
        score_mapping={"accuracy": RUBRIC, "style": lambda level: level / 4},
    )


# --- MetricsAggregator -------------------------------------------------------------------------


def test_mean_with_lower_is_better_scores_inverted() -> None:
    # qualities: relevance 0.75; toxicity 1 - 0.25 = 0.75; brevity 0.0 -> mean 1.5 / 3 = 0.5
    result = MetricsAggregator().aggregate(
        {
            "relevance": MetricResult(0.75, True),
            "toxicity": MetricResult(0.25, True, higher_is_better=False),
            "brevity": MetricResult(0.0, True),
        }
    )
    assert result == AggregationResult(aggregate_success=True, aggregate_score=0.5)


def test_success_is_the_and_of_every_metric() -> None:
    result = MetricsAggregator().aggregate(
        {"relevance": MetricResult(1.0, True), "faithfulness": MetricResult(0.5, False)}
    )
    assert result == AggregationResult(aggregate_success=False, aggregate_score=0.75)


def test_no_metric_fails_with_score_zero() -> None:
    assert MetricsAggregator().aggregate({}) == AggregationResult(False, 0.0)


def test_compute_success_can_be_overridden() -> None:
    class AnyPasses(MetricsAggregator):
        def compute_success(self, named_results: Any) -> bool:
            return any(r.success for r in named_results.values())

    result = AnyPasses().aggregate({"a": MetricResult(0.25, False), "b": MetricResult(0.75, True)})
    assert result == AggregationResult(aggregate_success=True, aggregate_score=0.5)


def test_metric_result_rejects_scores_outside_the_unit_interval() -> None:
    with pytest.raises(ValueError, match="score must be a number in"):
        MetricResult(1.5, True)
    with pytest.raises(ValueError, match="rubric_score"):
        MetricResult(0.5, True, rubric_score=float("nan"))


# --- WeightedMetricsAggregator -----------------------------------------------------------------


def test_weighted_score_maps_rubric_levels_with_tables_and_functions() -> None:
    # accuracy: level 2 -> 0.5, weight 3; style: level 4 -> 4 / 4 = 1.0, weight 1
    # (3 * 0.5 + 1 * 1.0) / (3 + 1) = 2.5 / 4 = 0.625
    result = weighted().aggregate(
        {
            "accuracy": MetricResult(0.5, True, rubric_score=2),
            "style": MetricResult(1.0, False, rubric_score=4),
        }
    )
    assert result == AggregationResult(aggregate_success=False, aggregate_score=0.625)


def test_weighted_score_runs_over_the_metrics_present() -> None:
    result = weighted().aggregate({"accuracy": MetricResult(1.0, True, rubric_score=3)})
    assert result == AggregationResult(aggregate_success=True, aggregate_score=1.0)


def test_weighted_score_uses_the_rubric_level_not_the_score() -> None:
    # the normalised score says 0.9, but rubric level 1 maps to 0.0
    result = weighted().aggregate({"accuracy": MetricResult(0.9, True, rubric_score=1.0)})
    assert result.aggregate_score == 0.0


def test_weighted_with_zero_total_weight_scores_zero() -> None:
    aggregator = WeightedMetricsAggregator({"accuracy": 0}, {"accuracy": RUBRIC})
    result = aggregator.aggregate({"accuracy": MetricResult(1.0, True, rubric_score=3)})
    assert result == AggregationResult(aggregate_success=True, aggregate_score=0.0)


def test_weighted_with_no_metric_fails_with_score_zero() -> None:
    assert weighted().aggregate({}) == AggregationResult(False, 0.0)


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"tone": MetricResult(1.0, True, rubric_score=3)}, r"add weights\['tone'\]"),
        ({"accuracy": MetricResult(1.0, True)}, "'accuracy' has no rubric_score"),
        (
            {"accuracy": MetricResult(1.0, True, rubric_score=5)},
            r"rubric level 5, which score_mapping\['accuracy'\] does not list",
        ),
    ],
)
def test_weighted_errors_name_the_metric_and_the_fix(
    results: dict[str, MetricResult], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        weighted().compute_score(results)


def test_weighted_metric_without_mapping_is_an_error() -> None:
    aggregator = WeightedMetricsAggregator({"accuracy": 1, "tone": 1}, {"accuracy": RUBRIC})
    with pytest.raises(ValueError, match=r"add score_mapping\['tone'\]"):
        aggregator.compute_score({"tone": MetricResult(1.0, True, rubric_score=3)})


def test_weighted_mapping_must_give_a_number() -> None:
    aggregator = WeightedMetricsAggregator({"a": 1}, {"a": lambda level: float("inf")})
    with pytest.raises(ValueError, match="finite number"):
        aggregator.compute_score({"a": MetricResult(1.0, True, rubric_score=3)})


def test_weighted_configuration_is_validated() -> None:
    with pytest.raises(ValueError, match=r"weights\['a'\] must be a finite number >= 0"):
        WeightedMetricsAggregator({"a": -1}, {"a": RUBRIC})
    with pytest.raises(TypeError, match=r"score_mapping\['a'\]"):
        WeightedMetricsAggregator({"a": 1}, {"a": 0.5})  # type: ignore[dict-item]


# --- CombinedEvaluator -------------------------------------------------------------------------


async def relevance(evaluable: Evaluable) -> Evaluation:
    return Evaluation(score=0.5, reasoning="half relevant", details={"rubric_score": 2})


def toxicity(evaluable: Evaluable) -> float:
    return 0.0


@pytest.mark.anyio
async def test_combined_evaluator_end_to_end() -> None:
    # relevance quality 0.5, toxicity (lower is better) 1 - 0.0 = 1.0 -> mean 0.75;
    # both reach 0.5, so the AND gate holds
    combined = CombinedEvaluator(
        {"relevance": relevance, "toxicity": toxicity}, higher_is_better={"toxicity": False}
    )
    result = await combined(an_evaluable())
    details = details_of(result)
    assert result.score == 0.75
    assert result.evaluator == "combined"
    assert details["aggregate_success"] is True
    assert details["aggregate_score"] == 0.75
    assert details["metrics"]["relevance"] == {
        "status": "scored",
        "score": 0.5,
        "reasoning": "half relevant",
        "error": None,
        "success": True,
        "higher_is_better": True,
        "rubric_score": 2.0,
    }
    assert details["metrics"]["toxicity"]["higher_is_better"] is False
    assert result.reasoning.startswith("2 of 2 metrics passed at threshold 0.5 (all passed)")
    assert "toxicity 0 (lower is better) passed" in result.reasoning


@pytest.mark.anyio
async def test_combined_success_fails_when_one_metric_fails() -> None:
    combined = CombinedEvaluator({"relevance": relevance, "toxicity": toxicity}, threshold=0.6)
    result = await combined(an_evaluable())
    # relevance 0.5 < 0.6 fails; toxicity read as higher-is-better: 0.0 fails too
    assert details_of(result)["aggregate_success"] is False
    assert result.score == 0.25


@pytest.mark.anyio
async def test_combined_with_weighted_rubric_levels() -> None:
    async def accuracy(evaluable: Evaluable) -> Evaluation:
        return Evaluation(score=1.0, details={"rubric_score": 3})

    async def style(evaluable: Evaluable) -> Evaluation:
        return Evaluation(score=0.5, details={"rubric_score": 2})

    combined = CombinedEvaluator({"accuracy": accuracy, "style": style}, aggregator=weighted())
    result = await combined(an_evaluable())
    # (3 * 1.0 + 1 * 2 / 4) / 4 = 3.5 / 4 = 0.875
    assert result.score == 0.875


@pytest.mark.anyio
async def test_combined_clamps_the_score_but_keeps_the_raw_aggregate() -> None:
    aggregator = WeightedMetricsAggregator({"a": 1}, {"a": lambda level: level})
    combined = CombinedEvaluator(
        {"a": lambda e: 1.0}, aggregator=aggregator, rubric_from=lambda evaluation: 3
    )
    result = await combined(an_evaluable())
    assert result.score == 1.0
    assert details_of(result)["aggregate_score"] == 3.0


@pytest.mark.anyio
async def test_combined_is_errored_naming_the_metric_that_errored() -> None:
    def faithfulness(evaluable: Evaluable) -> float:
        raise ConnectionError("judge unreachable")

    combined = CombinedEvaluator({"relevance": relevance, "faithfulness": faithfulness})
    result = await combined(an_evaluable())
    assert result.error is not None
    assert result.error.type == "MetricErrored"
    assert result.error.message == (
        "metric 'faithfulness' errored ('faithfulness': ConnectionError: judge unreachable)"
    )
    assert details_of(result)["metrics"]["relevance"]["score"] == 0.5


@pytest.mark.anyio
async def test_combined_leaves_skipped_metrics_out() -> None:
    async def context_recall(evaluable: Evaluable) -> Evaluation:
        return Evaluation.skip("no retrieved context")

    combined = CombinedEvaluator({"relevance": relevance, "context_recall": context_recall})
    result = await combined(an_evaluable())
    assert result.score == 0.5
    assert details_of(result)["skipped"] == ["context_recall"]
    assert details_of(result)["aggregate_success"] is True


@pytest.mark.anyio
async def test_combined_with_every_metric_skipped_is_skipped() -> None:
    combined = CombinedEvaluator({"a": lambda e: Evaluation.skip("nothing to judge")})
    assert (await combined(an_evaluable())).status == "skipped"


@pytest.mark.anyio
async def test_combined_reports_an_aggregation_failure_as_an_error() -> None:
    combined = CombinedEvaluator({"accuracy": toxicity, "style": toxicity}, aggregator=weighted())
    result = await combined(an_evaluable())
    assert result.error is not None
    assert result.error.where == "aggregation"
    assert "has no rubric_score" in result.error.message


def test_combined_configuration_is_validated() -> None:
    with pytest.raises(ValueError, match="at least one evaluator"):
        CombinedEvaluator({})
    with pytest.raises(ValueError, match="not evaluated: \\['tone'\\]"):
        CombinedEvaluator({"relevance": relevance}, higher_is_better={"tone": False})
    with pytest.raises(ValueError, match=r"add weights\['relevance'\]"):
        CombinedEvaluator({"relevance": relevance}, aggregator=weighted())
    with pytest.raises(ValueError, match="threshold"):
        CombinedEvaluator({"relevance": relevance}, threshold=2)


def test_rubric_score_from_details() -> None:
    assert rubric_score_from_details(Evaluation(score=1.0, details={"rubric_score": 4})) == 4.0
    assert rubric_score_from_details(Evaluation(score=1.0)) is None
    with pytest.raises(ValueError, match="finite number"):
        rubric_score_from_details(Evaluation(score=1.0, details={"rubric_score": "high"}))
