"""The statistics module: every statistic and p-value equals scipy's; intervals cover.

scipy is the oracle here only: ``evaltrace.statistics`` never imports it. Coverage is checked
by simulation at known rates (seeded, vectorised, a few seconds).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evaltrace.errors import StatisticsInputError
from evaltrace.statistics import (
    Interval,
    bootstrap_counts,
    bootstrap_means,
    bootstrap_means_of_counts,
    bootstrap_p_value,
    detectable_difference,
    holm,
    mcnemar_exact,
    mean_of_counts,
    normal_quantile,
    percentile_interval,
    sign_test_minimum,
    standard_error,
    standard_error_of_counts,
    wilcoxon_signed_rank,
    wilson_interval,
)

TOLERANCE = 1e-9


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.95, 0.975, 0.995, 0.9995, 1e-6, 0.025])
def test_the_normal_quantile_equals_scipys(p: float) -> None:
    assert normal_quantile(p) == pytest.approx(scipy_stats.norm.ppf(p), abs=TOLERANCE)


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(0, 1, 0.95), (1, 1, 0.95), (0, 10, 0.95), (10, 10, 0.95), (3, 10, 0.95), (7, 40, 0.9),
     (33, 40, 0.99), (500, 1000, 0.95), (1, 100_000, 0.95), (99_999, 100_000, 0.8)],
)  # fmt: skip
def test_the_wilson_interval_equals_scipys(successes: int, n: int, confidence: float) -> None:
    expected = scipy_stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")

    interval = wilson_interval(successes, n, confidence=confidence)

    assert interval.low == pytest.approx(expected.low, abs=TOLERANCE)
    assert interval.high == pytest.approx(expected.high, abs=TOLERANCE)


def test_a_wilson_interval_of_no_trials_is_refused() -> None:
    with pytest.raises(StatisticsInputError, match="no trials"):
        wilson_interval(0, 0)
    with pytest.raises(StatisticsInputError, match="3 successes of 2 trials"):
        wilson_interval(3, 2)


@pytest.mark.parametrize("n", [2, 3, 10, 57])
def test_the_standard_error_of_unclustered_scores_equals_scipys_sem(n: int) -> None:
    values = np.random.default_rng(n).random(n)

    assert standard_error(values) == pytest.approx(scipy_stats.sem(values), abs=TOLERANCE)


def test_the_clustered_standard_error_treats_each_cluster_as_one_draw() -> None:
    # Three entries judged twice each, with no spread inside an entry: the same spread as the
    # three entries once, not as six independent scores.
    once = np.array([0.2, 0.5, 0.9])
    twice = np.repeat(once, 2)
    clusters = np.repeat([7, 8, 9], 2)

    assert standard_error(twice, clusters=clusters) == pytest.approx(
        scipy_stats.sem(once), abs=TOLERANCE
    )
    assert standard_error(twice) < standard_error(twice, clusters=clusters)


def test_a_standard_error_needs_two_scores() -> None:
    assert standard_error(np.array([0.4])) is None
    assert standard_error(np.array([0.4, 0.6]), clusters=np.array([1, 1])) is None


def binomial_p_by_scipy(fixed: int, broken: int) -> float:
    return float(scipy_stats.binomtest(fixed, fixed + broken, 0.5).pvalue)


@pytest.mark.parametrize(
    ("fixed", "broken"),
    [(0, 0), (0, 1), (0, 6), (6, 0), (1, 5), (3, 3), (2, 9), (10, 25), (40, 61), (120, 90),
     (700, 760), (1500, 1300)],
)  # fmt: skip
def test_the_exact_mcnemar_p_value_equals_scipys_binomial_test(fixed: int, broken: int) -> None:
    expected = 1.0 if fixed + broken == 0 else binomial_p_by_scipy(fixed, broken)

    assert mcnemar_exact(fixed, broken) == pytest.approx(expected, abs=TOLERANCE, rel=1e-9)


def scipy_wilcoxon(differences: np.ndarray, correction: bool) -> tuple[float, float]:
    result = scipy_stats.wilcoxon(differences, correction=correction)
    return float(result.statistic), float(result.pvalue)


WILCOXON_CASES = {
    "exact, small": np.array([0.3, -0.1, 0.25, 0.5, 0.45, -0.05, 0.6, 0.7]),
    "exact, 20": np.random.default_rng(1).normal(0.1, 0.3, 20),
    "exact, 50": np.random.default_rng(2).normal(-0.05, 0.3, 50),
    "permutation, zeros": np.array([0.3, 0.0, -0.2, 0.5, 0.0, 0.4, 0.6]),
    "permutation, ties": np.array([0.25, -0.25, 0.5, 0.5, 0.75, 0.25, -0.5, 1.0, 0.25]),
    "permutation, 13": np.array([1, 1, -1, 1, 0, 1, 0.5, 0.5, 1, -0.5, 1, 1, 0.0]),
    "normal, ties, 14": np.array([1, 1, -1, 1, 0, 1, 0.5, 0.5, 1, -0.5, 1, 1, 0.0, 0.25]),
    "normal, ties, 30": np.round(np.random.default_rng(3).normal(0.1, 0.3, 30), 1),
    "normal, 51": np.random.default_rng(4).normal(0.0, 0.3, 51),
    "normal, 60 with 54 zeros": np.array([-1.0] * 6 + [0.0] * 54),
    "normal, 500 with zeros": np.round(np.random.default_rng(5).normal(0.02, 0.2, 500), 2),
    "normal, 10^5": np.random.default_rng(6).normal(0.001, 0.2, 100_000),
}


@pytest.mark.parametrize(
    ("case", "correction"),
    [
        (case, correction)
        for case in WILCOXON_CASES
        for correction in (False, True)
        # No correction applies to an enumeration (and scipy's takes seconds at n = 13).
        if not (case.startswith("permutation") and correction)
    ],
)
def test_the_wilcoxon_statistic_and_p_value_equal_scipys(case: str, correction: bool) -> None:
    differences = WILCOXON_CASES[case]
    statistic, p_value = scipy_wilcoxon(differences, correction)

    result = wilcoxon_signed_rank(differences, correction=correction)

    assert result.statistic == pytest.approx(statistic, abs=TOLERANCE)
    assert result.p_value == pytest.approx(p_value, abs=TOLERANCE)
    assert result.method == case.split(",")[0]


def test_wilcoxon_without_a_nonzero_difference_finds_no_change() -> None:
    result = wilcoxon_signed_rank(np.zeros(30))

    assert (result.p_value, result.n, result.statistic) == (1.0, 0, 0.0)


def test_wilcoxon_tells_the_direction_by_its_rank_sums() -> None:
    result = wilcoxon_signed_rank(np.array([-0.4, -0.2, -0.3, 0.1, -0.5]))

    assert result.r_minus > result.r_plus
    assert result.r_plus + result.r_minus == 15


def brute_force_holm(p_values: list[float]) -> list[float]:
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@pytest.mark.parametrize(
    "p_values",
    [[0.01], [0.01, 0.04], [0.04, 0.01, 0.03], [0.5, 0.001, 0.2, 0.02, 0.9], [0.3, 0.3, 0.3]],
)
def test_holm_adjusts_p_values_step_down(p_values: list[float]) -> None:
    assert holm(p_values) == pytest.approx(brute_force_holm(p_values), abs=1e-15)


def test_holm_of_nothing_is_nothing() -> None:
    assert holm([]) == []


def test_a_percentile_interval_reads_the_quantiles_of_the_samples() -> None:
    samples = np.arange(1001) / 1000

    interval = percentile_interval(samples, confidence=0.9)

    assert (interval.low, interval.high) == pytest.approx((0.05, 0.95), abs=1e-12)


def test_bootstrap_means_are_reproducible_and_independent_of_the_order() -> None:
    values = np.random.default_rng(7).random(200)
    shuffled = np.random.default_rng(8).permutation(values)

    first = bootstrap_means(values, resamples=500, seed=3)

    assert np.array_equal(first, bootstrap_means(shuffled, resamples=500, seed=3))
    assert not np.array_equal(first, bootstrap_means(values, resamples=500, seed=4))
    assert first.shape == (500,)


@pytest.mark.parametrize("kind", ["few distinct values", "many distinct values"])
def test_the_bootstrap_of_the_mean_has_the_spread_of_the_mean(kind: str) -> None:
    rng = np.random.default_rng(9)
    values = rng.integers(0, 5, 400) / 4 if kind == "few distinct values" else rng.random(400)

    means = bootstrap_means(values, resamples=4000, seed=1)

    assert means.mean() == pytest.approx(values.mean(), abs=0.003)
    # The bootstrap standard deviation of a mean is the plug-in sigma / sqrt(n).
    assert means.std() == pytest.approx(values.std() / math.sqrt(400), rel=0.05)


def test_the_clustered_bootstrap_resamples_whole_entries() -> None:
    # Each entry judged 5 times, identically: the clustered bootstrap sees 40 draws, so its
    # spread is that of 40 means, not of 200 independent scores.
    entries = np.random.default_rng(10).random(40)
    values = np.repeat(entries, 5)
    clusters = np.repeat(np.arange(40), 5)

    clustered = bootstrap_means(values, clusters=clusters, resamples=4000, seed=2)
    naive = bootstrap_means(values, resamples=4000, seed=2)

    assert clustered.std() == pytest.approx(entries.std() / math.sqrt(40), rel=0.06)
    assert naive.std() < 0.6 * clustered.std()


def test_bootstrap_counts_gives_a_statistic_the_counts_of_each_distinct_value() -> None:
    codes = np.array([2, 0, 2, 2, 1, 0])
    seen: list[np.ndarray] = []

    def share_of_twos(counts: np.ndarray) -> np.ndarray:
        seen.append(counts)
        return counts[:, 2] / counts.sum(axis=1)

    samples = bootstrap_counts(codes, share_of_twos, resamples=300, seed=0)

    assert samples.shape == (300,)
    assert all(block.shape[1] == 3 and (block.sum(axis=1) == 6).all() for block in seen)
    assert samples.mean() == pytest.approx(0.5, abs=0.03)


def test_a_bootstrap_p_value_is_twice_the_smaller_tail_beyond_zero() -> None:
    assert bootstrap_p_value(np.array([0.1, 0.2, 0.3, -0.1])) == 0.5
    assert bootstrap_p_value(np.array([0.1, 0.2, 0.3, 0.4])) == 0.0
    assert bootstrap_p_value(np.array([0.0, 0.0])) == 1.0


def test_the_smallest_one_sided_run_a_sign_test_can_call_significant() -> None:
    assert sign_test_minimum(0.05) == 6  # 2 / 2**6 = 0.031; 2 / 2**5 = 0.0625
    assert sign_test_minimum(0.01) == 8


def test_the_detectable_difference_shrinks_with_the_square_root_of_n() -> None:
    small = detectable_difference(0.3, 25, level=0.05)
    large = detectable_difference(0.3, 100, level=0.05)

    assert small == pytest.approx(2 * large)
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    assert large == pytest.approx(z * 0.3 / 10, abs=TOLERANCE)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bootstrap_means(np.array([]), resamples=10, seed=0), "no scores"),
        (lambda: bootstrap_means(np.array([0.1, np.nan]), resamples=10, seed=0), "not finite"),
        (
            lambda: bootstrap_means(np.ones(3), clusters=np.ones(2), resamples=10, seed=0),
            "3 scores but 2 cluster ids",
        ),
        (lambda: bootstrap_means(np.ones(3), resamples=0, seed=0), "resamples"),
        (lambda: percentile_interval(np.ones(3), confidence=1.0), "confidence"),
    ],
)
def test_bad_input_is_refused_naming_what_is_wrong(call: object, message: str) -> None:
    with pytest.raises((StatisticsInputError, ValueError), match=message):
        call()  # type: ignore[operator]


# -- coverage by simulation ------------------------------------------------------------------

RUNS = 2000


def test_wilson_intervals_cover_the_true_rate_93_to_97_percent_of_the_time() -> None:
    # Wilson's coverage oscillates with n and the rate (92% at n=25, rate 0.3; 96.6% at
    # n=100, rate 0.95): these are rates and sizes whose exact coverage is 95-96.5%.
    rng = np.random.default_rng(20)
    for rate, n in [(0.5, 40), (0.3, 50), (0.9, 60), (0.7, 80)]:
        successes = rng.binomial(n, rate, RUNS)
        intervals = [wilson_interval(int(k), n) for k in successes]
        covered = sum(interval.low <= rate <= interval.high for interval in intervals)
        assert 0.93 <= covered / RUNS <= 0.97, (rate, n, covered / RUNS)


@pytest.mark.parametrize("kind", ["pass/fail scores", "continuous scores"])
def test_bootstrap_intervals_cover_the_true_mean_93_to_97_percent_of_the_time(kind: str) -> None:
    rng = np.random.default_rng(21)
    n, resamples = 80, 1000
    if kind == "pass/fail scores":
        true_mean = 0.7
        runs = (rng.random((RUNS, n)) < true_mean).astype(float)
    else:
        a, b = 2.0, 5.0  # Beta(2, 5): skewed scores in [0, 1]
        true_mean = a / (a + b)
        runs = rng.beta(a, b, (RUNS, n))
    covered = 0
    for seed, values in enumerate(runs):
        interval = percentile_interval(
            bootstrap_means(values, resamples=resamples, seed=seed), confidence=0.95
        )
        covered += interval.low <= true_mean <= interval.high
    assert 0.93 <= covered / RUNS <= 0.97, covered / RUNS


def test_an_interval_is_a_pair_of_bounds() -> None:
    interval = Interval(low=0.25, high=0.75)

    assert interval.width == 0.5
    assert 0.5 in interval and 0.8 not in interval


def test_the_module_needs_no_scipy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "import numpy as np\n"
        "from evaltrace.statistics import wilcoxon_signed_rank, mcnemar_exact\n"
        "print(round(wilcoxon_signed_rank(np.array([0.5, -0.25, 0.75, 1.0])).p_value, 6),"
        " mcnemar_exact(1, 9))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0.25", repr(binomial_p_by_scipy(1, 9))]


def test_exact_wilcoxon_p_values_are_those_of_every_sign_assignment() -> None:
    # The definition, by brute force over the 2**8 assignments of signs to ranks 1..8.
    differences = WILCOXON_CASES["exact, small"]
    ranks = scipy_stats.rankdata(np.abs(differences))
    observed = ranks[differences > 0].sum()
    sums = [sum(r for r, s in zip(ranks, signs, strict=True) if s) for signs in
            itertools.product([0, 1], repeat=8)]  # fmt: skip
    low = sum(total <= observed for total in sums) / 256
    high = sum(total >= observed for total in sums) / 256

    assert wilcoxon_signed_rank(differences).p_value == pytest.approx(min(1, 2 * min(low, high)))


# -- statistics of counted values ---------------------------------------------------------


@pytest.mark.parametrize("distinct", [1, 2, 5, 64, 65])
def test_bootstrap_means_of_counts_equal_those_of_the_repeated_values(distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    values = rng.choice(np.linspace(0.0, 1.0, 101), size=distinct, replace=False)
    counts = rng.integers(1, 50, size=distinct)

    counted = bootstrap_means_of_counts(values, counts, resamples=300, seed=[7, 3])

    repeated = np.sort(np.repeat(values, counts))
    assert (counted == bootstrap_means(repeated, resamples=300, seed=[7, 3])).all()


def test_the_mean_and_standard_error_of_counts_equal_scipys_of_the_repeated_values() -> None:
    values, counts = [0.1, 0.7, 0.3], [3_000, 11, 250]
    repeated = np.repeat(values, counts)

    assert mean_of_counts(values, counts) == pytest.approx(float(np.mean(repeated)), abs=1e-15)
    assert standard_error_of_counts(values, counts) == pytest.approx(
        scipy_stats.sem(repeated), abs=1e-15
    )
    assert standard_error_of_counts([0.5], [1]) is None


def test_a_count_for_each_value_is_required() -> None:
    with pytest.raises(StatisticsInputError, match="2 values but 1 counts"):
        mean_of_counts([0.0, 1.0], [3])
