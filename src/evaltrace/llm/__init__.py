"""The LLM-client floor: where judge and embedding requests go, kept out of the app's trace.

:func:`configure_judge` (or the ``EVALTRACE_JUDGE_*`` variables) says which endpoint, key and
models judges use; :mod:`evaltrace.llm.isolation` runs each judge call detached from the
captured run; :class:`RateLimiter` paces calls under a provider's limits;
:mod:`evaltrace.llm.embeddings` turns texts into vectors for similarity scorers. Nothing here
imports ``openai`` until a client is first built.
"""

from evaltrace.llm.config import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_JUDGE_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    JudgeClient,
    JudgeConfig,
    JudgeConfigToken,
    JudgeNotConfiguredError,
    configure_judge,
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
from evaltrace.llm.rate_limit import RateLimiter, RateLimiting

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "Embedder",
    "JudgeClient",
    "JudgeConfig",
    "JudgeConfigToken",
    "JudgeNotConfiguredError",
    "RateLimiter",
    "RateLimiting",
    "configure_judge",
    "cosine_similarity",
    "embed_texts",
    "estimate_tokens",
    "isolated_judge_call",
    "judge_client",
    "judge_config",
    "judge_embedder",
    "local_embedder",
    "openai_embedder",
    "reset_judge_config",
    "run_judge_call",
    "run_judge_call_in_thread",
    "uses_responses_api",
]
