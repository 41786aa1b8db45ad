"""Repeated-judge strategies: their scores, their metadata, and the registry that builds them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from evaltrace.evals.evaluation import Evaluation
from evaltrace.judges import strategies as strategies_module
from evaltrace.judges.strategies import (
    AggregationMethod,
    AtLeastKAggregationStrategy,
    AverageAggregationStrategy,
    BaseJudgeAggregator,
    MajorityVoteAggregationStrategy,
    MaxAggregationStrategy,
    MedianAggregationStrategy,
    MinAggregationStrategy,
    NoValidJudgeResultsError,
    PassAtKAggregationStrategy,
    RepeatedDetails,
    aggregate_repeated_results,
    build_aggregation_strategy,
    register_aggregation_strategy,
)

SCORES = [0.2, 0.8, 0.6, 0.4]


@pytest.fixture
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(strategies_module, "_STRATEGIES", dict(strategies_module._STRATEGIES))
    yield


def scored(*scores: float) -> list[Evaluation]:
    return [Evaluation(score=s, reasoning=f"run {i} says {s}") for i, s in enumerate(scores)]


def failed(message: str = "judge exploded") -> Evaluation:
    return Evaluation.errored(RuntimeError(message), where="evaluator")


def details_of(result: Evaluation) -> dict[str, Any]:
    assert isinstance(result.details, dict)
    return result.details


# --- strategies on the scores [0.2, 0.8, 0.6, 0.4] ------------------------------------------


def test_average_is_the_mean_represented_by_the_earliest_closest_run() -> None:
    # mean = (0.2 + 0.8 + 0.6 + 0.4) / 4 = 2.0 / 4 = 0.5
    # distances: 0.3, 0.3, 0.1 (index 2), 0.1 (index 3) -> the tie goes to index 2
    result = AverageAggregationStrategy().aggregate(scored(*SCORES), 4)
    details = details_of(result)
    assert result.score == 0.5
    assert details["representative_index"] == 2
    assert result.reasoning == "run 2 says 0.6"
    assert details["method"] == "average"


def test_median_is_the_upper_median_a_judge_really_gave() -> None:
    # sorted [0.2, 0.4, 0.6, 0.8][4 // 2] = 0.6, given by run 2
    result = MedianAggregationStrategy().aggregate(scored(*SCORES), 4)
    assert result.score == 0.6
    assert details_of(result)["representative_index"] == 2
    assert details_of(result)["method"] == "median"
    assert "fallback_from" not in details_of(result)


def test_majority_vote_tie_falls_back_to_the_median_and_records_it() -> None:
    # four scores with one vote each: a tie, so the median 0.6 (run 2) is used
    result = MajorityVoteAggregationStrategy().aggregate(scored(*SCORES), 4)
    details = details_of(result)
    assert result.score == 0.6
    assert details["representative_index"] == 2
    assert details["method"] == "median"
    assert details["fallback_from"] == "majority_vote"
    assert details["fallback_reason"] == (
        "no single most frequent score: 0.2, 0.4, 0.6, 0.8 have 1 vote each"
    )


def test_majority_vote_with_a_clear_winner_picks_its_earliest_run() -> None:
    # 1.0 has two votes (runs 1 and 3), 0.5 and 0.0 one each
    result = MajorityVoteAggregationStrategy().aggregate(scored(0.5, 1.0, 0.0, 1.0), 4)
    details = details_of(result)
    assert result.score == 1.0
    assert details["representative_index"] == 1
    assert details["method"] == "majority_vote"
    assert "fallback_from" not in details
    assert details["agreement"] == 0.5  # discrete scores: 2 of 4 runs gave the modal score


def test_majority_vote_tie_between_the_most_frequent_uses_the_median_of_all_runs() -> None:
    # 1.0 and 0.0 both have two votes; sorted [0.0, 0.0, 0.5, 1.0, 1.0][2] = 0.5 (run 4)
    result = MajorityVoteAggregationStrategy().aggregate(scored(1.0, 0.0, 1.0, 0.0, 0.5), 5)
    details = details_of(result)
    assert result.score == 0.5
    assert details["representative_index"] == 4
    assert details["fallback_reason"] == (
        "no single most frequent score: 0.0, 1.0 have 2 votes each"
    )


def test_min_and_max_take_the_extreme_scores() -> None:
    lowest = MinAggregationStrategy().aggregate(scored(*SCORES), 4)
    highest = MaxAggregationStrategy().aggregate(scored(*SCORES), 4)
    assert (lowest.score, details_of(lowest)["representative_index"]) == (0.2, 0)
    assert (highest.score, details_of(highest)["representative_index"]) == (0.8, 1)
    assert details_of(lowest)["method"] == "min"
    assert details_of(highest)["method"] == "max"


def test_at_least_k_counts_runs_reaching_the_threshold() -> None:
    # passing at 0.5: 0.8 (run 1) and 0.6 (run 2) -> 2 passing runs; best run is run 1
    two = AtLeastKAggregationStrategy(k=2).aggregate(scored(*SCORES), 4)
    three = AtLeastKAggregationStrategy(k=3).aggregate(scored(*SCORES), 4)
    assert two.score == 1.0
    assert three.score == 0.0
    assert details_of(two)["representative_index"] == 1
    assert details_of(three)["representative_index"] == 1
    assert details_of(two)["num_passing"] == 2
    assert (details_of(two)["k"], details_of(two)["threshold"]) == (2, 0.5)


def test_at_least_k_threshold_is_inclusive() -> None:
    # at threshold 0.6: 0.8 and 0.6 pass
    assert AtLeastKAggregationStrategy(k=2, threshold=0.6).aggregate(scored(*SCORES), 4).score == 1


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # n = 4 valid, c = 2 passing: pass@2 = 1 - C(2, 2) / C(4, 2) = 1 - 1/6 = 5/6
    result = PassAtKAggregationStrategy(k=2).aggregate(scored(*SCORES), 4)
    details = details_of(result)
    assert result.score == 5 / 6
    assert (details["k"], details["k_used"], details["num_passing"]) == (2, 2, 2)
    assert details["representative_index"] == 1
    # pass@1 = c / n = 2 / 4
    assert PassAtKAggregationStrategy(k=1).aggregate(scored(*SCORES), 4).score == 0.5
    # pass@4 with any passing run = 1 - C(2, 4) / C(4, 4) = 1 - 0 / 1
    assert PassAtKAggregationStrategy(k=4).aggregate(scored(*SCORES), 4).score == 1.0


def test_pass_at_k_lowers_k_to_the_number_of_valid_runs() -> None:
    # runs 0 and 2 errored: n = 2 valid (0.8 passes, 0.4 fails), k = 3 -> k_used = 2
    # pass@2 = 1 - C(1, 2) / C(2, 2) = 1 - 0 = 1.0
    runs = [failed(), *scored(0.8), failed(), *scored(0.4)]
    result = PassAtKAggregationStrategy(k=3).aggregate(runs, 4)
    assert result.score == 1.0
    assert (details_of(result)["k"], details_of(result)["k_used"]) == (3, 2)


def test_metadata_of_an_aggregate() -> None:
    result = MedianAggregationStrategy().aggregate(scored(*SCORES), 4)
    details = details_of(result)
    # population variance = (0.3² + 0.3² + 0.1² + 0.1²) / 4 = 0.2 / 4 = 0.05
    assert details["std"] == pytest.approx(math.sqrt(0.05), abs=1e-15)
    # four distinct scores in four runs: continuous, so 1 - std / mean
    assert details["agreement"] == pytest.approx(1 - math.sqrt(0.05) / 0.5, abs=1e-15)
    assert details["num_judges"] == 4
    assert details["num_valid"] == 4
    assert details["judge_errors"] == []
    assert details["score_distribution"] == {"0.2": 1, "0.4": 1, "0.6": 1, "0.8": 1}
    assert details["runs"] == [
        {
            "index": i,
            "status": "scored",
            "score": s,
            "reasoning": f"run {i} says {s}",
            "error": None,
        }
        for i, s in enumerate(SCORES)
    ]
    assert RepeatedDetails.model_validate(details).representative_index == 2


def test_errored_runs_are_dropped_and_reported() -> None:
    # valid: 0.2 (run 1) and 0.8 (run 3); mean 0.5, both 0.3 away -> earliest, run 1
    runs = [failed("no answer"), *scored(0.2), failed("bad json"), *scored(0.8)]
    runs[1] = runs[1].model_copy(update={"reasoning": "low"})
    result = AverageAggregationStrategy().aggregate(runs, 4)
    details = details_of(result)
    assert result.score == 0.5
    assert details["representative_index"] == 1
    assert result.reasoning == "low"
    assert details["num_judges"] == 4
    assert details["num_valid"] == 2
    assert details["judge_errors"] == [
        {"index": 0, "type": "RuntimeError", "message": "no answer"},
        {"index": 2, "type": "RuntimeError", "message": "bad json"},
    ]
    assert details["runs"][0]["status"] == "errored"
    assert details["runs"][0]["error"]["message"] == "no answer"


def test_average_ties_are_decided_on_the_decimal_scores() -> None:
    # 0.1 and 0.7 are both exactly 0.3 from their mean 0.4; in binary floating point the
    # second looks closer, but the earliest run must win
    result = AverageAggregationStrategy().aggregate(scored(0.1, 0.7), 2)
    assert result.score == 0.4
    assert details_of(result)["representative_index"] == 0


@pytest.mark.parametrize(
    ("scores", "agreement"),
    [
        ((1.0, 1.0, 0.0), 2 / 3),  # a repeated score: the modal share
        ((1.0, 0.0), 0.5),  # pass/fail verdicts are discrete
        ((0.0, 0.0), 1.0),  # mean 0 with equal scores
        ((0.7,), 1.0),  # one run agrees with itself
        ((0.0, 0.1, 0.9), 0.0),  # std / mean > 1: clipped at 0
    ],
)
def test_agreement(scores: tuple[float, ...], agreement: float) -> None:
    result = AverageAggregationStrategy().aggregate(scored(*scores), len(scores))
    assert details_of(result)["agreement"] == agreement


def test_aggregate_repeated_results_separates_valid_runs() -> None:
    runs = [*scored(0.3), failed("timeout"), Evaluation.skip("no context"), *scored(0.9)]
    valid = aggregate_repeated_results(runs, 4)
    assert valid.valid_scores == [0.3, 0.9]
    assert valid.valid_indices == [0, 3]
    assert valid.valid_results == [runs[0], runs[3]]
    assert [str(e) for e in valid.judge_errors] == [
        "run 1: RuntimeError: timeout",
        "run 2: Skipped: no context",
    ]


def test_aggregate_repeated_results_rejects_no_results() -> None:
    with pytest.raises(ValueError, match="no judge results"):
        aggregate_repeated_results([], 3)


def test_aggregate_repeated_results_rejects_all_invalid() -> None:
    with pytest.raises(NoValidJudgeResultsError, match="run 1: RuntimeError: b") as caught:
        aggregate_repeated_results([failed("a"), failed("b")], 2)
    assert isinstance(caught.value, ValueError)
    assert [e.index for e in caught.value.judge_errors] == [0, 1]


def test_each_strategy_raises_when_no_run_is_valid() -> None:
    for strategy in (MedianAggregationStrategy(), PassAtKAggregationStrategy(k=1)):
        with pytest.raises(ValueError):
            strategy.aggregate([failed()], 1)


@pytest.mark.parametrize(
    ("strategy", "method"),
    [
        (AverageAggregationStrategy, AggregationMethod.AVERAGE),
        (MedianAggregationStrategy, AggregationMethod.MEDIAN),
        (MajorityVoteAggregationStrategy, AggregationMethod.MAJORITY_VOTE),
        (MinAggregationStrategy, AggregationMethod.MIN),
        (MaxAggregationStrategy, AggregationMethod.MAX),
        (AtLeastKAggregationStrategy, AggregationMethod.AT_LEAST_K),
        (PassAtKAggregationStrategy, AggregationMethod.PASS_AT_K),
    ],
)
def test_each_built_in_strategy_names_its_method_on_the_class(
    strategy: type[BaseJudgeAggregator], method: AggregationMethod
) -> None:
    assert strategy.strategy is method


def test_a_strategy_that_names_no_method_is_refused_where_it_is_defined() -> None:
    with pytest.raises(TypeError, match="Nameless aggregates but names no method"):

        class Nameless(BaseJudgeAggregator):
            def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
                return all_results[0]


# --- building strategies -----------------------------------------------------------------------


def test_aggregation_method_values_are_lower_case_names() -> None:
    assert [m.value for m in AggregationMethod] == [m.name.lower() for m in AggregationMethod]
    assert len(AggregationMethod) == 7


def test_build_from_enum_string_and_instance() -> None:
    assert isinstance(
        build_aggregation_strategy(AggregationMethod.AVERAGE), AverageAggregationStrategy
    )
    assert isinstance(build_aggregation_strategy(" Majority_Vote"), MajorityVoteAggregationStrategy)
    strategy = MinAggregationStrategy()
    assert build_aggregation_strategy(strategy) is strategy


def test_build_k_strategies_by_name_needs_k() -> None:
    built = build_aggregation_strategy("pass_at_k", k=2, threshold=0.7)
    assert isinstance(built, PassAtKAggregationStrategy)
    assert (built.k, built.threshold) == (2, 0.7)
    with pytest.raises(ValueError, match="'k'"):
        build_aggregation_strategy("at_least_k")
    with pytest.raises(ValueError, match="'median' with options"):
        build_aggregation_strategy("median", k=2)
    with pytest.raises(ValueError, match="instance"):
        build_aggregation_strategy(MedianAggregationStrategy(), k=2)


def test_build_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown aggregation method 'modal'") as caught:
        build_aggregation_strategy("modal")
    known = "at_least_k, average, majority_vote, max, mean, median, min, mode, pass_at_k"
    assert known in str(caught.value)


def test_build_rejects_wrong_types() -> None:
    with pytest.raises(TypeError, match="got int"):
        build_aggregation_strategy(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"MedianAggregationStrategy\(...\)"):
        build_aggregation_strategy(MedianAggregationStrategy)  # type: ignore[arg-type]


def test_k_and_threshold_are_validated() -> None:
    with pytest.raises(ValueError, match="k must be"):
        AtLeastKAggregationStrategy(k=0)
    with pytest.raises(ValueError, match="threshold must be"):
        PassAtKAggregationStrategy(k=1, threshold=1.5)


@pytest.mark.usefixtures("isolated_registry")
def test_custom_strategies_can_be_registered_by_name() -> None:
    @register_aggregation_strategy("second_opinion")
    class SecondOpinion(BaseJudgeAggregator):
        @property
        def strategy(self) -> str:
            return "second_opinion"

        def aggregate(self, all_results: list[Evaluation], total_judges: int) -> Evaluation:
            valid = aggregate_repeated_results(all_results, total_judges)
            return self.build_evaluation(
                all_results,
                total_judges,
                valid,
                score=valid.valid_scores[1],
                representative_position=1,
            )

    strategy = build_aggregation_strategy("Second_Opinion")
    assert isinstance(strategy, SecondOpinion)
    result = strategy.aggregate(scored(*SCORES), 4)
    assert (result.score, details_of(result)["method"]) == (0.8, "second_opinion")
    with pytest.raises(ValueError, match="already registered"):
        register_aggregation_strategy("second_opinion", SecondOpinion)
    register_aggregation_strategy("median", MaxAggregationStrategy, replace=True)
    assert isinstance(build_aggregation_strategy("median"), MaxAggregationStrategy)
