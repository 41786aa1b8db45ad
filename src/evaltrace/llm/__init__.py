"""The LLM-client floor: where judge and embedding requests go, kept out of the app's trace.

:func:`configure_judge` (or the ``EVALTRACE_JUDGE_*`` variables) says which endpoint, key and
models judges use; :mod:`evaltrace.llm.isolation` runs each judge call detached from the
captured run; :class:`RateLimiter` paces calls under a provider's limits;
:class:`JudgeCache` keeps judge responses so that a request asked again costs nothing, each
sample of a repeated judge (:func:`judge_sample`) and each epoch (:func:`judge_epoch`) keyed
apart; :func:`collect_judge_usage` gathers what the judge calls of a block spent, and
:func:`app_model_usage` what the app's own model calls spent (from its trace);
:class:`PriceTable` (``--prices``, ``EVALTRACE_PRICES``) prices them;
:mod:`evaltrace.llm.embeddings` turns texts into vectors for similarity scorers. Nothing here
imports ``openai`` until a client is first built.
"""

from evaltrace.llm.cache import (
    CachedReply,
    JudgeCache,
    JudgeCacheStats,
    default_judge_cache_path,
    flush_judge_caches,
    request_key,
    shared_judge_cache,
)
from evaltrace.llm.cached_client import CachingJudgeClient
from evaltrace.llm.calls import ModelUsage, add_model_usage, app_model_usage, total_usage
from evaltrace.llm.config import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_JUDGE_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    JudgeCacheSetting,
    JudgeClient,
    JudgeConfig,
    JudgeConfigToken,
    JudgeNotConfiguredError,
    configure_judge,
    environment_judge_cache,
    judge_client,
    judge_config,
    reset_judge_config,
    uses_responses_api,
)
from evaltrace.llm.embeddings import (
    Embedder,
    cosine_similarity,
    embed_texts,
    judge_embedder,
    local_embedder,
    openai_embedder,
)
from evaltrace.llm.isolation import (
    estimate_tokens,
    isolated_judge_call,
    run_judge_call,
    run_judge_call_in_thread,
)
from evaltrace.llm.prices import (
    PRICES_VARIABLE,
    Cost,
    ModelPrice,
    PriceTable,
    current_prices,
    load_prices,
    resolve_prices,
    using_prices,
)
from evaltrace.llm.rate_limit import RateLimiter, RateLimiting
from evaltrace.llm.samples import JudgeSample, current_judge_sample, judge_epoch, judge_sample
from evaltrace.llm.usage import (
    JudgeUsage,
    JudgeUsageCollector,
    add_judge_usage,
    collect_judge_usage,
    current_usage_collector,
    describe_judge_usage,
    total_judge_usage,
)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "PRICES_VARIABLE",
    "CachedReply",
    "CachingJudgeClient",
    "Cost",
    "Embedder",
    "JudgeCache",
    "JudgeCacheSetting",
    "JudgeCacheStats",
    "JudgeClient",
    "JudgeConfig",
    "JudgeConfigToken",
    "JudgeNotConfiguredError",
    "JudgeSample",
    "JudgeUsage",
    "JudgeUsageCollector",
    "ModelPrice",
    "ModelUsage",
    "PriceTable",
    "RateLimiter",
    "RateLimiting",
    "add_judge_usage",
    "add_model_usage",
    "app_model_usage",
    "collect_judge_usage",
    "configure_judge",
    "cosine_similarity",
    "current_judge_sample",
    "current_prices",
    "current_usage_collector",
    "default_judge_cache_path",
    "describe_judge_usage",
    "embed_texts",
    "environment_judge_cache",
    "estimate_tokens",
    "flush_judge_caches",
    "isolated_judge_call",
    "judge_client",
    "judge_config",
    "judge_embedder",
    "judge_epoch",
    "judge_sample",
    "load_prices",
    "local_embedder",
    "openai_embedder",
    "request_key",
    "reset_judge_config",
    "resolve_prices",
    "run_judge_call",
    "run_judge_call_in_thread",
    "shared_judge_cache",
    "total_judge_usage",
    "total_usage",
    "uses_responses_api",
    "using_prices",
]
