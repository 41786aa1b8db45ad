"""evaltrace: trace capture and evaluation for LLM applications.

Decorate the app with :func:`wrap`, mark the values that matter with
``wrap(value, purpose=..., name=...)``, capture runs with :func:`capture_traces`, and score
them with evaluators (:func:`evaluate`, :func:`run_and_evaluate`, :func:`assert_pass`).

Only the capture API is imported eagerly; everything else loads on first use, so
``import evaltrace`` stays cheap in production code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evaltrace.capture import (
    ContextThreadPoolExecutor,
    InstrumentationHandler,
    MemoryTraceHandler,
    WrapRecord,
    add_handler,
    capture_traces,
    eval_inputs,
    flush,
    init,
    propagate,
    remove_handler,
    shutdown,
    wrap,
)
from evaltrace.errors import EvaltraceError

__version__ = "0.1.0"

# Public names that load lazily, by the module that defines them.
_LAZY: dict[str, str] = {
    # trace tree
    "ObservationNode": "evaltrace.trace",
    "ObserveSpan": "evaltrace.trace",
    "LLMSpan": "evaltrace.trace",
    "load_traces": "evaltrace.trace",
    "save_traces": "evaltrace.trace",
    "root": "evaltrace.trace",
    "last_llm_call": "evaltrace.trace",
    "first_llm_call": "evaltrace.trace",
    "by_name": "evaltrace.trace",
    "by_kind": "evaltrace.trace",
    # evaluation
    "NamedData": "evaltrace.evals",
    "TestCase": "evaltrace.evals",
    "Evaluable": "evaltrace.evals",
    "Evaluation": "evaltrace.evals",
    "EvaluationError": "evaltrace.evals",
    "Evaluator": "evaltrace.evals",
    "evaluate": "evaltrace.evals",
    "UNSET": "evaltrace.evals",
    "run_and_evaluate": "evaltrace.evals",
    "assert_pass": "evaltrace.evals",
    "assert_dataset_pass": "evaltrace.evals",
    "EvalAssertionError": "evaltrace.evals",
    "ScoreThreshold": "evaltrace.evals",
    "evaluate_inputs": "evaltrace.evals",
    "RateLimiter": "evaltrace.evals",
    "run": "evaltrace.evals",
    "RunningLoopError": "evaltrace.evals",
}

if TYPE_CHECKING:
    from evaltrace.evals import (
        UNSET,
        EvalAssertionError,
        Evaluable,
        Evaluation,
        EvaluationError,
        Evaluator,
        NamedData,
        RateLimiter,
        RunningLoopError,
        ScoreThreshold,
        TestCase,
        assert_dataset_pass,
        assert_pass,
        evaluate,
        evaluate_inputs,
        run,
        run_and_evaluate,
    )
    from evaltrace.trace import (
        LLMSpan,
        ObservationNode,
        ObserveSpan,
        by_kind,
        by_name,
        first_llm_call,
        last_llm_call,
        load_traces,
        root,
        save_traces,
    )

__all__ = [
    "UNSET",
    "ContextThreadPoolExecutor",
    "EvalAssertionError",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "Evaluator",
    "EvaltraceError",
    "InstrumentationHandler",
    "LLMSpan",
    "MemoryTraceHandler",
    "NamedData",
    "ObservationNode",
    "ObserveSpan",
    "RateLimiter",
    "RunningLoopError",
    "ScoreThreshold",
    "TestCase",
    "WrapRecord",
    "add_handler",
    "assert_dataset_pass",
    "assert_pass",
    "by_kind",
    "by_name",
    "capture_traces",
    "eval_inputs",
    "evaluate",
    "evaluate_inputs",
    "first_llm_call",
    "flush",
    "init",
    "last_llm_call",
    "load_traces",
    "propagate",
    "remove_handler",
    "root",
    "run",
    "run_and_evaluate",
    "save_traces",
    "shutdown",
    "wrap",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evaltrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
