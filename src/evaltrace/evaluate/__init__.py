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
from evaltrace.evaluate.limits import RateLimiter
from evaltrace.evaluate.runner import (
    EvalAssertionError,
    InputResult,
    RunOutcome,
    TraceSelector,
    assert_dataset_pass,
    assert_pass,
    evaluate_inputs,
    results_table,
    run_and_evaluate,
    run_captured,
)
from evaltrace.evaluate.sync import RunningLoopError, run

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
    "RateLimiter",
    "RunOutcome",
    "RunningLoopError",
    "ScoreThreshold",
    "TestCase",
    "TraceSelector",
    "Unset",
    "assert_dataset_pass",
    "assert_pass",
    "collapse_named_data",
    "evaluate",
    "evaluate_inputs",
    "evaluator_name",
    "get_named",
    "results_table",
    "run",
    "run_and_evaluate",
    "run_captured",
]
