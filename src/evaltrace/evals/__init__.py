"""Evaluation: evaluables, evaluations, evaluators, selectors and pass criteria.

What a run scores and how one evaluator scores it. Running an app over inputs, traces or a
dataset is the engine's (:mod:`evaltrace.engine`); the saved results are
:mod:`evaltrace.results`'.
"""

from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.criteria import (
    PassCriteria,
    ScoreThreshold,
    as_pass_criteria,
    pass_threshold,
    passing_at,
)
from evaltrace.evals.evaluable import (
    UNSET,
    Evaluable,
    NamedData,
    TestCase,
    Unset,
    collapse_named_data,
    get_named,
    json_value,
)
from evaltrace.evals.evaluation import Evaluation, EvaluationError, EvaluationStatus
from evaltrace.evals.evaluator import (
    Evaluator,
    EvaluatorFunction,
    EvaluatorOutput,
    evaluate,
    evaluator_name,
)
from evaltrace.evals.selectors import (
    TraceSelector,
    by_kind,
    by_name,
    first_llm_call,
    last_llm_call,
    root,
    select,
)

__all__ = [
    "UNSET",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "EvaluationStatus",
    "Evaluator",
    "EvaluatorContext",
    "EvaluatorFunction",
    "EvaluatorOutput",
    "NamedData",
    "PassCriteria",
    "ScoreThreshold",
    "TestCase",
    "TraceSelector",
    "Unset",
    "as_pass_criteria",
    "by_kind",
    "by_name",
    "collapse_named_data",
    "evaluate",
    "evaluator_name",
    "first_llm_call",
    "get_named",
    "json_value",
    "last_llm_call",
    "pass_threshold",
    "passing_at",
    "root",
    "select",
]
