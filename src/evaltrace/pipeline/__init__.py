"""Pipeline evaluation, Haystack-style: run a pipeline over inputs, then compute metrics.

:func:`evaluate_runnable` runs the pipeline once per input under capture and keeps, per input,
the input, the final output, the expected output and every component's (span's) input and
output. :meth:`EvaluationResult.calculate_metrics` then computes a :class:`Metric` (or any
custom metric) for the whole pipeline or for one component, as often as wanted, also on a
result loaded from a file.

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

from evaltrace.pipeline.calculators import (
    Metric,
    MetricCalculator,
    metric_calculator,
    register_metric,
)
from evaltrace.pipeline.result import (
    ComponentRecord,
    EvaluationResult,
    InvalidMetricResultError,
    MetricInputError,
    MetricsResult,
    OutputPair,
    ResultFileError,
    RunRecord,
)
from evaltrace.pipeline.run import (
    AmbiguousInputError,
    ProgressCallback,
    ProgressUpdate,
    evaluate_runnable,
    iter_evaluate_runnable,
)

__all__ = [
    "AmbiguousInputError",
    "ComponentRecord",
    "EvaluationResult",
    "InvalidMetricResultError",
    "Metric",
    "MetricCalculator",
    "MetricInputError",
    "MetricsResult",
    "OutputPair",
    "ProgressCallback",
    "ProgressUpdate",
    "ResultFileError",
    "RunRecord",
    "evaluate_runnable",
    "iter_evaluate_runnable",
    "metric_calculator",
    "register_metric",
]
