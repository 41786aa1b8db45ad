"""A run's tokens, cost and latency: :class:`UsageTally`, :class:`LatencySummary`, :class:`RunCost`.

Each entry saves the app's model calls (:attr:`~evaltrace.results.EntryResult.usage`), its
judges' calls (``judge_usage``) and the app's wall time (``duration_s``); a run adds them up
in a :class:`UsageTally` as its entries finish (a resumed run adds the entries it had, a
merge every shard's), and saves the totals, the app's latency percentiles and, when it was
given a price table, the cost.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field

from evaltrace.llm.calls import Counts, ModelUsage, total_usage
from evaltrace.llm.prices import Cost, PriceTable
from evaltrace.llm.usage import JudgeUsage

__all__ = [
    "LATENCY_PERCENTILES",
    "LatencySummary",
    "RunCost",
    "UsageTally",
    "describe_usage",
    "latency_summary",
    "run_cost",
]

LATENCY_PERCENTILES = (50, 95, 99)
"""The percentiles of the app's latency a run reports."""


class LatencySummary(BaseModel):
    """The app's wall time over a run's entries that ran it.

    Percentiles are numpy's default (linear interpolation between the closest ranks).

    Example:
        >>> latency_summary([1.0, 2.0, 3.0, 4.0]).p50_s
        2.5
    """

    model_config = ConfigDict(frozen=True)

    n: int = Field(ge=0)
    """Entries the app ran for (those scored from an output given, or that never ran, are
    left out)."""
    mean_s: float
    """Mean wall time, in seconds."""
    p50_s: float
    """Median wall time."""
    p95_s: float
    """95th percentile."""
    p99_s: float
    """99th percentile."""
    max_s: float
    """Slowest entry."""


def latency_summary(
    durations: array[float] | list[float], *, reorder: bool = False
) -> LatencySummary | None:
    """The summary of ``durations`` (seconds); ``None`` when there are none.

    Args:
        durations: The wall times.
        reorder: Whether ``durations`` (an ``array("d")``) may be left in another order
            rather than copied.
    """
    if not durations:
        return None
    # A view of the array, partitioned in place: the two copies made before raised a
    # 10**6-entry run's peak 16 MiB at its end (bench_dataset_memory.py).
    if reorder and isinstance(durations, array) and durations.typecode == "d":
        values = np.frombuffer(durations, dtype=np.float64)
    else:
        values = np.array(durations, dtype=float)
    mean, largest = float(values.mean()), float(values.max())
    p50, p95, p99 = np.percentile(values, LATENCY_PERCENTILES, overwrite_input=True)
    return LatencySummary(
        n=len(values),
        mean_s=mean,
        p50_s=float(p50),
        p95_s=float(p95),
        p99_s=float(p99),
        max_s=largest,
    )


