"""The metrics of pipeline evaluation: names, a registry users extend, the built-in calculators.

The built-in ones are recall, MRR, MAP, NDCG, exact match, token F1 and semantic similarity.

A calculator is a callable ``(result, *, component=None, output_key=None, **options)``
returning a :class:`~evaltrace.pipeline.MetricsResult` (or an awaitable of one); it reads the
pairs to compare with :meth:`EvaluationResult.output_pairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final, TypeAlias

from pydantic import JsonValue

from evaltrace.llm.embeddings import (
    Embedder,
    cosine_similarity,
    embed_texts,
    judge_embedder,
    local_embedder,
)
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
    ndcg,
    recall,
    reciprocal_rank,
)
from evaltrace.pipeline.result import EvaluationResult, MetricInputError, MetricsResult

__all__ = ["Metric", "MetricCalculator", "metric_calculator", "register_metric"]

# --- the metric registry ------------------------------------------------------------------------


class Metric(StrEnum):
    """The built-in metrics of :meth:`EvaluationResult.calculate_metrics`.

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


MetricCalculator: TypeAlias = Callable[..., Any]
"""Computes one metric: ``(result, *, component=None, output_key=None, **options)`` returning
a :class:`MetricsResult`, or an awaitable of one (an async metric such as ``SAS``)."""


_METRICS: dict[str, MetricCalculator] = {}


