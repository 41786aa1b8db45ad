"""Metrics: retrieval and answer metrics, their per-entry evaluators, dataset-level classification.

The metric functions are pure and synchronous; each docstring gives its formula. The metrics
are also registered by name (:class:`Metric`, :func:`register_metric`), for the per-entry
evaluators and pipeline evaluation alike. The deterministic evaluators of pydantic-evals keep
their names and meanings: :class:`Contains`, :class:`IsInstance`, :class:`MaxDuration` and
:class:`HasMatchingSpan` (with a :class:`SpanQuery`). :class:`Check` applies a check written as
data, ``{"type": "contains", "value": "Paris"}``, from the registry of check types
(:func:`register_check`).

Example:
    >>> from evaltrace.metrics import average_precision, token_f1
    >>> average_precision(["a", "x", "b"], ["a", "b"])
    0.8333333333333333
    >>> token_f1("Paris, France", "paris")
    0.6666666666666666
"""

from evaltrace.metrics.answers import exact_match, normalize_answer, token_f1
from evaltrace.metrics.check_types import (
    Check,
    CheckOutcome,
    CheckType,
    CheckValueError,
    UnknownCheckTypeError,
    check_type_names,
    lookup_check_type,
    register_check,
)
from evaltrace.metrics.classification import (
    AGGREGATOR_SPEC_ADAPTER,
    AggregatorSpec,
    AveragedMetrics,
    ClassificationDatasetEvaluator,
    ClassificationDetails,
    ClassificationItem,
    ClassificationTally,
    ConfusionMatrixAggregatorSpec,
    DatasetResultsTally,
    FScoreAggregatorSpec,
    PerClassMetrics,
    PrecisionAggregatorSpec,
    RecallAggregatorSpec,
    build_dataset_evaluator,
    compute_dataset_evaluator_results,
)
from evaltrace.metrics.deterministic import Contains, HasMatchingSpan, IsInstance, MaxDuration
from evaltrace.metrics.documents import (
    DocumentKey,
    DocumentKeyError,
    DocumentScoreError,
    check_document_key,
    document_key,
)
from evaltrace.metrics.evaluators import (
    AnswerDetails,
    AnswerExactMatch,
    AnswerF1,
    DocumentMAP,
    DocumentMRR,
    DocumentNDCG,
    DocumentRecall,
    RetrievalDetails,
    SemanticAnswerSimilarity,
)
from evaltrace.metrics.registry import (
    Comparison,
    Metric,
    MetricInputError,
    PairMetric,
    Scoring,
    metric_names,
    register_metric,
    registered_metric,
)
from evaltrace.metrics.retrieval import (
    EmptyGroundTruthWarning,
    RecallMode,
    average_precision,
    ndcg,
    recall,
    reciprocal_rank,
)
from evaltrace.trace.query import SpanQuery

__all__ = [
    "Check",
    "CheckOutcome",
    "CheckType",
    "CheckValueError",
    "UnknownCheckTypeError",
    "check_type_names",
    "lookup_check_type",
    "register_check",
    "Contains",
    "HasMatchingSpan",
    "IsInstance",
    "MaxDuration",
    "SpanQuery",
    "Comparison",
    "Metric",
    "MetricInputError",
    "PairMetric",
    "Scoring",
    "metric_names",
    "register_metric",
    "registered_metric",
    "AGGREGATOR_SPEC_ADAPTER",
    "AnswerDetails",
    "AnswerExactMatch",
    "AnswerF1",
    "DocumentMAP",
    "DocumentMRR",
    "DocumentNDCG",
    "DocumentRecall",
    "RetrievalDetails",
    "SemanticAnswerSimilarity",
    "AggregatorSpec",
    "AveragedMetrics",
    "ClassificationDatasetEvaluator",
    "ClassificationDetails",
    "ClassificationItem",
    "ClassificationTally",
    "ConfusionMatrixAggregatorSpec",
    "DatasetResultsTally",
    "DocumentKey",
    "DocumentKeyError",
    "DocumentScoreError",
    "EmptyGroundTruthWarning",
    "FScoreAggregatorSpec",
    "PerClassMetrics",
    "PrecisionAggregatorSpec",
    "RecallAggregatorSpec",
    "RecallMode",
    "average_precision",
    "build_dataset_evaluator",
    "check_document_key",
    "compute_dataset_evaluator_results",
    "document_key",
    "exact_match",
    "ndcg",
    "normalize_answer",
    "recall",
    "reciprocal_rank",
    "token_f1",
]