class RunCost(BaseModel):
    """What a run's model calls cost, by the price table it was given.

    Example:
        >>> from evaltrace.llm.prices import ModelPrice
        >>> table = PriceTable(models={"m": ModelPrice(input=1.0, output=1.0)})
        >>> cost = run_cost(table, {"m": ModelUsage(calls=1, input_tokens=10**6)}, {})
        >>> cost.app.total, cost.judges.total, cost.total
        (1.0, 0.0, 1.0)
    """

    model_config = ConfigDict(frozen=True)

    app: Cost
    """The app's model calls."""
    judges: Cost
    """The judges' calls (those the judge cache answered cost nothing)."""
    currency: str = "USD"
    """The currency of the prices."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> float | None:
        """App and judges together; ``None`` (unknown) when either is (saved in the JSON)."""
        app, judges = self.app.total, self.judges.total
        return None if app is None or judges is None else app + judges


def run_cost(
    prices: PriceTable,
    usage: Mapping[str, ModelUsage],
    judge_usage: Mapping[str, JudgeUsage],
) -> RunCost:
    """What the app's calls (``usage``) and the judges' cost by ``prices``."""
    return RunCost(
        app=prices.cost(usage), judges=prices.cost(judge_usage), currency=prices.currency
    )


class UsageTally:
    """The tokens and wall times of a run's entries, added up as they finish."""

    def __init__(self) -> None:
        # Each model's counts, added up in place, its totals made once when read: a new dict
        # and a new model per entry were about 2% of scoring a stored trace (bench_stored.py,
        # bench/README.md).
        self._usage: dict[str, list[int]] = {}
        self._judge_usage: dict[str, list[int]] = {}
        # 8 bytes an entry: a run of 10⁵ entries keeps its latencies in under a megabyte.
        self.durations: array[float] = array("d")
        """The app's wall time of each entry that ran it."""

    @property
    def usage(self) -> dict[str, ModelUsage]:
        """The app's model calls, by model."""
        return {model: ModelUsage.from_counts(counts) for model, counts in self._usage.items()}

    @property
    def judge_usage(self) -> dict[str, JudgeUsage]:
        """The judges' calls, by model."""
        return {
            model: JudgeUsage.from_counts(counts) for model, counts in self._judge_usage.items()
        }

    def add(
        self,
        usage: Mapping[str, ModelUsage],
        judge_usage: Mapping[str, JudgeUsage],
        duration_s: float,
    ) -> None:
        """Add one entry: its app's calls, its judges' calls, its app's wall time (0: none)."""
        if usage:
            _add_counts(self._usage, usage)
        if judge_usage:
            _add_counts(self._judge_usage, judge_usage)
        if duration_s > 0:
            self.durations.append(duration_s)

    def fields(self, prices: PriceTable | None) -> dict[str, object]:
        """The run's saved fields: ``usage``, ``judge_usage``, ``latency``, ``prices``, ``cost``.

        :attr:`durations` are left in another order.
        """
        usage, judge_usage = self.usage, self.judge_usage
        return {
            "usage": usage,
            "judge_usage": judge_usage,
            "latency": latency_summary(self.durations, reorder=True),
            "prices": prices,
            "cost": None if prices is None else run_cost(prices, usage, judge_usage),
        }


def _add_counts(totals: dict[str, list[int]], more: Mapping[str, Counts]) -> None:
    """Add each model's counts of ``more`` to ``totals``, in place."""
    for model, usage in more.items():
        counts = usage.counts()
        total = totals.get(model)
        if total is None:
            totals[model] = list(counts)
        else:
            for position, count in enumerate(counts):
                total[position] += count


def describe_usage(
    usage: Mapping[str, ModelUsage], latency: LatencySummary | None, cost: RunCost | None
) -> list[str]:
    """Lines saying what a run's app spent and how long it took (none for neither).

    Example:
        >>> describe_usage({"m": ModelUsage(calls=2, input_tokens=1200, output_tokens=80)},
        ...                latency_summary([0.5, 1.5]), None)
        ['app: 2 model calls (1,200 input tokens; 80 output tokens); cost unknown (no price table)', 'latency: p50 1.000 s, p95 1.450 s, p99 1.490 s (n=2)']
    """  # noqa: E501
    lines = []
    total = total_usage(usage)
    if total.calls:
        plural = "" if total.calls == 1 else "s"
        cached = f", {total.cached_tokens:,} of them cached" if total.cached_tokens else ""
        line = (
            f"app: {total.calls:,} model call{plural} ({total.input_tokens:,} input tokens"
            f"{cached}; {total.output_tokens:,} output tokens)"
        )
        if total.calls_without_tokens:
            line += f", {total.calls_without_tokens:,} without token counts"
        lines.append(line + "; " + _cost_words(cost))
    elif cost is not None and cost.judges.total:
        lines.append("app: no model call; " + _cost_words(cost))
    if latency is not None:
        lines.append(
            f"latency: p50 {latency.p50_s:.3f} s, p95 {latency.p95_s:.3f} s, "
            f"p99 {latency.p99_s:.3f} s (n={latency.n:,})"
        )
    return lines


def _cost_words(cost: RunCost | None) -> str:
    if cost is None:
        return "cost unknown (no price table)"
    table = PriceTable(currency=cost.currency)
    app = cost.app.total
    judges = cost.judges.total
    words = f"cost {table.format(app)}"
    if app is None:
        words += f" ({cost.app.why_unknown()})"
    judged = table.format(judges)
    if judges is None:
        judged += f" ({cost.judges.why_unknown()})"
    return f"{words}, judges {judged}, total {table.format(cost.total)}"
