"""Evaluation: evaluables, evaluations, evaluators, running and asserting."""

from evaltrace.evaluate.criteria import PassCriteria, ScoreThreshold
from evaltrace.evaluate.evaluable import (
    UNSET,
    Evaluable,
    NamedData,
    TestCase,
    Unset,
    collapse_named_data,
    get_named,
)
from evaltrace.evaluate.evaluation import Evaluation, EvaluationError, EvaluationStatus
from evaltrace.evaluate.evaluator import Evaluator, evaluate, evaluator_name
from evaltrace.evaluate.runner import (
    EvalAssertionError,
    InputResult,
    RunOutcome,
    TraceSelector,
    assert_dataset_pass,
    assert_pass,
    run_and_evaluate,
    run_captured,
)

__all__ = [
    "UNSET",
    "EvalAssertionError",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "EvaluationStatus",
    "Evaluator",
    "InputResult",
    "NamedData",
    "PassCriteria",
    "RunOutcome",
    "ScoreThreshold",
    "TestCase",
    "TraceSelector",
    "Unset",
    "assert_dataset_pass",
    "assert_pass",
    "collapse_named_data",
    "evaluate",
    "evaluator_name",
    "get_named",
    "run_and_evaluate",
    "run_captured",
]
