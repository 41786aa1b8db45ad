"""Answer metrics: exact match and SQuAD-style token F1.

``reference`` may be one answer or several acceptable answers; with several, the score is the
best score against any of them (the SQuAD convention). An empty list of references gives ``0.0``
and an :class:`~evaltrace.metrics.retrieval.EmptyGroundTruthWarning`.
"""

from __future__ import annotations

import re
import string
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from evaltrace.metrics.retrieval import EmptyGroundTruthWarning

__all__ = ["exact_match", "normalize_answer", "token_f1"]

_ASCII_PUNCTUATION: Final = str.maketrans("", "", string.punctuation)
_ARTICLES: Final = re.compile(r"\b(?:a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Normalise an answer the way SQuAD's evaluation script does.

    In order: lower-case; remove punctuation (ASCII punctuation as in SQuAD, plus any Unicode
    punctuation such as curly quotes and dashes); replace the articles ``a``, ``an`` and ``the``
    (whole words) with spaces; collapse white space runs to single spaces and trim the ends.

    Args:
        text: The answer text.

    Returns:
        The normalised text.

    Example:
        >>> normalize_answer("The  Eiffel-Tower, in Paris!")
        'eiffeltower in paris'
    """
    text = text.lower().translate(_ASCII_PUNCTUATION)
    if not text.isascii():
        text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


def _best_over_references(
    metric: str,
    prediction: str,
    reference: str | Sequence[str],
    score: Callable[[str, str], float],
) -> float:
    if isinstance(reference, str):
        return score(prediction, reference)
    if not reference:
        warnings.warn(
            f"{metric}: no reference answers were given, so the score is 0.0",
            EmptyGroundTruthWarning,
            stacklevel=3,
        )
        return 0.0
    return max(score(prediction, ref) for ref in reference)


def exact_match(prediction: str, reference: str | Sequence[str], normalize: bool = False) -> float:
    """Exact match: ``1.0`` when the prediction equals the reference, else ``0.0``.

    ``EM = 1.0 if f(prediction) == f(reference) else 0.0`` where ``f`` is
    :func:`normalize_answer` when ``normalize`` is true and the identity otherwise. With several
    references the score is the maximum over them.

    Args:
        prediction: The predicted answer.
        reference: The expected answer, or a list of acceptable answers.
        normalize: Compare SQuAD-normalised texts instead of the raw strings.

    Returns:
        ``1.0`` or ``0.0``.

    Example:
        >>> exact_match("The Beatles!", "beatles", normalize=True)
        1.0
    """

    def score(pred: str, ref: str) -> float:
        if normalize:
            return 1.0 if normalize_answer(pred) == normalize_answer(ref) else 0.0
        return 1.0 if pred == ref else 0.0

    return _best_over_references("exact_match", prediction, reference, score)


def token_f1(prediction: str, reference: str | Sequence[str], normalize: bool = True) -> float:
    """Token-level F1 between the prediction and the reference, as in SQuAD.

    Tokens are the white-space separated words (after :func:`normalize_answer` when
    ``normalize`` is true). With ``common`` the size of the multiset intersection of the two token
    lists (a token counts as often as it occurs in both)::

        P  = common / len(prediction_tokens)
        R  = common / len(reference_tokens)
        F1 = 2 * P * R / (P + R)          (0.0 when common == 0)

    Both token lists empty gives ``1.0``; exactly one empty gives ``0.0``. With several references
    the score is the maximum over them.

    Args:
        prediction: The predicted answer.
        reference: The expected answer, or a list of acceptable answers.
        normalize: Normalise both texts with :func:`normalize_answer` before splitting.

    Returns:
        The F1 in ``[0, 1]``.

    Example:
        >>> token_f1("the cat sat", "a cat sat down")  # P = 2/2, R = 2/3
        0.8
    """

    def score(pred: str, ref: str) -> float:
        if normalize:
            pred, ref = normalize_answer(pred), normalize_answer(ref)
        pred_tokens, ref_tokens = pred.split(), ref.split()
        if not pred_tokens or not ref_tokens:
            return 1.0 if not pred_tokens and not ref_tokens else 0.0
        common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
        if common == 0:
            return 0.0
        precision = common / len(pred_tokens)
        recall = common / len(ref_tokens)
        return 2 * precision * recall / (precision + recall)

    return _best_over_references("token_f1", prediction, reference, score)
