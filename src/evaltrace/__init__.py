"""evaltrace: trace capture and evaluation for LLM applications.

Decorate the app with :func:`wrap`, mark the values that matter with
``wrap(value, purpose=..., name=...)``, capture runs with :func:`capture_traces`, and score
them: :func:`evaluate`, :func:`run_and_evaluate` and :func:`assert_pass` with evaluators of
your own or the ones shipped (autoevals scorers such as :func:`Factuality`, LLM judges from
:func:`create_llm_evaluator`, repeated judging with :class:`Repeated`, retrieval and answer
metrics such as :class:`DocumentMRR` and :class:`AnswerF1`, dataset-level precision, recall
and F-beta), over dataset files (:func:`load_dataset`), or as a Haystack-style pipeline
evaluation (:func:`evaluate_runnable`). :func:`run_dataset` runs a dataset file into a
:class:`RunResult`, as ``evaltrace test`` does on the command line.

The package is a stack of floors that import one way (``docs/architecture.md``): capture and
trace load with ``import evaltrace``; evaluation, the LLM client, judges, metrics, datasets
and pipeline load on first use of one of their names, so production code that only
decorates stays light (no pydantic, no asyncio).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evaltrace.capture import (
    ContextThreadPoolExecutor,
    ExportStats,
    HandlerStats,
    WrapRecord,
    eval_inputs,
    export_stats,
    flush,
    init,
    propagate,
    shutdown,
    wrap,
)
from evaltrace.errors import EvaltraceError
from evaltrace.trace import (
    InstrumentationHandler,
    LLMSpan,
    MemoryTraceHandler,
    ObservationNode,
    ObserveSpan,
    add_handler,
    capture_traces,
    handler_stats,
    remove_handler,
    split_traces,
)
from evaltrace.version import version as _version

if TYPE_CHECKING:
    __version__: str
    from evaltrace.datasets import (
        Dataset,
        DatasetEntry,
        DatasetError,
        RayExecutor,
        Runnable,
        assert_dataset_pass,
        dataset_json_schema,
        load_dataset,
        register_evaluator,
        run_dataset,
    )
    from evaltrace.evals import (
        UNSET,
        CompletionStatus,
        EntryResult,
        EvalAssertionError,
        Evaluable,
        Evaluation,
        EvaluationError,
        Evaluator,
        EvaluatorContext,
        NamedData,
        RunningLoopError,
        RunResult,
        ScoreThreshold,
        TestCase,
        assert_pass,
        by_kind,
        by_name,
        evaluate,
        evaluate_inputs,
        evaluate_traces,
        first_llm_call,
        last_llm_call,
        root,
        run,
        run_and_evaluate,
    )
    from evaltrace.judges import (
        AggregationMethod,
        AggregationResult,
        AnswerCorrectness,
        AnswerRelevancy,
        AutoevalsAdapter,
        AverageAggregationStrategy,
        BaseJudgeAggregator,
        Battle,
        ClosedQA,
        CombinedEvaluator,
        ContextRelevancy,
        EmbeddingSimilarity,
        ExactMatch,
        Factuality,
        Faithfulness,
        Humor,
        JSONDiff,
        LevenshteinMatch,
        ListContains,
        MajorityVoteAggregationStrategy,
        MedianAggregationStrategy,
        MetricResult,
        MetricsAggregator,
        Moderation,
        NumericDiff,
        Possible,
        Repeated,
        RepeatedResults,
        Security,
        Sql,
        Summary,
        Translation,
        ValidJSON,
        WeightedMetricsAggregator,
        aggregate_repeated_results,
        build_aggregation_strategy,
        create_llm_evaluator,
    )
    from evaltrace.llm import RateLimiter, configure_judge
    from evaltrace.metrics import (
        AggregatorSpec,
        AnswerExactMatch,
        AnswerF1,
        ClassificationDatasetEvaluator,
        ClassificationDetails,
        ConfusionMatrixAggregatorSpec,
        DocumentMAP,
        DocumentMRR,
        DocumentNDCG,
        DocumentRecall,
        FScoreAggregatorSpec,
        PrecisionAggregatorSpec,
        RecallAggregatorSpec,
        SemanticAnswerSimilarity,
        build_dataset_evaluator,
        compute_dataset_evaluator_results,
    )
    from evaltrace.pipeline import EvaluationResult, Metric, MetricsResult, evaluate_runnable
    from evaltrace.results import (
        DatasetEntryResult,
        DatasetScorecard,
        aggregate_results_to_dataframe,
        analyze_agent_log,
        extract_task_outcome,
        generate_dataset_scorecard_html,
        save_dataset_scorecard,
    )
    from evaltrace.trace import load_traces, save_traces

__all__ = [
    "UNSET",
    "AggregationMethod",
    "AggregationResult",
    "AggregatorSpec",
    "AnswerCorrectness",
    "AnswerExactMatch",
    "AnswerF1",
    "AnswerRelevancy",
    "AutoevalsAdapter",
    "AverageAggregationStrategy",
    "BaseJudgeAggregator",
    "Battle",
    "ClassificationDatasetEvaluator",
    "ClassificationDetails",
    "ClosedQA",
    "CombinedEvaluator",
    "CompletionStatus",
    "ConfusionMatrixAggregatorSpec",
    "ContextRelevancy",
    "ContextThreadPoolExecutor",
    "Dataset",
    "DatasetEntry",
    "DatasetEntryResult",
    "DatasetError",
    "DatasetScorecard",
    "DocumentMAP",
    "DocumentMRR",
    "DocumentNDCG",
    "DocumentRecall",
    "EmbeddingSimilarity",
    "EntryResult",
    "EvalAssertionError",
    "EvaltraceError",
    "Evaluable",
    "Evaluation",
    "EvaluationError",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorContext",
    "ExactMatch",
    "ExportStats",
    "FScoreAggregatorSpec",
    "Factuality",
    "Faithfulness",
    "HandlerStats",
    "Humor",
    "InstrumentationHandler",
    "JSONDiff",
    "LLMSpan",
    "LevenshteinMatch",
    "ListContains",
    "MajorityVoteAggregationStrategy",
    "MedianAggregationStrategy",
    "MemoryTraceHandler",
    "Metric",
    "MetricResult",
    "MetricsAggregator",
    "MetricsResult",
    "Moderation",
    "NamedData",
    "NumericDiff",
    "ObservationNode",
    "ObserveSpan",
    "Possible",
    "PrecisionAggregatorSpec",
    "RateLimiter",
    "RayExecutor",
    "RecallAggregatorSpec",
    "Repeated",
    "RepeatedResults",
    "RunResult",
    "Runnable",
    "RunningLoopError",
    "ScoreThreshold",
    "Security",
    "SemanticAnswerSimilarity",
    "Sql",
    "Summary",
    "TestCase",
    "Translation",
    "ValidJSON",
    "WeightedMetricsAggregator",
    "WrapRecord",
    "add_handler",
    "aggregate_repeated_results",
    "aggregate_results_to_dataframe",
    "analyze_agent_log",
    "assert_dataset_pass",
    "assert_pass",
    "build_aggregation_strategy",
    "build_dataset_evaluator",
    "by_kind",
    "by_name",
    "capture_traces",
    "compute_dataset_evaluator_results",
    "configure_judge",
    "create_llm_evaluator",
    "dataset_json_schema",
    "eval_inputs",
    "evaluate",
    "evaluate_inputs",
    "evaluate_traces",
    "evaluate_runnable",
    "export_stats",
    "extract_task_outcome",
    "first_llm_call",
    "flush",
    "generate_dataset_scorecard_html",
    "handler_stats",
    "init",
    "last_llm_call",
    "load_dataset",
    "load_traces",
    "propagate",
    "register_evaluator",
    "remove_handler",
    "root",
    "run",
    "run_and_evaluate",
    "run_dataset",
    "save_dataset_scorecard",
    "save_traces",
    "shutdown",
    "split_traces",
    "wrap",
]

_LAZY_FLOORS = (
    "evaltrace.trace",
    "evaltrace.evals",
    "evaltrace.llm",
    "evaltrace.judges",
    "evaltrace.metrics",
    "evaltrace.results",
    "evaltrace.datasets",
    "evaltrace.pipeline",
)
"""Where the names not imported above are found, lowest floor first: the trace floor (loaded,
but its trace-file modules load on first use), then the floors loaded on first use. Each
imports the floors below it anyway, so looking a name up floor by floor loads nothing the
name's own floor would not."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    if name in __all__:
        for floor in _LAZY_FLOORS:
            module = importlib.import_module(floor)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'evaltrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
