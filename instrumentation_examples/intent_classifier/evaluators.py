"""The intent classifier's per-entry evaluator, the source of the dataset-level metrics."""

from __future__ import annotations

from evaltrace import Evaluation, EvaluatorContext


def intent_matches(ctx: EvaluatorContext) -> Evaluation:
    """1.0 when the predicted intent is the expected one, else 0.0.

    The details hold ``{"expected": ..., "actual": ...}``: the aggregators declared on this
    evaluator in the dataset file read them to compute precision, recall, F1 and the
    confusion matrix over every entry of the run.
    """
    if not ctx.has_expectation:
        return Evaluation.skip("the entry gives no expected intent (expectation)")
    actual = ctx.output("intent")
    expected = ctx.expectation
    return Evaluation(
        score=float(actual == expected),
        reasoning=f"predicted {actual!r}, expected {expected!r}",
        details={"expected": expected, "actual": actual},
    )
