"""The metrics by name: one registry for the per-entry evaluators and pipeline evaluation.

A metric that compares an output with what it should be is a :class:`PairMetric`: it says
what both sides are (``"documents"``: the retrieved documents and the relevant ones;
``"answers"``: an answer text and the acceptable answers) and builds a :class:`Scoring` from
its options, checking them first so that a bad option fails before anything is scored. The
built-in ones are the :class:`Metric` members; the per-entry evaluators
(:class:`~evaltrace.metrics.DocumentMRR`, :class:`~evaltrace.metrics.AnswerF1`, ...) score
with the very same definitions, and pipeline evaluation
(:meth:`~evaltrace.pipeline.EvaluationResult.calculate_metrics`) looks them up by name.

:func:`register_metric` adds a metric under a name, directly or as a decorator: a
:class:`PairMetric`; a plain function ``(output, expected, **options) -> float`` together with
``compares=`` (made into a :class:`PairMetric`); or, without ``compares=``, any callable that
computes a metric over a whole pipeline evaluation (see :mod:`evaltrace.pipeline`).

The values compared are checked for their shape by :func:`as_documents`, :func:`as_answer`
and :func:`as_references`, which raise :class:`MetricInputError` naming what is wrong.

Example:
    >>> @register_metric("first_word_match", compares="answers", replace=True)
    ... def first_word_match(answer: str, references: list[str]) -> float:
    ...     first = answer.split()[:1]
    ...     return float(any(first == ref.split()[:1] for ref in references))
    >>> registered_metric("first_word_match").compares
    'answers'
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal, TypeAlias, TypeVar, overload

from pydantic import JsonValue

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.errors import EvaltraceError
from evaltrace.evals.display import short_text
from evaltrace.llm.embeddings import Embedder, judge_embedder
from evaltrace.metrics.answers import exact_match, token_f1
from evaltrace.metrics.documents import (
    DocumentKey,
    DocumentKeyError,
    DocumentScoreError,
    check_document_key,
)
from evaltrace.metrics.retrieval import (
    DEFAULT_RECALL_MODE,
    RecallMode,
    average_precision,
    check_rank_cutoff,
    check_recall_mode,
    ndcg,
    recall,
    reciprocal_rank,
)
from evaltrace.metrics.similarity import answer_similarities, closest_reference, fixed_embedder

__all__ = [
    "Compares",
    "Comparison",
    "Metric",
    "MetricInputError",
    "PairMetric",
    "RegisteredMetric",
    "Scoring",
    "as_answer",
    "as_documents",
    "as_references",
    "built_in",
    "metric_names",
    "register_metric",
    "registered_metric",
    "shown",
]

Compares: TypeAlias = Literal["documents", "answers"]
"""What a :class:`PairMetric` compares: ``"documents"`` (a list of retrieved documents with
the relevant documents) or ``"answers"`` (an answer text with the acceptable answers)."""

_SHOWN_WIDTH: Final = 80


class MetricInputError(EvaltraceError, ValueError):
    """A value compared by a metric has the wrong shape (the message names where it is)."""


class Metric(StrEnum):
    """The built-in metrics, by registered name.

    Example:
        >>> Metric("mrr") is Metric.MRR
        True
    """

    RECALL = "recall"
    """Document recall; options ``mode`` (``"single_hit"`` default, ``"multi_hit"``), ``key``."""
    MRR = "mrr"
    """Mean reciprocal rank of the first relevant document; option ``key``."""
    MAP = "map"
    """Mean average precision; option ``key``."""
    NDCG = "ndcg"
    """Mean NDCG, graded by the expected documents' scores when they have them (else binary);
    options ``k``, ``key``."""
    EM = "em"
    """Exact match of text answers; option ``normalize`` (default ``False``)."""
    F1 = "f1"
    """SQuAD token F1 of text answers; option ``normalize`` (default ``True``)."""
    SAS = "sas"
    """Semantic answer similarity; options ``embed``, ``model``, ``local_model``."""


# --- what a metric compares ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """One output and what it should be, both already of the shape the metric compares."""

    output: Any
    """The retrieved documents (a list), or the answer (a string)."""
    expected: Any
    """The relevant documents (a list), or the acceptable answers (a list of strings)."""
    label: str
    """How an error names this comparison, e.g. ``"input #2 (component 'search')"``."""


def shown(value: object, width: int = _SHOWN_WIDTH) -> str:
    """``value`` on one line for a message, cut to about ``width`` characters.

    A text is quoted, so that case and spaces show; anything else is shown as JSON.

    Example:
        >>> shown("Paris"), shown(["a", "b"])
        ("'Paris'", '["a", "b"]')
    """
    if isinstance(value, str):
        return safe_repr(short_text(value, width))
    return short_text(value, width)


def _found(value: object) -> str:
    return f"{type_name(value)} {shown(value)}"


def as_documents(value: object, what: str, fix: str) -> list[Any]:
    """``value`` as a list of documents, else raise.

    Args:
        value: The documents (a list or a tuple).
        what: How the message names the value, e.g. ``"input #0 (the pipeline): the output"``.
        fix: What the user can do about it, e.g. ``"pick the documents with output_key="``.

    Raises:
        MetricInputError: ``value`` is not a list.

    Example:
        >>> as_documents(("a", "b"), "the retrieved documents", "")
        ['a', 'b']
    """
    if isinstance(value, list | tuple):
        return list(value)
    raise MetricInputError(f"{what}: expected a list of documents, found {_found(value)}; {fix}")


def as_answer(value: object, what: str, fix: str) -> str:
    """``value`` when it is text, else raise (arguments as for :func:`as_documents`).

    Raises:
        MetricInputError: ``value`` is not a string.
    """
    if isinstance(value, str):
        return value
    raise MetricInputError(f"{what}: expected text, found {_found(value)}; {fix}")


def as_references(value: object, what: str) -> list[str]:
    """The acceptable answers: one string, or a list of strings (an empty list scores 0.0).

    Args:
        value: The expected answer(s).
        what: How the message names the value, e.g. ``"the expectation"``.

    Raises:
        MetricInputError: ``value`` is neither a string nor a list of strings.

    Example:
        >>> as_references("Paris", "the expectation")
        ['Paris']
    """
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return [str(item) for item in value]
    raise MetricInputError(
        f"{what}: expected the acceptable answers, a string or a list of strings, found "
        f"{_found(value)}"
    )


# --- metric definitions -------------------------------------------------------------------------

BatchScorer: TypeAlias = Callable[[Sequence[Comparison]], "list[float] | Awaitable[list[float]]"]
"""Scores comparisons: one score in ``[0, 1]`` per comparison, in order (or an awaitable)."""


@dataclass(frozen=True, kw_only=True)
class Scoring:
    """A metric with its options checked, ready to score comparisons."""

    score: BatchScorer
    """Scores every comparison given at once, so that it may batch (semantic similarity
    embeds all texts in one call)."""
    parameters: dict[str, JsonValue] = field(default_factory=dict)
    """The options in force, defaults included, for reports."""


@dataclass(frozen=True, kw_only=True)
class PairMetric:
    """A metric that scores outputs against what they should be.

    Example:
        >>> metric = PairMetric(compares="answers", build=lambda: Scoring(
        ...     score=lambda pairs: [float(p.output in p.expected) for p in pairs]))
    """

    compares: Compares
    """What both sides are (see :data:`Compares`)."""
    build: Callable[..., Scoring]
    """``(**options) -> Scoring``; raises on a bad option before anything is scored."""


RegisteredMetric: TypeAlias = PairMetric | Callable[..., Any]
"""What a name stands for: a :class:`PairMetric`, or a whole-evaluation metric callable."""


def _each(score: Callable[[Any, Any], float], parameters: dict[str, JsonValue]) -> Scoring:
    """A :class:`Scoring` that scores one comparison at a time; errors name the comparison."""

    def score_all(comparisons: Sequence[Comparison]) -> list[float]:
        scores: list[float] = []
        for comparison in comparisons:
            try:
                scores.append(score(comparison.output, comparison.expected))
            except (DocumentKeyError, DocumentScoreError) as exc:
                raise type(exc)(f"{comparison.label}: {exc}") from exc
        return scores

    return Scoring(score=score_all, parameters=parameters)


def _recall(*, mode: RecallMode = DEFAULT_RECALL_MODE, key: DocumentKey = "content") -> Scoring:
    mode = check_recall_mode(mode)
    check_document_key(key)
    return _each(lambda got, want: recall(got, want, mode, key=key), {"mode": mode, "key": key})


def _ranked(function: Callable[..., float]) -> Callable[..., Scoring]:
    """The builder of a ranking metric whose only option is the document key."""

    def build(*, key: DocumentKey = "content") -> Scoring:
        check_document_key(key)
        return _each(lambda got, want: function(got, want, key=key), {"key": key})

    return build


def _ndcg(*, k: int | None = None, key: DocumentKey = "content") -> Scoring:
    k = check_rank_cutoff(k)
    check_document_key(key)
    return _each(lambda got, want: ndcg(got, want, k, key=key), {"k": k, "key": key})


def _em(*, normalize: bool = False) -> Scoring:
    return _each(
        lambda answer, references: exact_match(answer, references, normalize),
        {"normalize": normalize},
    )


def _f1(*, normalize: bool = True) -> Scoring:
    return _each(
        lambda answer, references: token_f1(answer, references, normalize),
        {"normalize": normalize},
    )


def _sas(
    *, embed: Embedder | None = None, model: str | None = None, local_model: str | None = None
) -> Scoring:
    embedder = fixed_embedder(embed, local_model) or judge_embedder(model)

    async def score_all(comparisons: Sequence[Comparison]) -> list[float]:
        pairs = [(comparison.output, comparison.expected) for comparison in comparisons]
        rows = await answer_similarities(embedder, pairs)
        return [max(0.0, min(1.0, closest_reference(row)[1])) for row in rows]

    return Scoring(score=score_all, parameters={"model": model or local_model})


def _per_pair(score: Callable[..., float], compares: Compares) -> PairMetric:
    """A :class:`PairMetric` from a function ``(output, expected, **options) -> float``."""
    try:
        signature: inspect.Signature | None = inspect.signature(score)
    except (TypeError, ValueError):  # a builtin without one: its call checks the options
        signature = None

    def build(**options: Any) -> Scoring:
        if signature is not None:
            try:
                signature.bind(None, None, **options)
            except TypeError as exc:
                raise TypeError(f"options {sorted(options)} do not fit {signature}: {exc}") from exc
        return _each(functools.partial(score, **options), dict(options))

    return PairMetric(compares=compares, build=build)


_METRICS: dict[str, RegisteredMetric] = {
    Metric.RECALL.value: PairMetric(compares="documents", build=_recall),
    Metric.MRR.value: PairMetric(compares="documents", build=_ranked(reciprocal_rank)),
    Metric.MAP.value: PairMetric(compares="documents", build=_ranked(average_precision)),
    Metric.NDCG.value: PairMetric(compares="documents", build=_ndcg),
    Metric.EM.value: PairMetric(compares="answers", build=_em),
    Metric.F1.value: PairMetric(compares="answers", build=_f1),
    Metric.SAS.value: PairMetric(compares="answers", build=_sas),
}


# --- the registry -------------------------------------------------------------------------------

_M = TypeVar("_M", bound="PairMetric | Callable[..., Any]")


@overload
def register_metric(
    name: str,
    metric: None = None,
    *,
    compares: Compares | None = None,
    replace: bool = False,
) -> Callable[[_M], _M]: ...
@overload
def register_metric(
    name: str,
    metric: _M,
    *,
    compares: Compares | None = None,
    replace: bool = False,
) -> _M: ...
def register_metric(
    name: str,
    metric: RegisteredMetric | None = None,
    *,
    compares: Compares | None = None,
    replace: bool = False,
) -> Any:
    """Make ``metric`` available under ``name``, e.g. ``calculate_metrics(name)``.

    Args:
        name: The metric's name (case-sensitive), e.g. ``"bleu"``.
        metric: A :class:`PairMetric`; a function ``(output, expected, **options) -> float``
            with ``compares=``; or, without ``compares=``, a callable
            ``(result, *, component=None, output_key=None, **options)`` computing a metric over
            a whole pipeline evaluation. Omit it to get a decorator.
        compares: ``"documents"`` or ``"answers"``: makes a per-pair function of ``metric``
            into a :class:`PairMetric` whose options are the function's keyword arguments.
        replace: Allow replacing a metric registered under the same name (built-ins included).

    Returns:
        ``metric`` itself, or a decorator that registers and returns its argument.

    Raises:
        ValueError: ``name`` is empty, or taken and ``replace`` is false, or ``compares`` is
            not one of the two kinds.
        TypeError: ``metric`` is not callable, or is a :class:`PairMetric` given ``compares``.

    Example:
        >>> @register_metric("longest_answer", replace=True)
        ... def longest_answer(result, *, component=None, output_key=None):
        ...     ...
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a metric name must be a non-empty string, got {name!r}")
    name = str(name)  # a Metric member names its built-in
    if name in _METRICS and not replace:
        raise ValueError(f"a metric named {name!r} is already registered; pass replace=True")
    if compares is not None and compares not in ("documents", "answers"):
        raise ValueError(f"compares must be 'documents' or 'answers', got {compares!r}")

    def register(target: _M) -> _M:
        if isinstance(target, PairMetric):
            if compares is not None:
                raise TypeError(
                    f"metric {name!r} is a PairMetric, which says what it compares itself; "
                    "leave out compares="
                )
            _METRICS[name] = target
        elif not callable(target):
            raise TypeError(f"the metric {name!r} must be callable, got {type_name(target)}")
        elif compares is not None:
            _METRICS[name] = _per_pair(target, compares)
        else:
            _METRICS[name] = target
        return target

    return register if metric is None else register(metric)


def registered_metric(name: str) -> RegisteredMetric:
    """The metric registered as ``name``.

    Raises:
        ValueError: No metric has that name; the message lists the registered ones.

    Example:
        >>> registered_metric("mrr").compares
        'documents'
    """
    try:
        return _METRICS[str(name)]
    except KeyError:
        raise ValueError(
            f"unknown metric {name!r}; registered metrics: {', '.join(metric_names())}. Pass a "
            "Metric member, a registered name, or a callable (result, **kwargs) -> MetricsResult"
        ) from None


def metric_names() -> list[str]:
    """The registered metric names, sorted.

    Example:
        >>> "f1" in metric_names()
        True
    """
    return sorted(_METRICS)


def built_in(metric: Metric) -> PairMetric:
    """The built-in definition of ``metric``, whatever is registered under its name now.

    The per-entry evaluators score with these, so that replacing a name in the registry does
    not change what ``DocumentMRR`` means.
    """
    return _BUILT_IN[metric]


_BUILT_IN: Final[dict[Metric, PairMetric]] = {
    member: definition
    for member in Metric
    if isinstance(definition := _METRICS[member.value], PairMetric)
}
