"""Embeddings for semantic answer similarity, and cosine similarity.

The vectors come from the judge's endpoint, an OpenAI client, or a local sentence-embedding
model (the ``[embeddings]`` extra).

An *embedder* is any callable ``(texts) -> one vector per text``, sync or async.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import math
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeAlias

import anyio.to_thread

from evaltrace.concurrency.callables import is_async_callable
from evaltrace.errors import MissingExtraError
from evaltrace.llm.config import judge_client, judge_config
from evaltrace.llm.isolation import estimate_tokens, run_judge_call, run_judge_call_in_thread

__all__ = [
    "Embedder",
    "cosine_similarity",
    "embed_texts",
    "judge_embedder",
    "local_embedder",
    "openai_embedder",
]

Embedder: TypeAlias = Callable[[list[str]], Any]
"""Turns texts into vectors: ``(texts) -> one vector per text``, sync or async.

A sync embedder runs in a worker thread; an async one (or one returning an awaitable) is
awaited. See :func:`openai_embedder` and :func:`local_embedder`.
"""

_EMBEDDING_BATCH: Final = 128


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors: ``a·b / (|a| |b|)``; ``0.0`` when either is zero.

    Raises:
        ValueError: The vectors differ in length or hold a non-finite number.

    Example:
        >>> cosine_similarity([1.0, 0.0], [1.0, 1.0])
        0.7071067811865475
    """
    if len(a) != len(b):
        raise ValueError(f"cannot compare vectors of lengths {len(a)} and {len(b)}")
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if not (math.isfinite(dot) and math.isfinite(norm_a) and math.isfinite(norm_b)):
        raise ValueError("an embedding holds a non-finite number")
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / (norm_a * norm_b)))


def openai_embedder(client: Any, model: str, *, dimensions: int | None = None) -> Embedder:
    """An :data:`Embedder` calling an OpenAI-compatible embeddings endpoint.

    Args:
        client: An ``openai.AsyncOpenAI`` (or sync ``openai.OpenAI``) client.
        model: The embedding model, e.g. ``"text-embedding-3-small"``.
        dimensions: The vector length to ask for, when the model supports it.

    Returns:
        An async function ``(texts) -> vectors``.

    Example:
        >>> import openai
        >>> embed = openai_embedder(openai.AsyncOpenAI(api_key="k"), "text-embedding-3-small")
    """
    extra: dict[str, Any] = {} if dimensions is None else {"dimensions": dimensions}

    async def embed(texts: list[str]) -> list[list[float]]:
        response = client.embeddings.create(model=model, input=texts, **extra)
        if inspect.isawaitable(response):
            response = await response
        return _vectors(response)

    embed.__name__ = embed.__qualname__ = f"openai_embedder({model!r})"
    return embed


def _vectors(response: Any) -> list[list[float]]:
    data = sorted(response.data, key=lambda item: item.index)
    return [list(item.embedding) for item in data]


def judge_embedder(model: str | None = None) -> Embedder:
    """An :data:`Embedder` calling the configured judge's embeddings endpoint.

    The judge configuration (``configure_judge(...)`` or the ``EVALTRACE_JUDGE_*`` environment)
    is read on every call; the request runs detached from the app's trace, like every judge
    call.

    Args:
        model: The embedding model; the configured ``embedding_model`` when ``None``.

    Returns:
        An async function ``(texts) -> vectors``; it raises
        :class:`~evaltrace.llm.config.JudgeNotConfiguredError` when no judge is configured.

    Example:
        >>> embed = judge_embedder("text-embedding-3-small")
    """

    async def embed(texts: list[str]) -> list[list[float]]:
        config = judge_config()
        client = judge_client(config, evaluator="SemanticAnswerSimilarity")
        chosen = model or config.embedding_model

        def create() -> Any:
            return client.caching.embeddings.create(model=chosen, input=texts)

        tokens = estimate_tokens(*texts)
        if client.is_async:
            response = await run_judge_call(config, create, tokens=tokens)
        else:
            response = await run_judge_call_in_thread(config, create, tokens=tokens)
        return _vectors(response)

    embed.__name__ = embed.__qualname__ = f"judge_embedder({model!r})"
    return embed


def local_embedder(model_name: str) -> Embedder:
    """An :data:`Embedder` running a local sentence-transformers model (``[embeddings]`` extra).

    The package and the model load on first use, in a worker thread; the model is kept for
    later calls.

    Args:
        model_name: A sentence-transformers model name or path, e.g. ``"all-MiniLM-L6-v2"``.

    Returns:
        A sync function ``(texts) -> vectors``; it raises
        :class:`~evaltrace.errors.MissingExtraError` when sentence-transformers is not
        installed (``pip install evaltrace[embeddings]``).

    Example:
        >>> embed = local_embedder("all-MiniLM-L6-v2")
    """
    lock = threading.Lock()
    loaded: list[Any] = []

    def embed(texts: list[str]) -> list[list[float]]:
        with lock:
            if not loaded:
                try:
                    module = importlib.import_module("sentence_transformers")
                except ImportError as exc:
                    raise MissingExtraError(
                        f"the local embedding model {model_name!r}",
                        "sentence-transformers",
                        "embeddings",
                    ) from exc
                loaded.append(module.SentenceTransformer(model_name))
        vectors = loaded[0].encode(texts)
        return [[float(x) for x in vector] for vector in vectors]

    embed.__name__ = embed.__qualname__ = f"local_embedder({model_name!r})"
    return embed


async def embed_texts(embed: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Embed ``texts`` with ``embed`` in batches, checking that one vector comes per text.

    A sync ``embed`` runs in a worker thread (context copied); an async one is awaited.

    Raises:
        ValueError: ``embed`` returned the wrong number of vectors.

    Example:
        >>> import anyio
        >>> anyio.run(embed_texts, lambda texts: [[1.0] for _ in texts], ["a", "b"])
        [[1.0], [1.0]]
    """
    vectors: list[list[float]] = []
    batch_texts = list(texts)
    for start in range(0, len(batch_texts), _EMBEDDING_BATCH):
        batch = batch_texts[start : start + _EMBEDDING_BATCH]
        result = await _call_embed(embed, batch)
        got = list(result)
        if len(got) != len(batch):
            raise ValueError(
                f"the embedder returned {len(got)} vectors for {len(batch)} texts; it must "
                "return one vector per text, in order"
            )
        vectors.extend([float(x) for x in vector] for vector in got)
    return vectors


async def _call_embed(embed: Embedder, texts: list[str]) -> Any:
    if is_async_callable(embed):
        return await embed(texts)
    context = contextvars.copy_context()
    result = await anyio.to_thread.run_sync(functools.partial(context.run, embed, texts))
    if isinstance(result, Awaitable):
        result = await result
    return result
