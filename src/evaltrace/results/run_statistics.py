"""Computing a run's statistics: :class:`StatisticsTally` as entries finish, then the figures.

The engine gives the tally every entry as it finishes and asks for the
:class:`~evaltrace.results.uncertainty.RunStatistics` once, at the end of the run. The tally
never holds an entry: per evaluator it counts each distinct score while there are few
(pass/fail evaluators, judges on a scale hold a handful of numbers, whatever the run's
size) and keeps every score in a compact array of floats beyond; the dataset-level
results' labels are counted by the run's :class:`~evaltrace.metrics.DatasetResultsTally`.
:func:`run_statistics` computes the same figures from a saved result's entries (a merged
run, a run saved before statistics).

Example:
    >>> from evaltrace.evals import Evaluation
    >>> from evaltrace.results.model import EntryResult
    >>> tally = StatisticsTally(threshold=0.5)
    >>> for i, score in enumerate([1.0, 0.0, 1.0, 1.0]):
    ...     tally.add(EntryResult(index=i, name=str(i),
    ...                           evaluations=[Evaluation(score=score, evaluator="exact")]))
    >>> exact = tally.statistics(confidence=0.95, resamples=200, seed=0).evaluators[0]
    >>> exact.mean, exact.n, exact.passed, exact.pass_n
    (0.75, 4, 3, 4)
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from evaltrace.capture import conventions as conv
from evaltrace.evals.evaluation import Evaluation
from evaltrace.metrics.classification import DatasetResultsTally
from evaltrace.results.model import EntryResult, RunResult
from evaltrace.results.uncertainty import EvaluatorStatistics, MetricStatistics, RunStatistics
from evaltrace.statistics import (
    bootstrap_means,
    bootstrap_means_of_counts,
    mean_of_counts,
    percentile_interval,
    standard_error,
    standard_error_of_counts,
    wilson_interval,
)

__all__ = [
    "StatisticsTally",
    "evaluation_labels",
    "run_statistics",
    "statistics_attributes",
    "stream_seed",
]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
_NO_IDS: Final[Ints] = np.empty(0, dtype=np.int64)

_DISTINCT_COUNTED: Final = 256
"""Up to this many distinct scores an evaluator's are counted by value; beyond, kept in an
array (8 bytes a score). bench/README.md (``bench_scale.py``): a run of 100,000 entries must
hold at most twice the memory of one of 10,000, which an array per evaluator breaks."""


def evaluation_labels(evaluations: Sequence[Evaluation]) -> Iterator[tuple[str, Evaluation]]:
    """Each evaluation with its evaluator's label.

    The label is its name; ``name (2)`` for its second occurrence in the entry; ``#3`` for an
    unnamed one at position 3.
    """
    names = [evaluation.evaluator for evaluation in evaluations]
    if None not in names and len(set(names)) == len(names):  # the usual case, taken at once
        return zip(names, evaluations, strict=True)  # type: ignore[arg-type]
    return _numbered(evaluations)


def _numbered(evaluations: Sequence[Evaluation]) -> Iterator[tuple[str, Evaluation]]:
    seen: dict[str, int] = {}
    for position, evaluation in enumerate(evaluations):
        name = evaluation.evaluator or f"#{position}"
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        yield (name if occurrence == 0 else f"{name} ({occurrence + 1})"), evaluation


def stream_seed(seed: int, name: str) -> list[int]:
    """The seed of one figure's resamples: the run's seed and its name's CRC-32.

    Each evaluator (and each dataset-level result) draws its own stream, so adding an
    evaluator to a run does not move another's interval.
    """
    return [seed, zlib.crc32(name.encode("utf-8"))]


class _Column:
    """One evaluator's scores so far, and how many times it errored or skipped."""

    __slots__ = ("clusters", "counts", "errored", "errored_clusters", "skipped", "values")

    def __init__(self, clustered: bool) -> None:
        self.counts: dict[float, int] | None = None if clustered else {}
        self.values = array("d")
        self.clusters: array[int] | None = array("q") if clustered else None
        self.errored_clusters: array[int] | None = array("q") if clustered else None
        self.errored = 0
        self.skipped = 0

    def add(self, evaluation: Evaluation, cluster: int) -> None:
        if evaluation.error is not None:
            self.errored += 1
            if self.errored_clusters is not None:
                self.errored_clusters.append(cluster)
            return
        score = evaluation.score
        if score is None:
            self.skipped += 1
            return
        counts = self.counts
        if counts is None:
            self.values.append(score)
            if self.clusters is not None:
                self.clusters.append(cluster)
            return
        counts[score] = counts.get(score, 0) + 1
        if len(counts) > _DISTINCT_COUNTED:
            for value, times in counts.items():
                self.values.extend([value] * times)
            self.counts = None

    def counted(self) -> tuple[Floats, Ints] | None:
        """Each distinct score, ascending, and how often it came; ``None`` when not counted."""
        if self.counts is None:
            return None
        values = np.fromiter(self.counts, dtype=np.float64, count=len(self.counts))
        times = np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts))
        order = np.argsort(values)
        return values[order], times[order]

    def arrays(self) -> tuple[Floats, Ints | None]:
        """Every score and its cluster (``None`` unclustered), sorted by cluster then score.

        One order whatever the order they came in, so that sums round the same.
        """
        if self.counts is not None:
            values = np.fromiter(self.counts, dtype=np.float64, count=len(self.counts))
            times = np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts))
            order = np.argsort(values)
            return np.repeat(values[order], times[order]), None
        scores = np.frombuffer(self.values, dtype=np.float64) if self.values else np.empty(0)
        if self.clusters is None:
            return np.sort(scores), None
        clusters = np.frombuffer(self.clusters, dtype=np.int64) if self.clusters else _NO_IDS
        order = np.lexsort((scores, clusters))
        return scores[order], clusters[order]

    def errored_ids(self) -> Ints:
        """The clusters of the errored evaluations (clustered only)."""
        ids = self.errored_clusters
        return np.frombuffer(ids, dtype=np.int64) if ids else _NO_IDS


