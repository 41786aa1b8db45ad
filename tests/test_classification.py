"""Dataset-level classification aggregators on hand-worked examples.

Items are ``(expected, actual)`` pairs; the arithmetic of each expected number is in a comment.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from evaltrace.evals.evaluation import Evaluation
from evaltrace.metrics import (
    AGGREGATOR_SPEC_ADAPTER,
    AggregatorSpec,
    ClassificationDetails,
    ConfusionMatrixAggregatorSpec,
    FScoreAggregatorSpec,
    PrecisionAggregatorSpec,
    RecallAggregatorSpec,
    build_dataset_evaluator,
    compute_dataset_evaluator_results,
)

# 2 classes. yes: TP 3, FP 2, FN 1, TN 4; no: TP 4, FP 1, FN 2, TN 3.
TWO_CLASS = [("yes", "yes")] * 3 + [("yes", "no")] * 1 + [("no", "yes")] * 2 + [("no", "no")] * 4

# 3 classes. Predicted cat 7 times (4 right), dog 3 times (2 right), bird once (right).
# Support: cat 5, dog 4, bird 2.
THREE_CLASS = (
    [("cat", "cat")] * 4
    + [("cat", "dog")] * 1
    + [("dog", "dog")] * 2
    + [("dog", "cat")] * 2
    + [("bird", "bird")] * 1
    + [("bird", "cat")] * 1
)


def details_of(result: Evaluation) -> ClassificationDetails:
    assert isinstance(result.details, ClassificationDetails)
    return result.details


def run(spec: AggregatorSpec, items: list[Any]) -> Evaluation:
    return build_dataset_evaluator(spec, "clf").evaluate(items)


# the arithmetic


def test_two_class_per_class_counts() -> None:
    details = details_of(run(PrecisionAggregatorSpec(classes=["yes", "no"]), TWO_CLASS))
    yes, no = details.per_class["yes"], details.per_class["no"]
    assert (yes.tp, yes.fp, yes.fn, yes.tn, yes.support) == (3, 2, 1, 4, 4)
    assert (no.tp, no.fp, no.fn, no.tn, no.support) == (4, 1, 2, 3, 6)


def test_two_class_per_class_ratios() -> None:
    details = details_of(run(FScoreAggregatorSpec(classes=["yes", "no"]), TWO_CLASS))
    yes, no = details.per_class["yes"], details.per_class["no"]
    # yes: P = 3/5, R = 3/4, F1 = 2*3 / (2*3 + 1 + 2) = 6/9
    assert (yes.precision, yes.recall, yes.f_score) == pytest.approx((0.6, 0.75, 2 / 3))
    # no: P = 4/5, R = 4/6, F1 = 2*4 / (2*4 + 2 + 1) = 8/11
    assert (no.precision, no.recall, no.f_score) == pytest.approx((0.8, 2 / 3, 8 / 11))


def test_two_class_macro_precision_is_the_mean_over_classes() -> None:
    # (3/5 + 4/5) / 2 = 0.7
    assert run(PrecisionAggregatorSpec(classes=["yes", "no"]), TWO_CLASS).score == pytest.approx(
        0.7
    )


def test_two_class_macro_recall_is_the_mean_over_classes() -> None:
    # (3/4 + 4/6) / 2 = 17/24
    result = run(RecallAggregatorSpec(classes=["yes", "no"]), TWO_CLASS)
    assert result.score == pytest.approx(17 / 24)


def test_two_class_macro_f1_is_the_mean_of_per_class_f1() -> None:
    # (6/9 + 8/11) / 2 = 23/33
    result = run(FScoreAggregatorSpec(classes=["yes", "no"]), TWO_CLASS)
    assert result.score == pytest.approx(23 / 33)


def test_three_class_macro_differs_from_micro() -> None:
    details = details_of(run(PrecisionAggregatorSpec(classes=["cat", "dog", "bird"]), THREE_CLASS))
    # per class P: cat 4/7, dog 2/3, bird 1/1 -> macro (4/7 + 2/3 + 1) / 3 = 47/63
    # per class R: cat 4/5, dog 2/4, bird 1/2 -> macro (0.8 + 0.5 + 0.5) / 3 = 0.6
    # per class F1: cat 8/12, dog 4/7, bird 2/3 -> macro (2/3 + 4/7 + 2/3) / 3 = 40/63
    assert details.macro.precision == pytest.approx(47 / 63)
    assert details.macro.recall == pytest.approx(0.6)
    assert details.macro.f_score == pytest.approx(40 / 63)
    # micro: summed TP 7, FP 4, FN 4 over 11 items -> P = R = F1 = 7/11
    assert details.micro.precision == pytest.approx(7 / 11)
    assert details.micro.recall == pytest.approx(7 / 11)
    assert details.micro.f_score == pytest.approx(7 / 11)


def test_micro_averaging_chooses_the_micro_headline() -> None:
    spec = PrecisionAggregatorSpec(classes=["cat", "dog", "bird"], averaging="micro")
    assert run(spec, THREE_CLASS).score == pytest.approx(7 / 11)


def test_three_class_true_negatives() -> None:
    details = details_of(run(RecallAggregatorSpec(classes=["cat", "dog", "bird"]), THREE_CLASS))
    # cat: 11 - TP 4 - FP 3 - FN 1 = 3 (the dog/dog and bird/bird items)
    assert details.per_class["cat"].tn == 3
    # bird: 11 - TP 1 - FP 0 - FN 1 = 9
    assert details.per_class["bird"].tn == 9


def test_f2_weights_recall_more_than_f1() -> None:
    f1 = details_of(run(FScoreAggregatorSpec(classes=["yes", "no"]), TWO_CLASS))
    f2 = details_of(run(FScoreAggregatorSpec(classes=["yes", "no"], f_value=2), TWO_CLASS))
    # yes: F2 = 5*TP / (4*(TP+FN) + (TP+FP)) = 15 / (16 + 5) = 5/7 (F1 was 2/3)
    # no:  F2 = 20 / (24 + 5) = 20/29 (F1 was 8/11); macro F2 = (5/7 + 20/29) / 2 = 285/406
    assert f2.per_class["yes"].f_score == pytest.approx(5 / 7)
    assert f2.per_class["no"].f_score == pytest.approx(20 / 29)
    assert f2.macro.f_score == pytest.approx(285 / 406)
    assert f1.macro.f_score == pytest.approx(23 / 33)
    assert f2.f_value == 2.0 and f1.f_value == 1.0


def test_f_beta_from_counts_equals_the_precision_recall_form() -> None:
    details = details_of(run(FScoreAggregatorSpec(classes=["yes", "no"], f_value=0.5), TWO_CLASS))
    yes = details.per_class["yes"]
    b2 = 0.25
    expected = (1 + b2) * yes.precision * yes.recall / (b2 * yes.precision + yes.recall)
    assert yes.f_score == pytest.approx(expected)


def test_a_perfect_f_beta_never_rounds_above_one() -> None:
    # beta 3.3, 179 perfect items: (1 + b²)·179 / (b²·179 + 179) rounds to 1.0000000000000002
    result = run(FScoreAggregatorSpec(classes=["a"], f_value=3.3), [("a", "a")] * 179)
    assert result.score == 1.0


def test_confusion_matrix_headline_is_accuracy() -> None:
    result = run(ConfusionMatrixAggregatorSpec(classes=["cat", "dog", "bird"]), THREE_CLASS)
    # trace 4 + 2 + 1 = 7 over 11 scored items
    assert result.score == pytest.approx(7 / 11)
    assert details_of(result).averaging is None
    assert details_of(result).metric == "confusion_matrix"


def test_confusion_matrix_is_indexed_predicted_then_expected() -> None:
    result = run(ConfusionMatrixAggregatorSpec(classes=["a", "b"]), [("a", "b")])
    # expected "a" (index 0), predicted "b" (index 1) -> matrix[1][0]
    assert details_of(result).confusion_matrix == [[0, 0], [1, 0]]


def test_confusion_matrix_orientation_is_documented_on_the_field() -> None:
    description = ClassificationDetails.model_fields["confusion_matrix"].description or ""
    assert "[predicted_index][expected_index]" in description
    assert "scikit-learn" in description


def test_three_class_confusion_matrix() -> None:
    details = details_of(run(PrecisionAggregatorSpec(classes=["cat", "dog", "bird"]), THREE_CLASS))
    # rows predicted cat/dog/bird, columns expected cat/dog/bird
    assert details.confusion_matrix == [[4, 2, 1], [1, 2, 0], [0, 0, 1]]


# labels outside the classes, malformed items


def test_expected_label_outside_the_classes_is_skipped_and_counted() -> None:
    details = details_of(
        run(PrecisionAggregatorSpec(classes=["yes", "no"]), [("yes", "yes"), ("maybe", "yes")])
    )
    assert (details.n_total, details.n_scored, details.n_skipped) == (2, 1, 1)
    assert details.skip_reasons == {"unknown_expected_label": 1}
    # the skipped item is not a false positive of "yes"
    assert details.per_class["yes"].fp == 0


def test_predicted_label_outside_the_classes_is_a_false_negative_only() -> None:
    result = run(RecallAggregatorSpec(classes=["yes", "no"]), [("yes", "yes"), ("yes", "unsure")])
    details = details_of(result)
    yes = details.per_class["yes"]
    # yes: TP 1, FN 1 (the "unsure" prediction), support 2 -> R = 1/2; no FP anywhere
    assert (yes.tp, yes.fn, yes.fp, yes.support, yes.recall) == (1, 1, 0, 2, 0.5)
    assert details.per_class["no"].fp == 0
    assert details.n_unknown_predicted == 1
    assert details.n_scored == 2
    # the unknown prediction is not in the matrix
    assert details.confusion_matrix == [[1, 0], [0, 0]]
    # micro: TP 1 / (TP 1 + FP 0) = 1.0, TP 1 / (TP 1 + FN 1) = 0.5
    assert (details.micro.precision, details.micro.recall) == (1.0, 0.5)


class LabelDetails(BaseModel):
    expected: str
    actual: str


class OnlyExpected(BaseModel):
    expected: str


class NumericLabels(BaseModel):
    expected: int
    actual: int


def test_evaluation_details_may_be_a_dict() -> None:
    items = [Evaluation(score=1.0, details={"expected": "yes", "actual": "no"})]
    details = details_of(run(PrecisionAggregatorSpec(classes=["yes", "no"]), items))
    assert details.n_scored == 1
    assert details.confusion_matrix == [[0, 0], [1, 0]]


def test_evaluation_details_may_be_a_pydantic_model() -> None:
    items = [Evaluation(score=1.0, details=LabelDetails(expected="yes", actual="no"))]
    details = details_of(run(PrecisionAggregatorSpec(classes=["yes", "no"]), items))
    assert details.n_scored == 1
    assert details.confusion_matrix == [[0, 0], [1, 0]]


def test_malformed_items_are_skipped_and_counted() -> None:
    items: list[Any] = [
        Evaluation(score=1.0, details=LabelDetails(expected="yes", actual="yes")),
        Evaluation(score=1.0, details=LabelDetails(expected="no", actual="no")),
        ("yes", "no"),
        Evaluation(score=1.0, details=OnlyExpected(expected="yes")),  # no "actual"
        Evaluation(score=0.0, details=NumericLabels(expected=1, actual=0)),  # not strings
        (1, "yes"),  # not a string
        ("yes", "no", "extra"),  # not a pair
        "yes",  # not a pair
        Evaluation.errored(RuntimeError("judge down")),
        Evaluation.skip("no label"),
    ]
    details = details_of(run(PrecisionAggregatorSpec(classes=["yes", "no"]), items))
    assert (details.n_total, details.n_scored, details.n_skipped) == (10, 3, 7)
    assert details.skip_reasons == {"malformed": 5, "errored": 1, "skipped": 1}
    assert details.confusion_matrix == [[1, 0], [1, 1]]


class FrozenLabelDetails(BaseModel):
    model_config = ConfigDict(frozen=True)

    expected: str
    actual: str


def test_hashable_evaluations_are_counted_one_by_one() -> None:
    # frozen details make the Evaluation hashable: equal results must still count twice
    same = Evaluation(score=1.0, details=FrozenLabelDetails(expected="yes", actual="yes"))
    details = details_of(run(PrecisionAggregatorSpec(classes=["yes", "no"]), [same, same]))
    assert details.per_class["yes"].tp == 2


def test_details_serialise_to_json() -> None:
    result = run(ConfusionMatrixAggregatorSpec(classes=["cat", "dog", "bird"]), THREE_CLASS)
    payload = json.loads(result.model_dump_json())
    assert payload["details"]["confusion_matrix"] == [[4, 2, 1], [1, 2, 0], [0, 0, 1]]
    assert payload["details"]["per_class"]["cat"]["support"] == 5


def test_evaluations_and_pairs_give_the_same_details() -> None:
    spec = FScoreAggregatorSpec(classes=["cat", "dog", "bird"])
    evaluations = [
        Evaluation(score=float(e == a), details=LabelDetails(expected=e, actual=a))
        for e, a in THREE_CLASS
    ]
    assert run(spec, evaluations).details == run(spec, THREE_CLASS).details


def test_items_may_be_any_iterable() -> None:
    spec = PrecisionAggregatorSpec(classes=["yes", "no"])
    assert (
        run(spec, TWO_CLASS).score
        == build_dataset_evaluator(spec, "clf").evaluate(iter(TWO_CLASS)).score
    )


def test_labels_match_case_insensitively_and_keep_the_declared_casing() -> None:
    spec = PrecisionAggregatorSpec(classes=["Yes", "No"])
    details = details_of(run(spec, [("yes", " YES "), ("NO", "no"), ("nO", "Yes")]))
    assert details.classes == ["Yes", "No"]
    assert list(details.per_class) == ["Yes", "No"]
    assert details.per_class["Yes"].tp == 1
    assert details.per_class["No"].tp == 1
    assert details.per_class["Yes"].fp == 1
    assert details.n_skipped == 0


# zero denominators and nothing to score


def test_zero_denominators_give_zero() -> None:
    details = details_of(
        run(PrecisionAggregatorSpec(classes=["a", "b", "c"]), [("a", "a"), ("a", "b")])
    )
    # b: predicted once, never right -> P = 0/1 = 0; no support -> R = 0/0 -> 0.0
    # c: never predicted, never expected -> P, R, F all 0/0 -> 0.0
    b, c = details.per_class["b"], details.per_class["c"]
    assert (b.precision, b.recall, b.f_score) == (0.0, 0.0, 0.0)
    assert (c.precision, c.recall, c.f_score) == (0.0, 0.0, 0.0)
    # macro counts c although it has no support: P = (1/1 + 0 + 0) / 3, R = (1/2 + 0 + 0) / 3
    assert details.macro.precision == pytest.approx(1 / 3)
    assert details.macro.recall == pytest.approx(1 / 6)


def test_nothing_scorable_gives_a_skipped_evaluation_with_details() -> None:
    result = run(PrecisionAggregatorSpec(classes=["a"]), [("z", "a")])
    assert result.skipped and result.score is None
    assert details_of(result).n_skipped == 1
    assert "no item could be scored" in result.reasoning


def test_no_items_gives_a_skipped_evaluation() -> None:
    result = run(PrecisionAggregatorSpec(classes=["a"]), [])
    assert result.skipped
    assert details_of(result).n_total == 0


def test_the_result_names_its_evaluator() -> None:
    result = run(RecallAggregatorSpec(classes=["yes", "no"]), TWO_CLASS)
    assert result.evaluator == "clf::recall"
    assert result.reasoning.startswith("macro recall = 0.7083 over 10 of 10 items")


# result keys


def test_results_are_keyed_source_and_type() -> None:
    results = compute_dataset_evaluator_results(
        {"clf": TWO_CLASS},
        {
            "clf": [
                PrecisionAggregatorSpec(classes=["yes", "no"]),
                RecallAggregatorSpec(classes=["yes", "no"]),
            ]
        },
    )
    assert list(results) == ["clf::precision", "clf::recall"]
    assert results["clf::precision"].score == pytest.approx(0.7)
    assert results["clf::recall"].evaluator == "clf::recall"


def test_a_repeated_type_gets_an_averaging_suffix() -> None:
    classes = ["cat", "dog", "bird"]
    results = compute_dataset_evaluator_results(
        {"clf": THREE_CLASS},
        {
            "clf": [
                PrecisionAggregatorSpec(classes=classes, averaging="macro"),
                PrecisionAggregatorSpec(classes=classes, averaging="micro"),
                RecallAggregatorSpec(classes=classes),
            ]
        },
    )
    assert list(results) == ["clf::precision.macro", "clf::precision.micro", "clf::recall"]
    assert results["clf::precision.macro"].score == pytest.approx(47 / 63)
    assert results["clf::precision.micro"].score == pytest.approx(7 / 11)


def test_repeated_fscores_get_averaging_and_beta_suffixes() -> None:
    results = compute_dataset_evaluator_results(
        {"clf": TWO_CLASS},
        {
            "clf": [
                {"type": "fscore", "classes": ["yes", "no"], "fValue": 1},
                {"type": "fscore", "classes": ["yes", "no"], "fValue": 2},
            ]
        },
    )
    assert list(results) == ["clf::fscore.macro.fb1", "clf::fscore.macro.fb2"]
    assert results["clf::fscore.macro.fb2"].score == pytest.approx(285 / 406)


def test_duplicate_aggregators_on_one_source_are_an_error() -> None:
    spec = PrecisionAggregatorSpec(classes=["yes", "no"])
    with pytest.raises(ValueError, match=r"would both be reported as 'clf::precision\.macro'"):
        compute_dataset_evaluator_results({"clf": TWO_CLASS}, {"clf": [spec, spec]})


def test_two_confusion_matrices_on_one_source_are_an_error() -> None:
    specs = [
        ConfusionMatrixAggregatorSpec(classes=["yes", "no"]),
        ConfusionMatrixAggregatorSpec(classes=["yes", "no", "maybe"]),
    ]
    with pytest.raises(ValueError, match="confusion_matrix may be declared only once"):
        compute_dataset_evaluator_results({"clf": TWO_CLASS}, {"clf": specs})


def test_a_source_without_results_gives_an_errored_evaluation() -> None:
    results = compute_dataset_evaluator_results(
        {"other": TWO_CLASS}, {"clf": [PrecisionAggregatorSpec(classes=["yes", "no"])]}
    )
    result = results["clf::precision"]
    assert result.status == "errored"
    assert result.error is not None and result.error.type == "NoSourceResults"
    assert "'clf' has no results" in result.error.message
    assert "'other'" in result.error.message


def test_a_source_with_an_empty_result_list_gives_the_report_of_evaluate_on_no_items() -> None:
    spec = PrecisionAggregatorSpec(classes=["yes", "no"])
    results = compute_dataset_evaluator_results({"clf": []}, {"clf": [spec]})

    alone = build_dataset_evaluator(spec, "clf").evaluate([])
    assert results["clf::precision"] == alone
    assert results["clf::precision"].skipped
    details = details_of(results["clf::precision"])
    assert (details.n_total, details.n_scored) == (0, 0)
    assert details.confusion_matrix == [[0, 0], [0, 0]]


# specs: JSON and validation


def test_fscore_spec_round_trips_through_json_with_the_camel_case_alias() -> None:
    spec = FScoreAggregatorSpec(classes=["book", "cancel"], averaging="micro", f_value=2)
    text = spec.model_dump_json(by_alias=True)
    assert json.loads(text) == {
        "classes": ["book", "cancel"],
        "averaging": "micro",
        "type": "fscore",
        "fValue": 2.0,
    }
    assert AGGREGATOR_SPEC_ADAPTER.validate_json(text) == spec


def test_specs_round_trip_as_a_list() -> None:
    specs: list[AggregatorSpec] = [
        PrecisionAggregatorSpec(classes=["a", "b"]),
        RecallAggregatorSpec(classes=["a", "b"], averaging="micro"),
        FScoreAggregatorSpec(classes=["a", "b"], f_value=0.5),
        ConfusionMatrixAggregatorSpec(classes=["a", "b"]),
    ]
    dumped = [AGGREGATOR_SPEC_ADAPTER.dump_python(s, by_alias=True, mode="json") for s in specs]
    assert [AGGREGATOR_SPEC_ADAPTER.validate_json(json.dumps(d)) for d in dumped] == specs


def test_fscore_spec_accepts_the_python_field_name_too() -> None:
    spec = AGGREGATOR_SPEC_ADAPTER.validate_python(
        {"type": "fscore", "classes": ["a"], "f_value": 3}
    )
    assert isinstance(spec, FScoreAggregatorSpec) and spec.f_value == 3.0


def test_fscore_spec_defaults_to_f1_and_macro() -> None:
    spec = AGGREGATOR_SPEC_ADAPTER.validate_python({"type": "fscore", "classes": ["a"]})
    assert isinstance(spec, FScoreAggregatorSpec)
    assert (spec.f_value, spec.averaging) == (1.0, "macro")


def error_locs(exc: ValidationError) -> list[tuple[int | str, ...]]:
    return [error["loc"] for error in exc.errors()]


def test_unknown_spec_type_is_reported_at_the_type_field() -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python({"type": "accuracy", "classes": ["a"]})
    assert error_locs(caught.value) == [("type",)]
    assert "'precision', 'recall', 'fscore', 'confusion_matrix'" in str(caught.value)


def test_missing_spec_type_is_reported_at_the_type_field() -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_json('{"classes": ["a"]}')
    assert error_locs(caught.value) == [("type",)]


def test_invalid_declared_aggregator_names_its_source_and_position() -> None:
    valid = {"type": "precision", "classes": ["a"]}
    with pytest.raises(ValidationError) as caught:
        compute_dataset_evaluator_results({}, {"clf": [valid, {"type": "auc", "classes": ["a"]}]})
    assert error_locs(caught.value) == [("clf", 1, "type")]


@pytest.mark.parametrize("f_value", [0, -1.0, math.inf, math.nan, 1000.5, 1e154, 1e200])
def test_f_value_must_be_positive_and_at_most_1000(f_value: float) -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python(
            {"type": "fscore", "classes": ["a"], "fValue": f_value}
        )
    assert error_locs(caught.value) == [("fscore", "fValue")]


def test_f_value_is_checked_when_given_by_name() -> None:
    with pytest.raises(ValidationError) as caught:
        FScoreAggregatorSpec(classes=["a"], f_value=0)
    assert error_locs(caught.value) == [("f_value",)]


def test_empty_classes_are_rejected_at_the_classes_field() -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python({"type": "precision", "classes": []})
    assert error_locs(caught.value) == [("precision", "classes")]


def test_case_insensitive_duplicate_classes_are_rejected_at_the_classes_field() -> None:
    with pytest.raises(ValidationError, match=r"duplicated: 'book' \(same as 'Book'\)") as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python(
            {"type": "recall", "classes": ["Book", "cancel", "book"]}
        )
    assert error_locs(caught.value) == [("recall", "classes")]


def test_blank_class_names_are_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        PrecisionAggregatorSpec(classes=["a", " "])
    assert error_locs(caught.value) == [("classes",)]


def test_confusion_matrix_spec_has_no_averaging() -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python(
            {"type": "confusion_matrix", "classes": ["a"], "averaging": "macro"}
        )
    assert error_locs(caught.value) == [("confusion_matrix", "averaging")]


def test_unknown_averaging_is_rejected_at_the_averaging_field() -> None:
    with pytest.raises(ValidationError) as caught:
        AGGREGATOR_SPEC_ADAPTER.validate_python(
            {"type": "precision", "classes": ["a"], "averaging": "weighted"}
        )
    assert error_locs(caught.value) == [("precision", "averaging")]


def test_the_f_value_error_names_the_bound() -> None:
    with pytest.raises(ValidationError, match="less than or equal to 1000"):
        FScoreAggregatorSpec(classes=["a"], f_value=1e154)


def f_beta_by_hand(beta: float, tp: int, fp: int, fn: int) -> float:
    """scikit-learn's fbeta_score for one class: (1 + β²)·P·R / (β²·P + R), 0 when P = R = 0."""
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


