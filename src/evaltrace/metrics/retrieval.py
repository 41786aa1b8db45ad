"""Ranking metrics for one retrieved list against the relevant documents.

Every function takes ``retrieved`` (the retriever's documents, best first) and ``relevant`` (the
ground truth), compares documents by a :data:`~evaltrace.metrics.documents.DocumentKey`, and
returns a float in ``[0, 1]``. Duplicates are handled the same way everywhere: the relevant set
is the set of *unique* relevant keys, and each relevant document is credited at most once, at its
first (best) rank; a repeated document still occupies its rank.

A document without the compared part (see :mod:`evaltrace.metrics.documents`) matches nothing,
as in Haystack: a retrieved one still occupies its rank, and a relevant one is left out of the
relevant set, since it can never be found.

Edge cases are the same for every function: an empty ``relevant`` list, or one where no
document has the compared part, gives ``0.0`` and an :class:`EmptyGroundTruthWarning` (there is
nothing to find, so the entry carries no signal); an empty ``retrieved`` list gives ``0.0``.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, SupportsIndex, TypeAlias

from evaltrace.metrics.documents import DocumentKey, document_keys, relevance_scores

__all__ = [
    "DEFAULT_RECALL_MODE",
    "EmptyGroundTruthWarning",
    "RecallMode",
    "average_precision",
    "check_rank_cutoff",
    "check_recall_mode",
    "ndcg",
    "recall",
    "reciprocal_rank",
]

RecallMode: TypeAlias = Literal["single_hit", "multi_hit"]
"""``"single_hit"``: was anything relevant found; ``"multi_hit"``: what share of it was."""

DEFAULT_RECALL_MODE: Final[RecallMode] = "single_hit"
"""The recall mode of :func:`recall`, ``DocumentRecall`` and ``Metric.RECALL`` when none is
given: single-hit, the default of Haystack's ``DocumentRecallEvaluator``."""


class EmptyGroundTruthWarning(UserWarning):
    """A metric was asked to score against an empty set of relevant documents or answers."""


@dataclass(frozen=True, kw_only=True)
class _Keys:
    """The compared keys of one retrieved list and its ground truth."""

    retrieved: list[Hashable | None]
    """The retrieved keys in rank order; ``None`` for a document without the key."""
    relevant: list[Hashable | None]
    """The relevant keys in ground-truth order; ``None`` for a document without the key."""
    unique_relevant: set[Hashable]
    """The relevant keys that can be found (duplicates and ``None`` left out)."""


def _prepare(
    retrieved: Sequence[object], relevant: Sequence[object], key: DocumentKey, metric: str
) -> _Keys | None:
    """Return the compared keys, or ``None`` when the score is 0 without looking further."""
    retrieved_keys = document_keys(retrieved, key, what="retrieved")
    relevant_keys = document_keys(relevant, key, what="relevant")
    unique_relevant = {doc for doc in relevant_keys if doc is not None}
    if not unique_relevant:
        if relevant_keys:
            why = f"none of the {len(relevant_keys)} relevant documents has {key!r}"
            fix = "give them that part or compare by another key"
        else:
            why = "the relevant documents are empty"
            fix = "give the entry its expected documents or leave it out of retrieval metrics"
        warnings.warn(
            f"{metric}: {why}, so the score is 0.0; {fix}",
            EmptyGroundTruthWarning,
            stacklevel=3,
        )
        return None
    if not retrieved_keys:
        return None
    return _Keys(retrieved=retrieved_keys, relevant=relevant_keys, unique_relevant=unique_relevant)


def check_recall_mode(mode: object) -> RecallMode:
    """Return ``mode`` when it is a :data:`RecallMode`, else raise.

    Raises:
        ValueError: ``mode`` is neither ``"single_hit"`` nor ``"multi_hit"``.

    Example:
        >>> check_recall_mode("multi_hit")
        'multi_hit'
    """
    if mode == "single_hit" or mode == "multi_hit":
        return mode
    raise ValueError(f"unknown recall mode {mode!r}: use 'single_hit' or 'multi_hit'")


def check_rank_cutoff(k: object) -> int | None:
    """Return the rank cut-off ``k`` as an ``int`` (``None`` for no cut-off), else raise.

    numpy integers are accepted; bools, floats and values below 1 are not.

    Raises:
        ValueError: ``k`` is not a positive integer or ``None``.

    Example:
        >>> check_rank_cutoff(5)
        5
    """
    if k is None:
        return None
    value = operator.index(k) if isinstance(k, SupportsIndex) else 0
    if isinstance(k, bool) or value < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return value