class StatisticsTally:
    """A run's scores per evaluator, gathered as its entries finish, for its statistics.

    Args:
        threshold: The score that passes.
        evaluators: The run's evaluators, in the order their figures are listed (others
            found in entries follow).
        clustered: Whether entries repeat (each is added with its cluster, the id shared by
            its repetitions): intervals then resample whole clusters, and pass rates get a
            bootstrap interval instead of Wilson's. Every score is then kept.
    """

    __slots__ = ("_clustered", "_columns", "_order", "_threshold")

    def __init__(
        self, *, threshold: float, evaluators: Sequence[str] = (), clustered: bool = False
    ) -> None:
        self._threshold = threshold
        self._clustered = clustered
        self._order = list(dict.fromkeys(evaluators))
        self._columns: dict[str, _Column] = {}

    def add(self, entry: EntryResult, *, cluster: int | None = None) -> None:
        """Count one finished entry's evaluations.

        ``cluster`` is its cluster (its index by default).
        """
        self.add_evaluations(entry.evaluations, entry.index if cluster is None else cluster)

    def add_evaluations(self, evaluations: Sequence[Evaluation], cluster: int) -> None:
        """Count one finished entry's evaluations, as one cluster (the entry's index)."""
        key = cluster
        columns = self._columns
        for label, evaluation in evaluation_labels(evaluations):
            column = columns.get(label)
            if column is None:
                column = columns[label] = _Column(self._clustered)
            column.add(evaluation, key)

    def statistics(
        self,
        *,
        confidence: float,
        resamples: int,
        seed: int,
        dataset: DatasetResultsTally | None = None,
        dataset_results: Mapping[str, Evaluation] | None = None,
    ) -> RunStatistics:
        """The run's statistics over the entries added.

        Args:
            confidence: The confidence level of the intervals.
            resamples: The bootstrap's resamples.
            seed: The run's seed.
            dataset: The run's dataset-level tally, for those results' intervals.
            dataset_results: The dataset-level results it gave (their scores and ``n``).
        """
        labels = [*self._order, *(name for name in self._columns if name not in self._order)]
        evaluators = [
            self._evaluator(name, confidence=confidence, resamples=resamples, seed=seed)
            for name in labels
            if name in self._columns
        ]
        metrics: list[MetricStatistics] = []
        if dataset is not None:
            samples = dataset.bootstrap(
                resamples=resamples, seed=lambda key: stream_seed(seed, key)
            )
            results = dataset_results if dataset_results is not None else dataset.results()
            for key, drawn in samples.items():
                result = results.get(key)
                metrics.append(
                    MetricStatistics(
                        key=key,
                        score=None if result is None else result.score,
                        n=_scored_items(result),
                        interval=(
                            None
                            if drawn is None
                            else percentile_interval(drawn, confidence=confidence)
                        ),
                    )
                )
        return RunStatistics(
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            evaluators=evaluators,
            dataset_results=metrics,
        )

    def _evaluator(
        self, name: str, *, confidence: float, resamples: int, seed: int
    ) -> EvaluatorStatistics:
        column = self._columns[name]
        stream = stream_seed(seed, name)
        figures: dict[str, Any] = {}
        counted = column.counted()
        if counted is not None:
            # From the counts of the distinct scores, never one number per score: the
            # repeated scores and their copies made a 10**6-entry run peak about 40 MiB
            # higher at its end (bench_dataset_memory.py).
            values, times = counted
            clusters = None
            n = int(times.sum())
            passed = int(times[values >= self._threshold].sum())
            if n:
                means = bootstrap_means_of_counts(values, times, resamples=resamples, seed=stream)
                figures.update(
                    mean=mean_of_counts(values, times),
                    mean_interval=percentile_interval(means, confidence=confidence),
                    standard_error=standard_error_of_counts(values, times),
                )
        else:
            scores, clusters = column.arrays()
            n = int(scores.size)
            passed = int(np.count_nonzero(scores >= self._threshold))
            if n:
                means = bootstrap_means(scores, clusters=clusters, resamples=resamples, seed=stream)
                figures.update(
                    mean=float(scores.mean()),
                    mean_interval=percentile_interval(means, confidence=confidence),
                    standard_error=standard_error(scores, clusters=clusters),
                )
        pass_n = n + column.errored
        entries = n if clusters is None else int(np.unique(clusters).size)
        if pass_n and clusters is not None:
            scores, clusters = column.arrays()
            flags = np.r_[(scores >= self._threshold).astype(np.float64), np.zeros(column.errored)]
            owners = np.r_[clusters, column.errored_ids()]
            rates = bootstrap_means(flags, clusters=owners, resamples=resamples, seed=stream)
            figures.update(
                pass_rate_interval=percentile_interval(rates, confidence=confidence),
                pass_rate_method="bootstrap-percentile",
            )
        elif pass_n:
            figures["pass_rate_interval"] = wilson_interval(passed, pass_n, confidence=confidence)
        return EvaluatorStatistics(
            evaluator=name,
            n=n,
            entries=entries,
            passed=passed,
            pass_n=pass_n,
            errored=column.errored,
            skipped=column.skipped,
            **figures,
        )


