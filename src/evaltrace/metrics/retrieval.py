"""Ranking metrics for one retrieved list against the relevant documents.

Every function takes ``retrieved`` (the retriever's documents, best first) and ``relevant`` (the
ground truth), compares documents by a :data:`~evaltrace.metrics.documents.DocumentKey`, and
returns a float in ``[0, 1]``. Duplicates are handled the same way everywhere: the relevant set
is the set of *unique* relevant keys, and each relevant document is credited at most once, at its
first (best) rank; a repeated document still occupies its rank.

Edge cases are the same for every function: an empty ``relevant`` list gives ``0.0`` and an
:class:`EmptyGroundTruthWarning` (there is nothing to find, so the entry carries no signal); an
empty ``retrieved`` list gives ``0.0``.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Hashable, Sequence
from typing import Literal, TypeAlias

from evaltrace.metrics.documents import DocumentKey, document_keys

__all__ = [
    "EmptyGroundTruthWarning",
    "RecallMode",
    "average_precision",
    "ndcg",
    "recall",
    "reciprocal_rank",
]

RecallMode: TypeAlias = Literal["single_hit", "multi_hit"]
"""``"single_hit"``: was anything relevant found; ``"multi_hit"``: what share of it was."""


class EmptyGroundTruthWarning(UserWarning):
    """A metric was asked to score against an empty set of relevant documents or answers."""


def _prepare(
    retrieved: Sequence[object], relevant: Sequence[object], key: DocumentKey, metric: str
) -> tuple[list[Hashable], set[Hashable]] | None:
    """Return the retrieved keys and the unique relevant keys, or ``None`` when the score is 0."""
    retrieved_keys = document_keys(retrieved, key, what="retrieved")
    relevant_keys = set(document_keys(relevant, key, what="relevant"))
    if not relevant_keys:
        warnings.warn(
            f"{metric}: the relevant documents are empty, so the score is 0.0; give the entry "
            "its expected documents or leave it out of retrieval metrics",
            EmptyGroundTruthWarning,
            stacklevel=3,
        )
        return None
    if not retrieved_keys:
        return None
    return retrieved_keys, relevant_keys


def _positive_int(k: int) -> int:
    """``k`` as an ``int`` (numpy integers accepted); bools, floats and values < 1 rejected."""
    try:
        value = operator.index(k)
    except TypeError:
        value = 0
    if isinstance(k, bool) or value < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return value


def recall(
    retrieved: Sequence[object],
    relevant: Sequence[object],
    mode: RecallMode = "single_hit",
    *,
    key: DocumentKey = "content",
) -> float:
    """Recall of the retrieved documents.

    With ``R`` the set of unique relevant keys and ``D`` the set of retrieved keys:

    * ``single_hit``: ``1.0 if |R ∩ D| > 0 else 0.0``;
    * ``multi_hit``: ``|R ∩ D| / |R|``.

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents (duplicates count once).
        mode: ``"single_hit"`` or ``"multi_hit"``.
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The recall in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`) when
        ``relevant`` is empty, ``0.0`` when ``retrieved`` is empty.

    Raises:
        ValueError: ``mode`` is unknown, or a document lacks ``key``.

    Example:
        >>> recall(["a", "x", "b"], ["a", "b", "c", "d"], mode="multi_hit")
        0.5
    """
    if mode not in ("single_hit", "multi_hit"):
        raise ValueError(f"unknown recall mode {mode!r}: use 'single_hit' or 'multi_hit'")
    prepared = _prepare(retrieved, relevant, key, "recall")
    if prepared is None:
        return 0.0
    retrieved_keys, relevant_keys = prepared
    found = relevant_keys.intersection(retrieved_keys)
    if mode == "single_hit":
        return 1.0 if found else 0.0
    return len(found) / len(relevant_keys)


def reciprocal_rank(
    retrieved: Sequence[object], relevant: Sequence[object], *, key: DocumentKey = "content"
) -> float:
    """Reciprocal rank of the first relevant document (the per-query term of MRR).

    ``1 / rank`` where ``rank`` is the 1-based position of the first retrieved document whose key
    is relevant; ``0.0`` when none is.

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents.
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The reciprocal rank in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`) when
        ``relevant`` is empty, ``0.0`` when ``retrieved`` is empty.

    Raises:
        ValueError: A document lacks ``key``.

    Example:
        >>> reciprocal_rank(["x", "y", "a"], ["a"])
        0.3333333333333333
    """
    prepared = _prepare(retrieved, relevant, key, "reciprocal_rank")
    if prepared is None:
        return 0.0
    retrieved_keys, relevant_keys = prepared
    for rank, doc in enumerate(retrieved_keys, start=1):
        if doc in relevant_keys:
            return 1.0 / rank
    return 0.0


def average_precision(
    retrieved: Sequence[object], relevant: Sequence[object], *, key: DocumentKey = "content"
) -> float:
    """Average precision (the per-query term of MAP).

    Walking the retrieved list with ranks ``i = 1, 2, ...``, a rank is a *hit* when its document
    is relevant and not credited at an earlier rank. With ``hits(i)`` the number of hits at ranks
    ``1..i``::

        AP = sum(hits(i) / i for every hit rank i) / |R|

    where ``|R|`` is the number of unique relevant documents. A repeated document is not a hit
    again, but it occupies its rank (it lowers the precision of later hits).

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents (duplicates count once).
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The average precision in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`)
        when ``relevant`` is empty, ``0.0`` when ``retrieved`` is empty.

    Raises:
        ValueError: A document lacks ``key``.

    Example:
        >>> average_precision(["a", "x", "b"], ["a", "b"])  # (1/1 + 2/3) / 2
        0.8333333333333333
    """
    prepared = _prepare(retrieved, relevant, key, "average_precision")
    if prepared is None:
        return 0.0
    retrieved_keys, relevant_keys = prepared
    credited: set[Hashable] = set()
    total = 0.0
    for rank, doc in enumerate(retrieved_keys, start=1):
        if doc in relevant_keys and doc not in credited:
            credited.add(doc)
            total += len(credited) / rank
    return total / len(relevant_keys)


def ndcg(
    retrieved: Sequence[object],
    relevant: Sequence[object],
    k: int | None = None,
    *,
    key: DocumentKey = "content",
) -> float:
    """Normalised discounted cumulative gain with binary relevance.

    With ``rel(i) = 1`` when the document at rank ``i`` is relevant and not credited at an earlier
    rank (else ``0``), and ``n = len(retrieved)`` (or ``min(k, len(retrieved))``)::

        DCG  = sum(rel(i) / log2(i + 1) for i in 1..n)
        IDCG = sum(1 / log2(i + 1) for i in 1..m),   m = |R| (or min(|R|, k))
        NDCG = DCG / IDCG

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents (duplicates count once).
        k: Only the first ``k`` ranks count (``None``: all of them). Must be positive.
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The NDCG in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`) when
        ``relevant`` is empty, ``0.0`` when ``retrieved`` is empty.

    Raises:
        ValueError: ``k`` is not a positive integer, or a document lacks ``key``.

    Example:
        >>> round(ndcg(["x", "a"], ["a"]), 4)  # (1/log2(3)) / (1/log2(2))
        0.6309
    """
    if k is not None:
        k = _positive_int(k)
    prepared = _prepare(retrieved, relevant, key, "ndcg")
    if prepared is None:
        return 0.0
    retrieved_keys, relevant_keys = prepared
    ranked = retrieved_keys if k is None else retrieved_keys[:k]
    credited: set[Hashable] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranked, start=1):
        if doc in relevant_keys and doc not in credited:
            credited.add(doc)
            dcg += 1.0 / math.log2(rank + 1)
    ideal_hits = len(relevant_keys) if k is None else min(len(relevant_keys), k)
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal_hits + 1))
    return dcg / idcg