def recall(
    retrieved: Sequence[object],
    relevant: Sequence[object],
    mode: RecallMode = DEFAULT_RECALL_MODE,
    *,
    key: DocumentKey = "content",
) -> float:
    """Recall of the retrieved documents.

    With ``R`` the set of unique relevant keys and ``D`` the set of retrieved keys:

    * ``single_hit`` (the default, as in Haystack): ``1.0 if |R ∩ D| > 0 else 0.0``;
    * ``multi_hit``: ``|R ∩ D| / |R|``.

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents (duplicates count once).
        mode: ``"single_hit"`` (default) or ``"multi_hit"``.
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The recall in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`) when
        ``relevant`` is empty, ``0.0`` when ``retrieved`` is empty.

    Raises:
        ValueError: ``mode`` is unknown, or a document's key cannot be compared.

    Example:
        >>> recall(["a", "x", "b"], ["a", "b", "c", "d"], mode="multi_hit")
        0.5
    """
    check_recall_mode(mode)
    keys = _prepare(retrieved, relevant, key, "recall")
    if keys is None:
        return 0.0
    found = keys.unique_relevant.intersection(keys.retrieved)
    if mode == "single_hit":
        return 1.0 if found else 0.0
    return len(found) / len(keys.unique_relevant)


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
        ValueError: A document's key cannot be compared.

    Example:
        >>> reciprocal_rank(["x", "y", "a"], ["a"])
        0.3333333333333333
    """
    keys = _prepare(retrieved, relevant, key, "reciprocal_rank")
    if keys is None:
        return 0.0
    for rank, doc in enumerate(keys.retrieved, start=1):
        if doc in keys.unique_relevant:
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
        ValueError: A document's key cannot be compared.

    Example:
        >>> average_precision(["a", "x", "b"], ["a", "b"])  # (1/1 + 2/3) / 2
        0.8333333333333333
    """
    keys = _prepare(retrieved, relevant, key, "average_precision")
    if keys is None:
        return 0.0
    credited: set[Hashable] = set()
    total = 0.0
    for rank, doc in enumerate(keys.retrieved, start=1):
        if doc in keys.unique_relevant and doc not in credited:
            credited.add(doc)
            total += len(credited) / rank
    return total / len(keys.unique_relevant)


def ndcg(
    retrieved: Sequence[object],
    relevant: Sequence[object],
    k: int | None = None,
    *,
    key: DocumentKey = "content",
) -> float:
    """Normalised discounted cumulative gain, graded by the relevant documents' scores.

    Each relevant document has a relevance ``rel``: its ``score`` (Haystack's definition:
    a ``"score"`` key or ``score`` attribute, see
    :func:`~evaltrace.metrics.documents.relevance_scores`), or ``1`` for every relevant
    document when none has a score (binary relevance). A document listed twice as relevant
    keeps its highest score; the retrieved documents' own scores are not used. With
    ``gain(i) = rel`` of the document at rank ``i`` when it is relevant and not credited at
    an earlier rank (else ``0``), ``n = len(retrieved)`` (or ``min(k, len(retrieved))``), and
    ``rel₁ ≥ rel₂ ≥ ...`` the relevances of the unique relevant documents sorted best first::

        DCG  = sum(gain(i) / log2(i + 1) for i in 1..n)
        IDCG = sum(rel_j / log2(j + 1) for j in 1..m),   m = |R| (or min(|R|, k))
        NDCG = DCG / IDCG

    The gain is linear in the score (not ``2**rel - 1``), as in Haystack.

    Args:
        retrieved: The retrieved documents, best first.
        relevant: The relevant documents (duplicates count once); either all or none of them
            carry a ``score``.
        k: Only the first ``k`` ranks count (``None``: all of them). Must be positive.
        key: How documents are compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.

    Returns:
        The NDCG in ``[0, 1]``; ``0.0`` (with an :class:`EmptyGroundTruthWarning`) when
        ``relevant`` is empty or no relevant document has a score above 0, ``0.0`` when
        ``retrieved`` is empty.

    Raises:
        ValueError: ``k`` is not a positive integer, or a document's key cannot be compared.
        DocumentScoreError: Some relevant documents have a score and others none, or a score
            is not a finite number ``>= 0``.

    Example:
        >>> round(ndcg(["x", "a"], ["a"]), 4)  # (1/log2(3)) / (1/log2(2))
        0.6309
        >>> relevant = [{"content": "a", "score": 1}, {"content": "b", "score": 3}]
        >>> round(ndcg(["a", "b"], relevant), 4)  # (1/1 + 3/log2(3)) / (3/1 + 1/log2(3))
        0.7967
    """
    k = check_rank_cutoff(k)
    scores = relevance_scores(relevant)
    keys = _prepare(retrieved, relevant, key, "ndcg")
    if keys is None:
        return 0.0
    relevance: dict[Hashable, float] = {}
    for doc, score in zip(keys.relevant, scores or [1.0] * len(keys.relevant), strict=True):
        if doc is not None:
            relevance[doc] = max(score, relevance.get(doc, score))
    ideal = sorted(relevance.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 1) for rank, rel in enumerate(ideal, start=1))
    if idcg == 0.0:
        warnings.warn(
            "ndcg: no relevant document has a score above 0, so the score is 0.0; give the "
            "relevant documents positive scores, or none for binary relevance",
            EmptyGroundTruthWarning,
            stacklevel=2,
        )
        return 0.0
    ranked = keys.retrieved if k is None else keys.retrieved[:k]
    dcg = 0.0
    for rank, doc in enumerate(ranked, start=1):
        gain = relevance.pop(doc, None)  # credits each relevant document once
        if gain is not None:
            dcg += gain / math.log2(rank + 1)
    # DCG <= IDCG exactly; summing in another order can land one ulp above it
    return min(1.0, dcg / idcg)