def _scored_items(result: Evaluation | None) -> int:
    """The items a dataset-level result scored, from its details (0 when it has none)."""
    details = result.details if result is not None else None
    if isinstance(details, Mapping):
        scored = details.get("n_scored")
    else:
        scored = getattr(details, "n_scored", None)
    return scored if isinstance(scored, int) else 0


def run_statistics(
    result: RunResult, *, confidence: float, resamples: int, seed: int
) -> RunStatistics:
    """The statistics of a saved run, from the entries it holds.

    For a run whose statistics were not computed when it ran (merged shards, a run saved
    before statistics): the figures the run would have had.
    """
    tally = StatisticsTally(threshold=result.threshold, evaluators=result.evaluators)
    dataset = DatasetResultsTally(result.aggregators)
    for entry in result.entries:
        tally.add(entry)
        dataset.add(entry.evaluations)
    return tally.statistics(
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        dataset=dataset,
        dataset_results=result.dataset_results,
    )


def statistics_attributes(statistics: RunStatistics) -> list[dict[str, Any]]:
    """The attributes of each evaluator's ``gen_ai.evaluation.result`` event of a run.

    ``gen_ai.evaluation.name``, the mean as ``gen_ai.evaluation.score.value``, an
    explanation in words, and every figure as ``evaltrace.statistics.<figure>`` (figures
    without a value are left out: attributes cannot be null).

    Example:
        >>> from evaltrace.results.uncertainty import EvaluatorStatistics
        >>> stats = RunStatistics(confidence=0.95, resamples=10, seed=0, evaluators=[
        ...     EvaluatorStatistics(evaluator="exact", n=2, entries=2, mean=0.5)])
        >>> statistics_attributes(stats)[0]["evaltrace.statistics.n"]
        2
    """
    events = []
    for row in statistics.records():
        if row["kind"] != "evaluator":
            continue
        attributes: dict[str, Any] = {conv.GEN_AI_EVALUATION_NAME: row["name"]}
        if row["mean"] is not None:
            attributes[conv.GEN_AI_EVALUATION_SCORE_VALUE] = row["mean"]
        attributes[conv.GEN_AI_EVALUATION_EXPLANATION] = _explanation(row)
        for figure, value in row.items():
            if figure not in ("kind", "name") and value is not None:
                attributes[
                    conv.STATISTICS_PREFIX
                    + figure.replace("_low", ".low").replace("_high", ".high")
                ] = value
        events.append(attributes)
    return events


def _explanation(row: Mapping[str, Any]) -> str:
    level = f"{row['confidence'] * 100:.10g}%"
    parts = []
    if row["mean"] is not None:
        parts.append(f"mean {row['mean']:.3f}")
        if row["mean_low"] is not None:
            parts[-1] += f" [{row['mean_low']:.3f}, {row['mean_high']:.3f}]"
    parts.append(f"n={row['n']}")
    if row["pass_rate"] is not None:
        rate = f"pass rate {row['passed']}/{row['pass_n']} = {row['pass_rate']:.3f}"
        if row["pass_rate_low"] is not None:
            rate += f" [{row['pass_rate_low']:.3f}, {row['pass_rate_high']:.3f}]"
        parts.append(rate)
    return f"{'; '.join(parts)} ({level} intervals)"
