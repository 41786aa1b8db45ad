"""evaltrace: trace capture and evaluation for LLM applications.

Decorate the app with :func:`wrap`, mark the values that matter with
``wrap(value, purpose=..., name=...)``, capture runs with :func:`capture_traces`, and score
them: :func:`evaluate`, :func:`run_and_evaluate` and :func:`assert_pass` with evaluators of
your own or the ones shipped (:mod:`evaltrace.judges`: autoevals scorers, LLM judges,
repeated judging; :mod:`evaltrace.metrics`: retrieval, answer and dataset-level metrics),
over dataset files (:func:`run_dataset`) or stored traces (:func:`evaluate_traces`).

These names are the front door; the rest live in their floor's package
(``docs/api.md`` lists them all): :mod:`evaltrace.judges`, :mod:`evaltrace.metrics`,
:mod:`evaltrace.datasets`, :mod:`evaltrace.results`, :mod:`evaltrace.pipeline`,
:mod:`evaltrace.testing`, :mod:`evaltrace.trace`, :mod:`evaltrace.capture`. A name that
moved from here still works for one release, with a ``DeprecationWarning`` naming its new
import.

The package is a stack of floors that import one way (``docs/architecture.md``): capture and
trace load with ``import evaltrace``; every other name loads its floor on first use, so
production code that only decorates stays light (no pydantic, no asyncio).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any, Final

from evaltrace.capture import export_stats, flush, init, shutdown, wrap
from evaltrace.errors import EvaltraceError
from evaltrace.trace import (
    InstrumentationHandler,
    LLMSpan,
    MemoryTraceHandler,
    ObservationNode,
    capture_traces,
)
from evaltrace.version import version as _version

if TYPE_CHECKING:
    __version__: str
    from evaltrace.concurrency import run
    from evaltrace.datasets import assert_dataset_pass, run_dataset
    from evaltrace.engine import (
        EvalAssertionError,
        assert_pass,
        evaluate_inputs,
        evaluate_traces,
        run_and_evaluate,
    )
    from evaltrace.evals import (
        UNSET,
        Evaluable,
        Evaluation,
        Evaluator,
        EvaluatorContext,
        NamedData,
        ScoreThreshold,
        by_name,
        evaluate,
        first_llm_call,
        last_llm_call,
        root,
    )
    from evaltrace.results import RunResult
    from evaltrace.trace import load_traces, save_traces

__all__ = [
    "UNSET",
    "EvalAssertionError",
    "Evaluable",
    "EvaltraceError",
    "Evaluation",
    "Evaluator",
    "EvaluatorContext",
    "InstrumentationHandler",
    "LLMSpan",
    "MemoryTraceHandler",
    "NamedData",
    "ObservationNode",
    "RunResult",
    "ScoreThreshold",
    "assert_dataset_pass",
    "assert_pass",
    "by_name",
    "capture_traces",
    "evaluate",
    "evaluate_inputs",
    "evaluate_traces",
    "export_stats",
    "first_llm_call",
    "flush",
    "init",
    "last_llm_call",
    "load_traces",
    "root",
    "run",
    "run_and_evaluate",
    "run_dataset",
    "save_traces",
    "shutdown",
    "wrap",
]

_LAZY: Final = {
    **dict.fromkeys(["run"], "evaltrace.concurrency"),
    **dict.fromkeys(["assert_dataset_pass", "run_dataset"], "evaltrace.datasets"),
    **dict.fromkeys(
        [
            "EvalAssertionError",
            "assert_pass",
            "evaluate_inputs",
            "evaluate_traces",
            "run_and_evaluate",
        ],
        "evaltrace.engine",
    ),
    **dict.fromkeys(
        [
            "UNSET",
            "Evaluable",
            "Evaluation",
            "Evaluator",
            "EvaluatorContext",
            "NamedData",
            "ScoreThreshold",
            "by_name",
            "evaluate",
            "first_llm_call",
            "last_llm_call",
            "root",
        ],
        "evaltrace.evals",
    ),
    **dict.fromkeys(["RunResult"], "evaltrace.results"),
    **dict.fromkeys(["load_traces", "save_traces"], "evaltrace.trace"),
}
"""Where each front-door name not imported above lives; its floor loads on first use."""

_MOVED: Final = {
    **dict.fromkeys(
        [
            "ContextThreadPoolExecutor",
            "ExportStats",
            "HandlerStats",
            "WrapRecord",
            "eval_inputs",
            "propagate",
        ],
        "evaltrace.capture",
    ),
    **dict.fromkeys(
        ["ObserveSpan", "add_handler", "handler_stats", "remove_handler", "split_traces"],
        "evaltrace.trace",
    ),
    **dict.fromkeys(["RunningLoopError"], "evaltrace.concurrency"),
    **dict.fromkeys(["EvaluationError", "TestCase", "by_kind"], "evaltrace.evals"),
    **dict.fromkeys(
        [
            "AggregationMethod",
            "AggregationResult",
            "AnswerCorrectness",
            "AnswerRelevancy",
            "AutoevalsAdapter",
            "AverageAggregationStrategy",
            "BaseJudgeAggregator",
            "Battle",
            "ClosedQA",
            "CombinedEvaluator",
            "ContextRelevancy",
            "EmbeddingSimilarity",
            "ExactMatch",
            "Factuality",
            "Faithfulness",
            "Humor",
            "JSONDiff",
            "LevenshteinMatch",
            "ListContains",
            "MajorityVoteAggregationStrategy",
            "MedianAggregationStrategy",
            "MetricResult",
            "MetricsAggregator",
            "Moderation",
            "NumericDiff",
            "Possible",
            "Repeated",
            "RepeatedResults",
            "Security",
            "Sql",
            "Summary",
            "Translation",
            "ValidJSON",
            "WeightedMetricsAggregator",
            "aggregate_repeated_results",
            "build_aggregation_strategy",
            "configure_judge",
            "create_llm_evaluator",
        ],
        "evaltrace.judges",
    ),
    **dict.fromkeys(["RateLimiter"], "evaltrace.llm"),
    **dict.fromkeys(
        [
            "AggregatorSpec",
            "AnswerExactMatch",
            "AnswerF1",
            "ClassificationDatasetEvaluator",
            "ClassificationDetails",
            "ConfusionMatrixAggregatorSpec",
            "DocumentMAP",
            "DocumentMRR",
            "DocumentNDCG",
            "DocumentRecall",
            "FScoreAggregatorSpec",
            "PrecisionAggregatorSpec",
            "RecallAggregatorSpec",
            "SemanticAnswerSimilarity",
            "build_dataset_evaluator",
            "compute_dataset_evaluator_results",
        ],
        "evaltrace.metrics",
    ),
    **dict.fromkeys(
        [
            "CompletionStatus",
            "DatasetEntryResult",
            "DatasetScorecard",
            "EntryResult",
            "aggregate_results_to_dataframe",
            "analyze_agent_log",
            "extract_task_outcome",
            "generate_dataset_scorecard_html",
            "save_dataset_scorecard",
        ],
        "evaltrace.results",
    ),
    **dict.fromkeys(
        [
            "Dataset",
            "DatasetEntry",
            "DatasetError",
            "RayExecutor",
            "Runnable",
            "dataset_json_schema",
            "load_dataset",
            "register_evaluator",
        ],
        "evaltrace.datasets",
    ),
    **dict.fromkeys(
        ["EvaluationResult", "Metric", "MetricsResult", "evaluate_runnable"],
        "evaltrace.pipeline",
    ),
}
"""Names this package exported before its front door was made small, and where they live
now: they still work, for one release, with a ``DeprecationWarning``."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    module = _MOVED.get(name)
    if module is not None:
        warnings.warn(
            f"evaltrace.{name} has moved: import it as `from {module} import {name}` (the "
            "name at the package root goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'evaltrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
