"""Semantic answer similarity: the cosine of an answer's and its references' embeddings.

Shared by :class:`~evaltrace.metrics.SemanticAnswerSimilarity` and ``Metric.SAS``; the
embedding functions themselves are in :mod:`evaltrace.llm.embeddings`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from evaltrace.llm.embeddings import Embedder, cosine_similarity, embed_texts, local_embedder
from evaltrace.metrics.retrieval import EmptyGroundTruthWarning

__all__ = ["answer_similarities", "closest_reference", "fixed_embedder"]


def fixed_embedder(embed: Embedder | None, local_model: str | None) -> Embedder | None:
    """The embedder chosen by the arguments of semantic similarity, if they choose one.

    Args:
        embed: Any embedding function ``(texts) -> vectors``, sync or async.
        local_model: A sentence-transformers model name (``[embeddings]`` extra), loaded on
            first use.

    Returns:
        ``embed``, or the local model's embedder, or ``None`` when neither is given: then the
        judge client's embeddings endpoint is meant, read when the texts are embedded.

    Raises:
        ValueError: Both are given.
        TypeError: ``embed`` is not callable.

    Example:
        >>> fixed_embedder(None, None) is None
        True
    """
    if embed is not None and local_model is not None:
        raise ValueError("give either embed= or local_model=, not both")
    if embed is not None:
        if not callable(embed):
            raise TypeError(f"embed must be a callable (texts) -> vectors, got {embed!r}")
        return embed
    return local_embedder(local_model) if local_model is not None else None


async def answer_similarities(
    embed: Embedder, pairs: Sequence[tuple[str, Sequence[str]]]
) -> list[list[float]]:
    """Cosine similarity of each answer with each of its acceptable answers.

    Every distinct text is embedded once, in one call of ``embed`` (batched by
    :func:`~evaltrace.llm.embeddings.embed_texts`).

    Args:
        embed: The embedding function.
        pairs: ``(answer, references)`` pairs.

    Returns:
        Per pair, one similarity in ``[-1, 1]`` per reference, in order.

    Example:
        >>> import anyio
        >>> anyio.run(answer_similarities, lambda texts: [[1.0, 0.0] for _ in texts],
        ...           [("yes", ["yes", "sure"])])
        [[1.0, 1.0]]
    """
    index: dict[str, int] = {}
    for answer, references in pairs:
        for text in (answer, *references):
            index.setdefault(text, len(index))
    vectors = await embed_texts(embed, list(index)) if index else []
    return [
        [
            cosine_similarity(vectors[index[answer]], vectors[index[reference]])
            for reference in references
        ]
        for answer, references in pairs
    ]


def closest_reference(similarities: Sequence[float]) -> tuple[int | None, float]:
    """The position and similarity of the closest reference (the first of equals).

    No reference gives ``(None, 0.0)`` and an :class:`EmptyGroundTruthWarning`, as the other
    answer metrics do.

    Example:
        >>> closest_reference([0.2, 0.9, 0.9])
        (1, 0.9)
    """
    if not similarities:
        warnings.warn(
            "semantic_similarity: no reference answers were given, so the score is 0.0",
            EmptyGroundTruthWarning,
            stacklevel=2,
        )
        return None, 0.0
    best = max(range(len(similarities)), key=similarities.__getitem__)
    return best, similarities[best]
