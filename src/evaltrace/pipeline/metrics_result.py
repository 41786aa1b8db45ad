"""What a metric of a pipeline evaluation compares, and what it gives back.

:class:`OutputPair` is one input's output and expected value (or why there is nothing to
compare); :class:`MetricsResult` is one metric over every input: the mean and each input's
score, saved as JSON or CSV.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from evaltrace.errors import EvaltraceError

__all__ = [
    "InvalidMetricResultError",
    "MetricResultTypeError",
    "MetricScoreCountError",
    "MetricsResult",
    "OutputPair",
]

_SUFFIXES: Final = (".json", ".csv")


class InvalidMetricResultError(EvaltraceError):
    """A metric returned something other than a :class:`MetricsResult` with a score per input.

    Raised as one of its two kinds: :class:`MetricResultTypeError` (not a result) or
    :class:`MetricScoreCountError` (not one score per input).
    """


class MetricResultTypeError(InvalidMetricResultError, TypeError):
    """A metric returned something that is not a :class:`MetricsResult`."""


class MetricScoreCountError(InvalidMetricResultError, ValueError):
    """A metric gave more or fewer scores than there are inputs (or comparisons) to score.

    A ``ValueError``, as Haystack raises for a wrong number of scores.
    """


@dataclass(kw_only=True, frozen=True)
class OutputPair:
    """What a metric compares for one input, or why there is nothing to compare."""

    index: int
    """The position of the input."""
    actual: Any = None
    """The output (of the pipeline or of the component), after ``output_key``; kept when
    only the expected value is missing, so that blind metrics can use it."""
    expected: Any = None
    """The expected value, after ``output_key``."""
    missing: str | None = None
    """Why the input cannot be scored (no expected output, ...); ``None`` when it can."""


class MetricsResult(BaseModel):
    """One metric over the inputs of a pipeline evaluation: the mean and every input's score.

    Example:
        >>> result = MetricsResult.from_scores("f1", [1.0, None, 0.5])
        >>> result.score, result.n_scored
        (0.75, 2)
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    """The metric's name (``"recall"``, ``"mrr"``, ..., or a custom metric's name)."""
    component: str | None = None
    """The component whose output was scored; ``None`` for the pipeline's final output."""
    output_key: str | None = None
    """The field of the outputs that was compared, if one was picked."""
    score: float | None
    """The mean of the per-input scores that could be computed; ``None`` when none could."""
    per_input: list[float | None]
    """One score per input, in input order; ``None`` when it could not be computed."""
    n_scored: int
    """How many inputs have a score."""
    reasons: list[str | None] = Field(default_factory=list)
    """Per input, why it has no score (``None`` when it has one); empty when not recorded."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """The metric's options (``mode``, ``key``, ``normalize``, ...)."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.reasons and len(self.reasons) != len(self.per_input):
            raise ValueError(
                f"reasons has {len(self.reasons)} items but per_input has {len(self.per_input)}"
            )
        scored = [value for value in self.per_input if value is not None]
        if any(not math.isfinite(value) for value in scored):
            raise ValueError("per-input scores must be finite numbers or None")
        if self.n_scored != len(scored):
            raise ValueError(f"n_scored is {self.n_scored} but {len(scored)} inputs have scores")
        return self

    @classmethod
    def from_scores(
        cls,
        metric: str,
        per_input: Sequence[float | None],
        *,
        component: str | None = None,
        output_key: str | None = None,
        reasons: Sequence[str | None] | None = None,
        parameters: Mapping[str, JsonValue] | None = None,
    ) -> MetricsResult:
        """Build a result from per-input scores; the score is the mean of those not ``None``.

        Example:
            >>> MetricsResult.from_scores("custom", [None, None]).score is None
            True
        """
        scores = [None if value is None else float(value) for value in per_input]
        scored = [value for value in scores if value is not None]
        return cls(
            metric=metric,
            component=component,
            output_key=output_key,
            score=statistics.fmean(scored) if scored else None,
            per_input=scores,
            n_scored=len(scored),
            reasons=list(reasons) if reasons is not None else [],
            parameters=dict(parameters or {}),
        )

    def save(self, path: str | Path) -> None:
        """Write the result as JSON (``.json``) or CSV (``.csv``), chosen by the suffix.

        The CSV has the columns ``metric, component, output_key, input_index, score, reason``:
        one row per input, then a last row without ``input_index`` holding the mean.

        Raises:
            ValueError: The suffix is neither ``.json`` nor ``.csv``.

        Example:
            >>> MetricsResult.from_scores("f1", [0.5]).save("f1.csv")  # doctest: +SKIP
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix == ".json":
            target.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
            return
        if suffix != ".csv":
            raise ValueError(
                f"cannot save metrics to {target.name!r}: the suffix must be one of "
                f"{', '.join(_SUFFIXES)}"
            )
        with target.open("w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow(["metric", "component", "output_key", "input_index", "score", "reason"])
            common = [self.metric, self.component or "", self.output_key or ""]
            for index, score in enumerate(self.per_input):
                reason = self.reasons[index] if self.reasons else None
                writer.writerow([*common, index, _csv_number(score), reason or ""])
            summary = f"mean of {self.n_scored} scored inputs of {len(self.per_input)}"
            writer.writerow([*common, "", _csv_number(self.score), summary])


def _csv_number(value: float | None) -> str:
    return "" if value is None else repr(value)
