"""Judges: autoevals scorers, prompt-based LLM judges, repeated judging, combined metrics.

Model-backed judges call the endpoint configured with :func:`configure_judge` (or the
``EVALTRACE_JUDGE_*`` environment variables); there is no default endpoint. Importing this
package does not import ``openai`` or ``autoevals``: they load when a judge is first built.

Example:
    >>> from evaltrace.judges import Factuality, Repeated, configure_judge
    >>> token = configure_judge(base_url="http://127.0.0.1:8000/v1", api_key="test")
    >>> judge = Repeated(Factuality(), n=3, strategy="median")
    >>> token.restore()
"""

from __future__ import annotations

from evaltrace.errors import MissingExtraError, UnknownEvaluatorError
from evaltrace.judges.autoevals import AutoevalsAdapter
from evaltrace.judges.combine import (
    AggregationResult,
    CombinedEvaluator,
    MetricResult,
    MetricsAggregator,
    WeightedMetricsAggregator,
)
from evaltrace.judges.llm import LLMEvaluator, UnparseableJudgeAnswerError, create_llm_evaluator
from evaltrace.judges.repeated import Repeated
from evaltrace.judges.scorers import (
    AnswerCorrectness,
    AnswerRelevancy,
    Battle,
    ClosedQA,
    ContextRelevancy,
    EmbeddingSimilarity,
    ExactMatch,
    Factuality,
    Faithfulness,
    Humor,
    JSONDiff,
    LevenshteinMatch,
    ListContains,
    Moderation,
    NumericDiff,
    Possible,
    Security,
    Sql,
    Summary,
    Translation,
    ValidJSON,
)
from evaltrace.judges.strategies import (
    AggregationMethod,
    AtLeastKAggregationStrategy,
    AverageAggregationStrategy,
    BaseJudgeAggregator,
    MajorityVoteAggregationStrategy,
    MaxAggregationStrategy,
    MedianAggregationStrategy,
    MinAggregationStrategy,
    NoValidJudgeResultsError,
    PassAtKAggregationStrategy,
    RepeatedDetails,
    RepeatedResults,
    aggregate_repeated_results,
    build_aggregation_strategy,
    register_aggregation_strategy,
)
from evaltrace.llm.config import (
    JudgeConfig,
    JudgeConfigToken,
    JudgeNotConfiguredError,
    configure_judge,
    judge_config,
    reset_judge_config,
)

__all__ = [
    # autoevals scorers
    "AutoevalsAdapter",
    "LevenshteinMatch",
    "ExactMatch",
    "NumericDiff",
    "JSONDiff",
    "ValidJSON",
    "ListContains",
    "EmbeddingSimilarity",
    "Factuality",
    "ClosedQA",
    "Battle",
    "Humor",
    "Security",
    "Sql",
    "Summary",
    "Translation",
    "Possible",
    "Moderation",
    "ContextRelevancy",
    "Faithfulness",
    "AnswerRelevancy",
    "AnswerCorrectness",
    "UnknownEvaluatorError",
    # prompt-based judges
    "LLMEvaluator",
    "UnparseableJudgeAnswerError",
    "create_llm_evaluator",
    # judge configuration
    "JudgeConfig",
    "JudgeConfigToken",
    "JudgeNotConfiguredError",
    "MissingExtraError",
    "configure_judge",
    "judge_config",
    "reset_judge_config",
    # repeated judging
    "Repeated",
    "AggregationMethod",
    "BaseJudgeAggregator",
    "AverageAggregationStrategy",
    "MedianAggregationStrategy",
    "MajorityVoteAggregationStrategy",
    "MinAggregationStrategy",
    "MaxAggregationStrategy",
    "AtLeastKAggregationStrategy",
    "PassAtKAggregationStrategy",
    "register_aggregation_strategy",
    "build_aggregation_strategy",
    "aggregate_repeated_results",
    "RepeatedResults",
    "RepeatedDetails",
    "NoValidJudgeResultsError",
    # combining metrics
    "MetricResult",
    "MetricsAggregator",
    "WeightedMetricsAggregator",
    "AggregationResult",
    "CombinedEvaluator",
]