# yes: TP 3, FP 2, FN 1; no: TP 4, FP 1, FN 2 (TWO_CLASS above).
# With scikit-learn: fbeta_score(y_true, y_pred, beta=β, average="macro", labels=["yes", "no"]).
@pytest.mark.parametrize("beta", [0.5, 2.0, 10.0, 1000.0])
def test_macro_f_beta_matches_scikit_learn_definition(beta: float) -> None:
    expected = (f_beta_by_hand(beta, 3, 2, 1) + f_beta_by_hand(beta, 4, 1, 2)) / 2
    result = run(FScoreAggregatorSpec(classes=["yes", "no"], f_value=beta), TWO_CLASS)
    assert result.score == pytest.approx(expected, rel=1e-12)


def test_the_largest_f_value_gives_f_close_to_recall() -> None:
    # one class, recall 1/2 and precision 1 ("a" twice, predicted once right, once as "b")
    items = [("a", "a"), ("a", "b")]
    result = run(FScoreAggregatorSpec(classes=["a"], f_value=1000), items)
    # F = (1 + 1e6)·1·0.5 / (1e6·1 + 0.5) = 0.49999975...
    assert result.score == pytest.approx(0.5, abs=1e-6)
    assert result.score == pytest.approx((1 + 1e6) * 0.5 / (1e6 + 0.5), rel=1e-12)


def test_a_tiny_f_value_gives_f_equal_to_precision() -> None:
    # β² underflows to 0: F-beta tends to precision, here 1/2 (predicted "a" twice, once right)
    items = [("a", "a"), ("b", "a")]
    result = run(FScoreAggregatorSpec(classes=["a", "b"], f_value=1e-200), items)
    assert details_of(result).per_class["a"].f_score == 0.5
