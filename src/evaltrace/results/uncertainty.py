"""How sure a run's figures are: :class:`RunStatistics`, saved in ``result.json``.

A run's mean score per evaluator is an estimate from the entries it happened to have; on
another sample of entries like them it would differ. Each figure is saved with an interval
that says by how much, and with its ``n``:

* the **mean score** with a bootstrap percentile interval: the entries are resampled with
  replacement (``resamples`` times, from ``seed``: the same run gives the same interval), the
  mean of each resample taken, and the interval read between the quantiles of those means;
  an entry judged or run several times is resampled whole;
* its **standard error** (``s / sqrt(n)``, cluster-robust when entries repeat);
* the **pass rate** with a Wilson score interval (a bootstrap one when entries repeat);
* each **dataset-level metric** (precision, recall, F-beta, accuracy) with a bootstrap
  percentile interval over the entries.

How they are computed is in :mod:`evaltrace.statistics` and ``docs/statistics.md``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from evaltrace.statistics import Interval

__all__ = [
    "STATISTICS_COLUMNS",
    "EvaluatorStatistics",
    "IntervalMethod",
    "MetricStatistics",
    "RunStatistics",
]

STATISTICS_COLUMNS: Final = (
    "kind",
    "name",
    "n",
    "entries",
    "mean",
    "mean_low",
    "mean_high",
    "standard_error",
    "passed",
    "pass_n",
    "pass_rate",
    "pass_rate_low",
    "pass_rate_high",
    "pass_rate_method",
    "errored",
    "skipped",
    "confidence",
    "method",
    "resamples",
    "seed",
)
"""The columns of :meth:`RunStatistics.records`."""

IntervalMethod = Literal["bootstrap-percentile", "wilson"]
"""How an interval was computed."""


class EvaluatorStatistics(BaseModel):
    """One evaluator's figures over a run, each with its interval and its ``n``.

    Example:
        >>> stats = EvaluatorStatistics(evaluator="exact", n=3, entries=3, mean=0.5,
        ...                             passed=1, pass_n=3)
        >>> round(stats.pass_rate, 3)
        0.333
    """

    model_config = ConfigDict(frozen=True)

    evaluator: str
    """The evaluator's display name (``name (2)`` for its second occurrence in a run)."""
    n: int = Field(ge=0)
    """How many scores the mean is over: the entries it scored (each repetition of an entry
    that repeats)."""
    entries: int = Field(ge=0)
    """How many distinct entries those scores came from: what the bootstrap resamples."""
    mean: float | None = None
    """The mean score (``None`` when nothing was scored)."""
    mean_interval: Interval | None = None
    """The bootstrap percentile interval of the mean."""
    standard_error: float | None = None
    """The standard error of the mean (``None`` below two entries)."""
    passed: int = Field(default=0, ge=0)
    """Entries whose score reached the run's threshold."""
    pass_n: int = Field(default=0, ge=0)
    """Entries with a pass or a fail: scored, or errored (an error is a fail); skipped ones
    are left out."""
    pass_rate_interval: Interval | None = None
    """The interval of the pass rate."""
    pass_rate_method: IntervalMethod = "wilson"
    """Wilson's, or the bootstrap's when entries repeat."""
    errored: int = Field(default=0, ge=0)
    """Entries where the evaluator (or the run before it) failed."""
    skipped: int = Field(default=0, ge=0)
    """Entries it declined to score."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """``passed / pass_n`` (``None`` when there is no pass or fail)."""
        return self.passed / self.pass_n if self.pass_n else None


class MetricStatistics(BaseModel):
    """A dataset-level result's score with its bootstrap interval over entries."""

    model_config = ConfigDict(frozen=True)

    key: str
    """The result's key in :attr:`RunResult.dataset_results
    <evaltrace.results.RunResult.dataset_results>`, such as ``"intent::recall"``."""
    score: float | None
    """Its score (``None`` when nothing could be scored)."""
    n: int = Field(ge=0)
    """The entries it was computed from (items scored)."""
    interval: Interval | None = None
    """The bootstrap percentile interval over the entries."""


class RunStatistics(BaseModel):
    """A run's statistics: each evaluator's figures and each dataset-level result's interval.

    Example:
        >>> RunStatistics(confidence=0.95, resamples=1000, seed=0).method
        'bootstrap-percentile'
    """

    model_config = ConfigDict(frozen=True)

    confidence: float = Field(gt=0, lt=1)
    """The confidence level of every interval (0.95: 95% intervals)."""
    method: Literal["bootstrap-percentile"] = "bootstrap-percentile"
    """How the means' and the dataset-level results' intervals were computed."""
    resamples: int = Field(ge=1)
    """The bootstrap's resamples of the entries."""
    seed: int
    """The seed of the resamples (each evaluator's stream is derived from it and its name)."""
    evaluators: list[EvaluatorStatistics] = Field(default_factory=list)
    """One per evaluator, in the run's order."""
    dataset_results: list[MetricStatistics] = Field(default_factory=list)
    """One per dataset-level result."""

    def evaluator(self, name: str) -> EvaluatorStatistics | None:
        """The figures of the evaluator called ``name``, if the run has it."""
        for statistics in self.evaluators:
            if statistics.evaluator == name:
                return statistics
        return None

    def records(self) -> list[dict[str, Any]]:
        """One flat row per evaluator and dataset-level result, with :data:`STATISTICS_COLUMNS`.

        An evaluator's row has ``kind="evaluator"``; a dataset-level result's
        ``kind="dataset"``, its score as ``mean`` and no pass rate.

        Example:
            >>> stats = RunStatistics(confidence=0.95, resamples=10, seed=0, evaluators=[
            ...     EvaluatorStatistics(evaluator="exact", n=2, entries=2, mean=0.5)])
            >>> row = stats.records()[0]
            >>> row["kind"], row["name"], row["mean"], row["mean_low"]
            ('evaluator', 'exact', 0.5, None)
        """
        common = {
            "confidence": self.confidence,
            "method": self.method,
            "resamples": self.resamples,
            "seed": self.seed,
        }
        rows: list[dict[str, Any]] = []
        for item in self.evaluators:
            mean, rate = item.mean_interval, item.pass_rate_interval
            rows.append(
                {
                    "kind": "evaluator",
                    "name": item.evaluator,
                    "n": item.n,
                    "entries": item.entries,
                    "mean": item.mean,
                    "mean_low": None if mean is None else mean.low,
                    "mean_high": None if mean is None else mean.high,
                    "standard_error": item.standard_error,
                    "passed": item.passed,
                    "pass_n": item.pass_n,
                    "pass_rate": item.pass_rate,
                    "pass_rate_low": None if rate is None else rate.low,
                    "pass_rate_high": None if rate is None else rate.high,
                    "pass_rate_method": item.pass_rate_method,
                    "errored": item.errored,
                    "skipped": item.skipped,
                    **common,
                }
            )
        for metric in self.dataset_results:
            interval = metric.interval
            row: dict[str, Any] = dict.fromkeys(STATISTICS_COLUMNS)
            rows.append(
                {
                    **row,
                    "kind": "dataset",
                    "name": metric.key,
                    "n": metric.n,
                    "entries": metric.n,
                    "mean": metric.score,
                    "mean_low": None if interval is None else interval.low,
                    "mean_high": None if interval is None else interval.high,
                    **common,
                }
            )
        return rows

    def metric(self, key: str) -> MetricStatistics | None:
        """The figures of the dataset-level result ``key``, if the run has it."""
        for statistics in self.dataset_results:
            if statistics.key == key:
                return statistics
        return None
