"""Evaluation: evaluables, evaluations, evaluators, running and asserting."""

from evaltrace.concurrency.sync import RunningLoopError, run
from evaltrace.evals.assertions import EvalAssertionError, assert_pass
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.criteria import PassCriteria, ScoreThreshold
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
from evaltrace.evals.report import results_table
from evaltrace.evals.result import (
    CompletionStatus,
    EntryResult,
    EntrySelection,
    RunResult,
    entry_status,
)
from evaltrace.evals.runner import (
    InputResult,
    RunOutcome,
    evaluate_inputs,
    run_and_evaluate,
    run_captured,
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
from evaltrace.evals.stored import evaluate_traces

__all__ = [
    "CompletionStatus",
    "EntryResult",
    "EntrySelection",
    "RunResult",
    "entry_status",
    "by_kind",
    "by_name",
    "first_llm_call",
    "last_llm_call",
    "root",
    "select",
    "UNSET",
    "EvalAssertionError",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "EvaluationStatus",
    "Evaluator",
    "EvaluatorContext",
    "EvaluatorFunction",
    "EvaluatorOutput",
    "InputResult",
    "NamedData",
    "PassCriteria",
    "RunOutcome",
    "RunningLoopError",
    "ScoreThreshold",
    "TestCase",
    "TraceSelector",
    "Unset",
    "assert_pass",
    "collapse_named_data",
    "evaluate",
    "evaluate_inputs",
    "evaluate_traces",
    "evaluator_name",
    "get_named",
    "json_value",
    "results_table",
    "run",
    "run_and_evaluate",
    "run_captured",
]
