"""The statistics of runs, as pure functions over arrays of scores.

What a run reports with each figure, and what a comparison of two runs decides with:

* intervals: :func:`bootstrap_means` / :func:`bootstrap_counts` (the bootstrap distribution
  of a statistic over entries, seeded, whole clusters resampled when entries repeat) read by
  :func:`percentile_interval`; :func:`wilson_interval` for a pass rate; :func:`standard_error`;
* paired tests: :func:`mcnemar_exact` (pass/fail), :func:`wilcoxon_signed_rank` (scores),
  :func:`bootstrap_p_value` (any bootstrapped difference);
* several comparisons at once: :func:`holm`; what a run could have seen:
  :func:`detectable_difference`, :func:`sign_test_minimum`.

Everything is computed with numpy and the standard library (no scipy); the tests check every
statistic and p-value against scipy's to 1e-9. Nothing here knows about runs or entries: the
results floor turns a run into arrays and the figures into its saved models.

Example:
    >>> import numpy as np
    >>> scores = np.array([1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.5, 1.0])
    >>> interval = percentile_interval(bootstrap_means(scores, resamples=2000, seed=0),
    ...                                confidence=0.95)
    >>> float(scores.mean()) in interval
    True
    >>> wilson_interval(6, 8)  # doctest: +ELLIPSIS
    Interval(low=0.409..., high=0.928...)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evaltrace._safe_text import safe_repr
from evaltrace.errors import StatisticsInputError

__all__ = [
    "Interval",
    "WilcoxonMethod",
    "WilcoxonResult",
    "bootstrap_counts",
    "bootstrap_means",
    "bootstrap_means_of_counts",
    "bootstrap_p_value",
    "check_confidence",
    "detectable_difference",
    "holm",
    "mcnemar_exact",
    "mean_of_counts",
    "normal_quantile",
    "percentile_interval",
    "sign_test_minimum",
    "standard_error",
    "standard_error_of_counts",
    "wilcoxon_signed_rank",
    "wilson_interval",
]

Floats = NDArray[np.float64]
Statistic = Callable[[Floats], Floats]
"""Maps a ``(resamples, K)`` matrix of counts (how often each of the K distinct values was
drawn, in ascending order of value) to the ``(resamples,)`` values of a statistic."""

_BLOCK: Final = 1 << 18
"""Most cells (resamples x entries) drawn at once: 2 MiB a block, whatever the run's size."""
_FEW_DISTINCT: Final = 64
"""Up to this many distinct values, a resample is drawn as a multinomial over them (exactly
the distribution of a resample of entries, at the cost of a few draws); beyond, as indices."""
_WILCOXON_EXACT_UP_TO: Final = 50
"""Up to this many differences (zeros included, as scipy counts), Wilcoxon is exact."""
_WILCOXON_PERMUTATION_UP_TO: Final = 13
"""Up to this many, with ties or zeros, the exact test enumerates every assignment of signs."""
_EXACT_BINOMIAL_UP_TO: Final = 1000
"""Up to this many discordant pairs, McNemar's tail is summed in exact integers."""
_STANDARD_NORMAL: Final = NormalDist()


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A two-sided interval ``[low, high]``.

    Example:
        >>> 0.5 in Interval(low=0.25, high=0.75)
        True
    """

    low: float
    """Its lower bound."""
    high: float
    """Its upper bound."""

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def __contains__(self, value: float) -> bool:
        return self.low <= value <= self.high


WilcoxonMethod = Literal["exact", "permutation", "normal"]
"""How a Wilcoxon p-value was computed (see :func:`wilcoxon_signed_rank`)."""


@dataclass(frozen=True, kw_only=True)
class WilcoxonResult:
    """The Wilcoxon signed-rank test of paired differences."""

    statistic: float
    """The smaller of the two rank sums (scipy's two-sided statistic)."""
    r_plus: float
    """The sum of the ranks of the positive differences."""
    r_minus: float
    """The sum of the ranks of the negative differences."""
    n: int
    """The nonzero differences ranked."""
    p_value: float
    """The two-sided p-value."""
    method: WilcoxonMethod
    """How the p-value was computed."""
    z: float | None = None
    """The normal deviate, when the normal approximation was used."""


def check_confidence(value: object, what: str = "confidence") -> float:
    """Validate a probability strictly between 0 and 1 (a confidence, a significance level).

    Raises:
        ValueError: Naming ``what`` and the value given.

    Example:
        >>> check_confidence(0.95)
        0.95
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value < 1
    ):
        raise ValueError(
            f"{what} must be a number between 0 and 1 (such as 0.95), got {safe_repr(value)}"
        )
    return float(value)


def normal_quantile(p: float) -> float:
    """The standard normal quantile: the ``z`` with ``P(Z <= z) = p``.

    Example:
        >>> round(normal_quantile(0.975), 4)
        1.96
    """
    return _STANDARD_NORMAL.inv_cdf(p)


def _two_sided_normal_p(z: float) -> float:
    """``2 P(Z >= |z|)``, accurate far in the tail."""
    return math.erfc(abs(z) / math.sqrt(2.0))


# -- intervals ----------------------------------------------------------------------------


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of a rate of ``successes`` in ``n`` independent trials.

    Without continuity correction; the bound is exactly 0 (1) when there is no success (no
    failure). It keeps its coverage for small ``n`` and rates near 0 or 1, where the
    normal interval ``p ± z·sqrt(p(1-p)/n)`` does not.

    Raises:
        StatisticsInputError: ``n`` is 0, or ``successes`` is not between 0 and ``n``.

    Example:
        >>> wilson_interval(0, 10)  # doctest: +ELLIPSIS
        Interval(low=0.0, high=0.277...)
    """
    check_confidence(confidence)
    if n < 1:
        raise StatisticsInputError("a Wilson interval needs at least one trial; got no trials")
    if not 0 <= successes <= n:
        raise StatisticsInputError(
            f"a Wilson interval needs 0 <= successes <= trials; got {successes} successes "
            f"of {n} trials"
        )
    z = normal_quantile(0.5 + 0.5 * confidence)
    rate = successes / n
    denominator = 2 * (n + z * z)
    center = (2 * n * rate + z * z) / denominator
    half = z / denominator * math.sqrt(4 * n * rate * (1 - rate) + z * z)
    low = 0.0 if successes == 0 else center - half
    high = 1.0 if successes == n else center + half
    return Interval(low=low, high=high)


def standard_error(values: ArrayLike, *, clusters: ArrayLike | None = None) -> float | None:
    """The standard error of the mean of ``values``; ``None`` with fewer than two clusters.

    Without clusters: ``s / sqrt(n)`` (``s`` with ``n - 1`` degrees of freedom). With
    ``clusters`` (one id per value; the values of one entry judged or run several times
    share an id), the cluster-robust standard error of the mean over all values,
    ``sqrt(C / (C - 1) · Σ_c (S_c - m_c·ȳ)²) / N`` for ``C`` clusters each of sum ``S_c``
    and size ``m_c``; with one value per cluster it is ``s / sqrt(n)``.

    Example:
        >>> round(standard_error([0.0, 1.0, 1.0, 0.0]), 4)
        0.2887
    """
    scores, groups = _scores(values, clusters)
    sums, sizes = _cluster_totals(scores, groups)
    count = sums.size
    if count < 2:
        return None
    mean = sums.sum() / sizes.sum()
    spread = float(np.sum((sums - sizes * mean) ** 2))
    return math.sqrt(count / (count - 1) * spread) / float(sizes.sum())


def bootstrap_means(
    values: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    resamples: int,
    seed: int | Sequence[int],
) -> Floats:
    """The bootstrap distribution of the mean of ``values``: one mean per resample.

    Each resample draws as many entries as there are, with replacement; with ``clusters``,
    whole clusters are drawn (every value of an entry that repeats goes in or out together)
    and the mean is over the values drawn. The result depends on the values and clusters
    and the seed, never on their order.

    Raises:
        StatisticsInputError: No values, a value that is not finite, or ``clusters`` of
            another length.
        ValueError: ``resamples`` is not a whole number >= 1.
    """
    scores, groups = _scores(values, clusters)
    rng = _generator(seed, resamples)
    count = int(groups.max()) + 1
    out = np.empty(resamples)
    if count < scores.size:  # entries repeat: draw whole clusters
        sums, sizes = _cluster_totals(scores, groups)
        for start, size in _blocks(resamples, count):
            drawn = rng.integers(0, count, size=(size, count))
            out[start : start + size] = sums[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)
        return out
    distinct, value_of = np.unique(scores, return_inverse=True)
    if distinct.size <= _FEW_DISTINCT:
        for start, counts in _multinomial_counts(rng, value_of, distinct.size, resamples):
            out[start : start + counts.shape[0]] = counts @ distinct / scores.size
        return out
    ordered = np.sort(scores)  # drawing index i draws the i-th smallest: order does not matter
    for start, size in _blocks(resamples, scores.size):
        drawn = rng.integers(0, scores.size, size=(size, scores.size))
        out[start : start + size] = ordered[drawn].mean(axis=1)
    return out


def bootstrap_means_of_counts(
    values: ArrayLike, counts: ArrayLike, *, resamples: int, seed: int | Sequence[int]
) -> Floats:
    """:func:`bootstrap_means` of ``values``, each repeated as often as ``counts`` says.

    The same means, seed for seed, as ``bootstrap_means(np.repeat(values, counts), ...)``,
    without making the repeated values when there are few distinct ones: a run of 10**6
    entries of a pass/fail evaluator holds two numbers, not 10**6.

    Args:
        values: The distinct values, in any order.
        counts: How many times each one occurs.
        resamples: How many resamples.
        seed: The seed of the resamples.

    Raises:
        StatisticsInputError: No values, or a value that is not finite.
        ValueError: ``resamples`` is not a whole number >= 1.

    Example:
        >>> same = bootstrap_means([0.0, 0.0, 1.0], resamples=5, seed=1)
        >>> bool((bootstrap_means_of_counts([1.0, 0.0], [1, 2], resamples=5, seed=1) == same).all())
        True
    """
    distinct, times = _counted(values, counts)
    if (
        distinct.size > _FEW_DISTINCT
        or not distinct.size
        or not np.isfinite(distinct).all()
        or (distinct[1:] == distinct[:-1]).any()
    ):
        return bootstrap_means(np.repeat(distinct, times), resamples=resamples, seed=seed)
    rng = _generator(seed, resamples)
    total = int(times.sum())
    frequencies = times / total
    out = np.empty(resamples)
    for start, size in _blocks(resamples, distinct.size):  # as _multinomial_counts draws
        drawn = rng.multinomial(total, frequencies, size=size).astype(np.float64)
        out[start : start + size] = drawn @ distinct / total
    return out


def mean_of_counts(values: ArrayLike, counts: ArrayLike) -> float:
    """The mean of ``values``, each repeated as often as ``counts`` says, correctly rounded.

    Raises:
        StatisticsInputError: No values.

    Example:
        >>> mean_of_counts([0.0, 1.0], [3, 1])
        0.25
    """
    distinct, times = _counted(values, counts)
    if not distinct.size:
        raise StatisticsInputError("a statistic of no scores cannot be computed; got no scores")
    return float(_exact_mean(distinct, times))


def standard_error_of_counts(values: ArrayLike, counts: ArrayLike) -> float | None:
    """:func:`standard_error` of ``values``, each repeated as often as ``counts`` says.

    Computed in exact arithmetic from the distinct values, then rounded: the same figure as
    :func:`standard_error` of the repeated values, to within rounding. ``None`` with fewer
    than two values.

    Example:
        >>> round(standard_error_of_counts([0.0, 1.0], [2, 2]), 4)
        0.2887
    """
    distinct, times = _counted(values, counts)
    total = int(times.sum())
    if total < 2:
        return None
    mean = _exact_mean(distinct, times)
    spread = sum(
        (
            time * (Fraction(value) - mean) ** 2
            for value, time in zip(distinct.tolist(), times.tolist(), strict=True)
        ),
        Fraction(0),
    )
    return math.sqrt(float(Fraction(total, total - 1) * spread)) / total


def _counted(values: ArrayLike, counts: ArrayLike) -> tuple[Floats, NDArray[np.int64]]:
    """The values that occur, ascending, and how often each one does."""
    distinct = np.asarray(values, dtype=np.float64).ravel()
    times = np.asarray(counts, dtype=np.int64).ravel()
    if distinct.size != times.size:
        raise StatisticsInputError(
            f"every value needs its count; got {distinct.size} values but {times.size} counts"
        )
    order = np.argsort(distinct, kind="stable")
    occurring = times[order] > 0
    return distinct[order][occurring], times[order][occurring]


def _exact_mean(distinct: Floats, times: NDArray[np.int64]) -> Fraction:
    total = int(times.sum())
    return (
        sum(
            (
                Fraction(value) * time
                for value, time in zip(distinct.tolist(), times.tolist(), strict=True)
            ),
            Fraction(0),
        )
        / total
    )


def bootstrap_counts(
    codes: ArrayLike,
    statistic: Statistic,
    *,
    clusters: ArrayLike | None = None,
    resamples: int,
    seed: int | Sequence[int],
) -> Floats:
    """The bootstrap distribution of a statistic of how often each code occurs.

    For statistics of labels, such as precision over ``(expected, predicted)`` pairs each
    numbered by one code: ``statistic`` is given, block by block, the ``(resamples, K)``
    counts of each of the K distinct codes (ascending) in each resample of entries (of whole
    clusters, with ``clusters``), and returns the statistic of each row.

    Raises:
        StatisticsInputError: No codes, or ``clusters`` of another length.
        ValueError: ``resamples`` is not a whole number >= 1.
    """
    scores, groups = _scores(codes, clusters)
    rng = _generator(seed, resamples)
    distinct, value_of = np.unique(scores, return_inverse=True)
    out = np.empty(resamples)
    for start, counts in _resampled_counts(rng, value_of, groups, distinct.size, resamples):
        out[start : start + counts.shape[0]] = statistic(counts)
    return out


def percentile_interval(samples: ArrayLike, *, confidence: float = 0.95) -> Interval:
    """The percentile interval of a bootstrap distribution.

    Its bounds are the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    ``samples``, linearly interpolated between order statistics (numpy's default).

    Example:
        >>> percentile_interval([0.0, 0.25, 0.5, 0.75, 1.0], confidence=0.5)
        Interval(low=0.25, high=0.75)
    """
    check_confidence(confidence)
    drawn = np.asarray(samples, dtype=np.float64)
    if drawn.size == 0:
        raise StatisticsInputError("a percentile interval needs bootstrap samples; got none")
    tail = (1 - confidence) / 2
    low, high = np.quantile(drawn, [tail, 1 - tail])
    return Interval(low=float(low), high=float(high))


def bootstrap_p_value(samples: ArrayLike) -> float:
    """The two-sided bootstrap p-value of "the difference is 0".

    Twice the smaller share of ``samples`` at or beyond zero on either side, at most 1: the
    smallest ``1 - confidence`` at which the percentile interval leaves out 0.

    Example:
        >>> bootstrap_p_value([0.1, 0.2, 0.3, -0.1])
        0.5
    """
    drawn = np.asarray(samples, dtype=np.float64)
    if drawn.size == 0:
        raise StatisticsInputError("a bootstrap p-value needs bootstrap samples; got none")
    below = float(np.count_nonzero(drawn <= 0)) / drawn.size
    above = float(np.count_nonzero(drawn >= 0)) / drawn.size
    return min(1.0, 2 * min(below, above))


def _scores(values: ArrayLike, clusters: ArrayLike | None) -> tuple[Floats, NDArray[np.intp]]:
    """The values as floats, and each one's cluster numbered 0..C-1 (ascending id)."""
    scores = np.asarray(values, dtype=np.float64).ravel()
    if scores.size == 0:
        raise StatisticsInputError("a statistic of no scores cannot be computed; got no scores")
    if not np.isfinite(scores).all():
        bad = scores[~np.isfinite(scores)][0]
        raise StatisticsInputError(f"scores must be finite numbers; got {bad!r}, not finite")
    if clusters is None:
        return scores, np.arange(scores.size)
    ids = np.asarray(clusters).ravel()
    if ids.size != scores.size:
        raise StatisticsInputError(
            f"every score needs its cluster id; got {scores.size} scores but {ids.size} cluster ids"
        )
    _, groups = np.unique(ids, return_inverse=True)
    return scores, groups.astype(np.intp)


def _cluster_totals(scores: Floats, groups: NDArray[np.intp]) -> tuple[Floats, Floats]:
    """Each cluster's sum of scores and number of scores."""
    count = int(groups.max()) + 1
    sums = np.bincount(groups, weights=scores, minlength=count).astype(np.float64)
    sizes = np.bincount(groups, minlength=count).astype(np.float64)
    return sums, sizes


def _generator(seed: int | Sequence[int], resamples: int) -> np.random.Generator:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a whole number >= 1, got {safe_repr(resamples)}")
    return np.random.default_rng(list(seed) if isinstance(seed, Sequence) else seed)


def _blocks(resamples: int, width: int) -> Iterator[tuple[int, int]]:
    """``(first resample, resamples)`` of each block of at most :data:`_BLOCK` cells."""
    rows = max(1, _BLOCK // max(width, 1))
    for start in range(0, resamples, rows):
        yield start, min(rows, resamples - start)


def _multinomial_counts(
    rng: np.random.Generator, value_of: NDArray[np.intp], distinct: int, resamples: int
) -> Iterator[tuple[int, Floats]]:
    """Blocks of counts of each distinct value in resamples of single entries.

    One multinomial draw per resample: exactly the distribution of the counts of a resample
    of entries, at the cost of a draw per distinct value, not per entry.
    """
    frequencies = np.bincount(value_of, minlength=distinct) / value_of.size
    for start, size in _blocks(resamples, distinct):
        counts = rng.multinomial(value_of.size, frequencies, size=size)
        yield start, counts.astype(np.float64)


def _resampled_counts(
    rng: np.random.Generator,
    value_of: NDArray[np.intp],
    groups: NDArray[np.intp],
    distinct: int,
    resamples: int,
) -> Iterator[tuple[int, Floats]]:
    """Blocks of ``(rows, distinct)`` counts: how often each distinct value was drawn.

    Single entries with few distinct values: :func:`_multinomial_counts`; else entry indices
    are drawn and counted. Clusters: cluster indices are drawn, and each value counts as
    often as its cluster was drawn.
    """
    clusters = int(groups.max()) + 1
    if clusters == value_of.size and distinct <= _FEW_DISTINCT:
        yield from _multinomial_counts(rng, value_of, distinct, resamples)
        return
    order = np.lexsort((groups, value_of))
    sorted_values = value_of[order]
    cluster_of = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    for start, size in _blocks(resamples, value_of.size):
        drawn = rng.integers(0, clusters, size=(size, clusters))
        cells = (np.arange(size)[:, None] * clusters + drawn).ravel()
        times = np.bincount(cells, minlength=size * clusters).reshape(size, clusters)
        weights = times[:, cluster_of].astype(np.float64)
        yield start, np.add.reduceat(weights, starts, axis=1)


# -- paired tests -------------------------------------------------------------------------


def mcnemar_exact(fixed: int, broken: int) -> float:
    """The exact McNemar test of paired pass/fail results: its two-sided p-value.

    Only the entries whose result changed count: ``fixed`` went from fail to pass,
    ``broken`` from pass to fail. Without a change in pass rate each change is a fair coin,
    so the p-value is that of a binomial test of ``fixed`` in ``fixed + broken`` at 1/2:
    ``min(1, 2 · P(X <= min(fixed, broken)))``; 1 when nothing changed.

    Example:
        >>> mcnemar_exact(0, 6)
        0.03125
    """
    if fixed < 0 or broken < 0:
        raise StatisticsInputError(
            f"McNemar's test counts changed entries; got {fixed} fixed and {broken} broken"
        )
    changed = fixed + broken
    smaller = min(fixed, broken)
    if changed == 0 or 2 * smaller == changed:
        return 1.0
    return min(1.0, 2.0 * _binomial_half_cdf(smaller, changed))


def _binomial_half_cdf(k: int, n: int) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, ``k < n / 2``."""
    if n <= _EXACT_BINOMIAL_UP_TO:
        term = total = 1  # C(n, 0)
        for step in range(k):
            term = term * (n - step) // (step + 1)
            total += term
        return float(total / 2**n)
    # The terms fall away from k: sum them relative to the last one, in floating point.
    i = np.arange(k, 0, -1, dtype=np.float64)
    ratios = np.cumprod(i / (n - i + 1))  # P(X = i - 1) / P(X = k) for i = k .. 1
    log_last = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    return math.exp(log_last) * (1.0 + float(ratios.sum()))


def wilcoxon_signed_rank(differences: ArrayLike, *, correction: bool = True) -> WilcoxonResult:
    """The Wilcoxon signed-rank test of paired differences: is their median 0?

    Zero differences are dropped (Wilcoxon's method); the others are ranked by size (ties
    share their average rank). The p-value is two-sided and chosen as scipy's
    ``scipy.stats.wilcoxon`` chooses it by default (``method="auto"``), counting the
    differences given, zeros included:

    * ``exact``: at most 50, no ties and no zeros: the exact null distribution of the rank sum;
    * ``permutation``: at most 13, with ties or zeros: every assignment of signs to the
      ranks, enumerated (exact given the ties);
    * ``normal``: otherwise: the normal approximation, its variance corrected for ties and,
      with ``correction`` (the default here; scipy's default is without), the rank sum moved
      half a unit towards its mean.

    With no nonzero difference there is nothing to test: the p-value is 1.

    Example:
        >>> wilcoxon_signed_rank([0.5, -0.25, 0.75, 1.0]).p_value
        0.25
    """
    given = np.asarray(differences, dtype=np.float64).ravel()
    if not np.isfinite(given).all():
        raise StatisticsInputError("differences must be finite numbers; got one not finite")
    nonzero = given[given != 0]
    n = nonzero.size
    if n == 0:
        return WilcoxonResult(
            statistic=0.0, r_plus=0.0, r_minus=0.0, n=0, p_value=1.0, method="normal"
        )
    ranks, tie_sizes = _average_ranks(np.abs(nonzero))
    positive = nonzero > 0
    r_plus = float(ranks[positive].sum())
    r_minus = float(ranks[~positive].sum())
    statistic = min(r_plus, r_minus)
    ties = bool((tie_sizes > 1).any())
    zeros = n < given.size
    if given.size <= _WILCOXON_EXACT_UP_TO and not ties and not zeros:
        p = _exact_signed_rank_p(round(r_plus), n)
        return WilcoxonResult(
            statistic=statistic, r_plus=r_plus, r_minus=r_minus, n=n, p_value=p, method="exact"
        )
    if given.size <= _WILCOXON_PERMUTATION_UP_TO:
        p = _sign_flip_p(ranks, r_plus)
        return WilcoxonResult(
            statistic=statistic,
            r_plus=r_plus,
            r_minus=r_minus,
            n=n,
            p_value=p,
            method="permutation",
        )
    mean = n * (n + 1) / 4
    variance = (n * (n + 1) * (2 * n + 1) - float(np.sum(tie_sizes**3 - tie_sizes)) / 2) / 24
    spread = math.sqrt(variance)
    z = (r_plus - mean) / spread
    if correction:
        z -= math.copysign(0.5, z) / spread if z != 0 else 0.0
    return WilcoxonResult(
        statistic=statistic,
        r_plus=r_plus,
        r_minus=r_minus,
        n=n,
        p_value=min(1.0, _two_sided_normal_p(z)),
        method="normal",
        z=-abs(z),
    )


def _average_ranks(sizes: Floats) -> tuple[Floats, Floats]:
    """Ranks 1..n of ``sizes`` (ties share their average), and the size of each tie group."""
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, ordered.size]).astype(np.float64)
    average = starts + 1 + (counts - 1) / 2
    ranks = np.empty(sizes.size)
    ranks[order] = np.repeat(average, counts.astype(np.intp))
    return ranks, counts


def _exact_signed_rank_p(r_plus: int, n: int) -> float:
    """Two-sided p of the rank sum ``r_plus`` of ``n`` untied ranks, from its exact law."""
    ways = np.zeros(n * (n + 1) // 2 + 1, dtype=np.int64)  # ways[s]: sign choices summing to s
    ways[0] = 1
    for rank in range(1, n + 1):
        ways[rank:] = ways[rank:] + ways[:-rank].copy()
    total = float(2**n)
    below = float(ways[: r_plus + 1].sum()) / total
    above = float(ways[r_plus:].sum()) / total
    return min(1.0, 2 * min(below, above))


def _sign_flip_p(ranks: Floats, observed: float) -> float:
    """Two-sided p of ``observed`` among the rank sums of every assignment of signs."""
    n = ranks.size
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    sums = patterns @ ranks
    tolerance = abs(observed) * 100 * np.finfo(np.float64).eps
    below = float(np.count_nonzero(sums <= observed + tolerance)) / sums.size
    above = float(np.count_nonzero(sums >= observed - tolerance)) / sums.size
    return min(1.0, 2 * min(below, above))


# -- several comparisons, and what a run can see --------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (one per comparison), in their order.

    The ``i``-th smallest p-value of ``m`` is multiplied by ``m - i + 1`` (at most 1) and
    raised to the largest adjusted value before it. A comparison is significant at level
    ``level`` when its adjusted p-value is below ``level``; the chance of calling any of the ``m``
    significant when none changed is then at most ``level``, whatever their dependence.

    Example:
        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda index: p_values[index])
    adjusted = [0.0] * m
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


def sign_test_minimum(level: float) -> int:
    """The fewest changes, all one way, that a two-sided exact sign test calls significant.

    No pass/fail comparison can be significant at ``level`` with fewer entries changed.

    Example:
        >>> sign_test_minimum(0.05)
        6
    """
    check_confidence(level, "level")
    changes = 1
    while 2 * 0.5**changes >= level:
        changes += 1
    return changes


def detectable_difference(
    spread: float, n: int, *, level: float = 0.05, power: float = 0.8
) -> float:
    """The smallest mean difference a paired test of ``n`` entries detects with ``power``.

    ``(z_(1 - level/2) + z_power) · spread / sqrt(n)``, where ``spread`` is the standard
    deviation of the paired differences: a true difference this large is found significant
    at ``level`` in a share ``power`` of runs like this one (normal approximation).

    Example:
        >>> round(detectable_difference(0.3, 100), 4)
        0.084
    """
    check_confidence(level, "level")
    check_confidence(power, "power")
    if n < 1:
        raise StatisticsInputError("a detectable difference needs at least one entry; got 0")
    return (normal_quantile(1 - level / 2) + normal_quantile(power)) * spread / math.sqrt(n)
