"""Evaluation: evaluables, evaluations, evaluators."""

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

__all__ = [
    "UNSET",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "EvaluationStatus",
    "Evaluator",
    "NamedData",
    "TestCase",
    "Unset",
    "collapse_named_data",
    "evaluate",
    "evaluator_name",
    "get_named",
]
