"""Pipeline evaluation, Haystack-style: run a pipeline over inputs, then compute metrics.

:func:`evaluate_runnable` runs the pipeline once per input under capture and keeps, per input,
the input, the final output, the expected output and every component's (span's) input and
output, in the one saved result model (:class:`~evaltrace.results.model.RunResult`).
:meth:`EvaluationResult.calculate_metrics` then computes a :class:`Metric` (or any metric
registered with :func:`register_metric`, or any callable) for the whole pipeline or for one
component, as often as wanted, also on a result loaded from a file.

Example:
    >>> result = await evaluate_runnable(
    ...     rag,
    ...     [{"query": "Who wrote Emma?"}],
    ...     [{"search": ["Emma is a novel by Jane Austen."], "rag": "Jane Austen"}],
    ... )  # doctest: +SKIP
    >>> result.calculate_metrics(Metric.MRR, component="search").score  # doctest: +SKIP
    1.0
    >>> result.calculate_metrics(Metric.F1).save("f1.csv")  # doctest: +SKIP
"""

from evaltrace.metrics.registry import Metric, MetricInputError, register_metric, registered_metric
from evaltrace.pipeline.calculators import MetricCalculator
from evaltrace.pipeline.metrics_result import (
    InvalidMetricResultError,
    MetricResultTypeError,
    MetricScoreCountError,
    MetricsResult,
    OutputPair,
)
from evaltrace.pipeline.result import EvaluationResult, ResultFileError
from evaltrace.pipeline.run import (
    AmbiguousInputError,
    ProgressCallback,
    ProgressUpdate,
    evaluate_runnable,
    iter_evaluate_runnable,
)
from evaltrace.results.model import ComponentRecord

__all__ = [
    "AmbiguousInputError",
    "ComponentRecord",
    "EvaluationResult",
    "InvalidMetricResultError",
    "Metric",
    "MetricCalculator",
    "MetricInputError",
    "MetricResultTypeError",
    "MetricScoreCountError",
    "MetricsResult",
    "OutputPair",
    "ProgressCallback",
    "ProgressUpdate",
    "ResultFileError",
    "evaluate_runnable",
    "iter_evaluate_runnable",
    "register_metric",
    "registered_metric",
]