def register_metric(
    name: str, calculator: MetricCalculator, *, replace: bool = False
) -> MetricCalculator:
    """Make ``calculator`` available as ``calculate_metrics(name)``.

    Args:
        name: The metric's name (case-sensitive), e.g. ``"bleu"``.
        calculator: A callable ``(result, *, component=None, output_key=None, **options)``
            returning a :class:`MetricsResult` (or an awaitable of one).
        replace: Allow replacing a metric registered under the same name.

    Returns:
        ``calculator``, so the function can be used as a decorator body.

    Raises:
        ValueError: ``name`` is empty, or taken and ``replace`` is false.

    Example:
        >>> def longest(result, *, component=None, output_key=None):
        ...     scores = [float(len(str(r.output))) for r in result.records]
        ...     return MetricsResult.from_scores("longest", scores)
        >>> _ = register_metric("longest", longest)
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a metric name must be a non-empty string")
    if not callable(calculator):
        raise TypeError(f"the calculator of {name!r} must be callable, got {calculator!r}")
    if name in _METRICS and not replace:
        raise ValueError(f"a metric named {name!r} is already registered; pass replace=True")
    _METRICS[name] = calculator
    return calculator


def metric_calculator(name: str) -> MetricCalculator:
    """The calculator registered as ``name``.

    Raises:
        ValueError: No metric has that name; the message lists the registered ones.
    """
    try:
        return _METRICS[name]
    except KeyError:
        known = ", ".join(sorted(_METRICS))
        raise ValueError(
            f"unknown metric {name!r}; registered metrics: {known}. Pass a Metric member, a "
            "registered name, or a callable (result, **kwargs) -> MetricsResult"
        ) from None


# --- built-in calculators -----------------------------------------------------------------------

_Scorer: TypeAlias = Callable[[Any, Any, str], float]


def _score_pairs(
    result: EvaluationResult,
    metric: str,
    component: str | None,
    output_key: str | None,
    score: _Scorer,
    parameters: Mapping[str, JsonValue],
) -> MetricsResult:
    per_input: list[float | None] = []
    reasons: list[str | None] = []
    where = "the pipeline" if component is None else f"component {component!r}"
    for pair in result.output_pairs(component, output_key):
        if pair.missing is not None:
            per_input.append(None)
            reasons.append(pair.missing)
            continue
        per_input.append(score(pair.actual, pair.expected, f"input #{pair.index} ({where})"))
        reasons.append(None)
    return MetricsResult.from_scores(
        metric,
        per_input,
        component=component,
        output_key=output_key,
        reasons=reasons,
        parameters=parameters,
    )


def _documents(value: Any, what: str) -> list[Any]:
    if isinstance(value, list):
        return value
    raise MetricInputError(
        f"{what}: expected a list of documents, found {type(value).__name__} {value!r:.80}; "
        "pick the documents field with output_key="
    )


def _retrieval(fn: Callable[[list[Any], list[Any]], float], key: DocumentKey) -> _Scorer:
    """A scorer of document lists; the key is checked now, before any input is scored."""
    check_document_key(key)

    def score(actual: Any, expected: Any, where: str) -> float:
        retrieved = _documents(actual, f"{where}: the output")
        relevant = _documents(expected, f"{where}: the expected output")
        try:
            return fn(retrieved, relevant)
        except (DocumentKeyError, DocumentScoreError) as exc:
            raise MetricInputError(f"{where}: {exc}") from exc

    return score


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    raise MetricInputError(
        f"{what}: expected text, found {type(value).__name__} {value!r:.80}; pick the text "
        "field with output_key="
    )


def _references(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return [str(item) for item in value]
    raise MetricInputError(
        f"{what}: expected a string or a non-empty list of strings, found "
        f"{type(value).__name__} {value!r:.80}"
    )


def _recall_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    mode: RecallMode = DEFAULT_RECALL_MODE,
    key: DocumentKey = "content",
) -> MetricsResult:
    if mode not in ("single_hit", "multi_hit"):
        raise ValueError(f"unknown recall mode {mode!r}: use 'single_hit' or 'multi_hit'")
    scorer = _retrieval(lambda got, want: recall(got, want, mode, key=key), key)
    return _score_pairs(
        result, Metric.RECALL, component, output_key, scorer, {"mode": mode, "key": key}
    )


def _mrr_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    key: DocumentKey = "content",
) -> MetricsResult:
    scorer = _retrieval(lambda got, want: reciprocal_rank(got, want, key=key), key)
    return _score_pairs(result, Metric.MRR, component, output_key, scorer, {"key": key})


def _map_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    key: DocumentKey = "content",
) -> MetricsResult:
    scorer = _retrieval(lambda got, want: average_precision(got, want, key=key), key)
    return _score_pairs(result, Metric.MAP, component, output_key, scorer, {"key": key})


def _ndcg_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    k: int | None = None,
    key: DocumentKey = "content",
) -> MetricsResult:
    scorer = _retrieval(lambda got, want: ndcg(got, want, k, key=key), key)
    return _score_pairs(result, Metric.NDCG, component, output_key, scorer, {"k": k, "key": key})


def _em_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    normalize: bool = False,
) -> MetricsResult:
    def score(actual: Any, expected: Any, where: str) -> float:
        answer = _text(actual, f"{where}: the output")
        return exact_match(
            answer, _references(expected, f"{where}: the expected output"), normalize
        )

    return _score_pairs(result, Metric.EM, component, output_key, score, {"normalize": normalize})


def _f1_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    normalize: bool = True,
) -> MetricsResult:
    def score(actual: Any, expected: Any, where: str) -> float:
        answer = _text(actual, f"{where}: the output")
        return token_f1(answer, _references(expected, f"{where}: the expected output"), normalize)

    return _score_pairs(result, Metric.F1, component, output_key, score, {"normalize": normalize})


async def _sas_metric(
    result: EvaluationResult,
    *,
    component: str | None = None,
    output_key: str | None = None,
    embed: Embedder | None = None,
    model: str | None = None,
    local_model: str | None = None,
) -> MetricsResult:
    embedder = _sas_embedder(embed, model, local_model)
    where = "the pipeline" if component is None else f"component {component!r}"
    pairs = result.output_pairs(component, output_key)
    texts: dict[str, int] = {}
    wanted: list[tuple[str, list[str]] | None] = []
    for pair in pairs:
        if pair.missing is not None:
            wanted.append(None)
            continue
        label = f"input #{pair.index} ({where})"
        answer = _text(pair.actual, f"{label}: the output")
        references = _references(pair.expected, f"{label}: the expected output")
        for text in (answer, *references):
            texts.setdefault(text, len(texts))
        wanted.append((answer, references))
    vectors = await embed_texts(embedder, list(texts)) if texts else []
    per_input: list[float | None] = []
    for item in wanted:
        if item is None:
            per_input.append(None)
            continue
        answer, references = item
        best = max(
            cosine_similarity(vectors[texts[answer]], vectors[texts[reference]])
            for reference in references
        )
        per_input.append(max(0.0, min(1.0, best)))
    return MetricsResult.from_scores(
        Metric.SAS,
        per_input,
        component=component,
        output_key=output_key,
        reasons=[pair.missing for pair in pairs],
        parameters={"model": model or local_model},
    )


def _sas_embedder(embed: Embedder | None, model: str | None, local_model: str | None) -> Embedder:
    if embed is not None and local_model is not None:
        raise ValueError("give either embed= or local_model=, not both")
    if embed is not None:
        return embed
    if local_model is not None:
        return local_embedder(local_model)
    return judge_embedder(model)


_BUILT_IN: Final[dict[Metric, MetricCalculator]] = {
    Metric.RECALL: _recall_metric,
    Metric.MRR: _mrr_metric,
    Metric.MAP: _map_metric,
    Metric.NDCG: _ndcg_metric,
    Metric.EM: _em_metric,
    Metric.F1: _f1_metric,
    Metric.SAS: _sas_metric,
}
for _metric, _calculator in _BUILT_IN.items():
    register_metric(_metric.value, _calculator)
