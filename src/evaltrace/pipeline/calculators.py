"""Scoring a pipeline evaluation's pairs with a registered metric.

The metrics themselves (recall, MRR, MAP, NDCG, exact match, token F1, semantic similarity, and
the ones users add) live in the one registry of :mod:`evaltrace.metrics.registry`. Here a
:class:`~evaltrace.metrics.PairMetric` meets a pipeline evaluation: each input's pair is checked
for the shape the metric compares, scored, and gathered into a :class:`MetricsResult` with one
entry per input (``None`` and a reason for an input that cannot be scored).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from evaltrace._safe_text import type_name
from evaltrace.metrics.registry import (
    Compares,
    Comparison,
    Scoring,
    as_answer,
    as_documents,
    as_references,
)
from evaltrace.pipeline.metrics_result import MetricScoreCountError, MetricsResult, OutputPair

__all__ = ["MetricCalculator", "PairScoring"]

MetricCalculator: TypeAlias = Callable[..., Any]
"""A metric over a whole pipeline evaluation: ``(result, *, component=None, output_key=None,
**options)`` returning a :class:`MetricsResult`, or an awaitable of one."""

_FIXES: Final[dict[Compares, str]] = {
    "documents": "pick the documents field with output_key=",
    "answers": "pick the text field with output_key=",
}


@dataclass(frozen=True, kw_only=True)
class PairScoring:
    """One metric's work on one pipeline evaluation: the comparisons, then the result."""

    metric: str
    """The metric's name."""
    scoring: Scoring
    """The metric, its options checked."""
    pairs: list[OutputPair]
    """Every input's pair, in input order."""
    comparisons: list[Comparison]
    """The pairs that can be scored, checked for shape."""
    component: str | None
    """The component scored, or ``None`` for the pipeline's final output."""
    output_key: str | None
    """The field compared, if one was picked."""

    @classmethod
    def prepare(
        cls,
        metric: str,
        compares: Compares,
        scoring: Scoring,
        pairs: list[OutputPair],
        *,
        component: str | None,
        output_key: str | None,
    ) -> PairScoring:
        """Check the shape of every pair that can be scored.

        Raises:
            MetricInputError: A compared value has the wrong shape (names the input).
        """
        where = "the pipeline" if component is None else f"component {component!r}"
        comparisons = [
            _comparison(compares, pair, f"input #{pair.index} ({where})")
            for pair in pairs
            if pair.missing is None
        ]
        return cls(
            metric=metric,
            scoring=scoring,
            pairs=pairs,
            comparisons=comparisons,
            component=component,
            output_key=output_key,
        )

    def result(self, scores: Sequence[float]) -> MetricsResult:
        """The :class:`MetricsResult` of the scores of :attr:`comparisons`, in their order.

        Raises:
            MetricScoreCountError: The metric gave another number of scores.
        """
        if len(scores) != len(self.comparisons):
            raise MetricScoreCountError(
                f"the metric {self.metric!r} gave {len(scores)} scores for "
                f"{len(self.comparisons)} comparisons; it must score each one, in order "
                f"(got {type_name(scores)})"
            )
        given = iter(scores)
        per_input = [None if pair.missing is not None else next(given) for pair in self.pairs]
        return MetricsResult.from_scores(
            self.metric,
            per_input,
            component=self.component,
            output_key=self.output_key,
            reasons=[pair.missing for pair in self.pairs],
            parameters=self.scoring.parameters,
        )


def _comparison(compares: Compares, pair: OutputPair, label: str) -> Comparison:
    fix = _FIXES[compares]
    output: Any
    expected: Any
    if compares == "documents":
        output = as_documents(pair.actual, f"{label}: the output", fix)
        expected = as_documents(pair.expected, f"{label}: the expected output", fix)
    else:
        output = as_answer(pair.actual, f"{label}: the output", fix)
        expected = as_references(pair.expected, f"{label}: the expected output")
    return Comparison(output=output, expected=expected, label=label)
