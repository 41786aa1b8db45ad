"""The geometry of a scorecard's charts, drawn by its template as inline SVG.

Charts are computed here as plain shapes (bars, ranges, ticks, with their tooltips) so the
template only writes elements whose attributes it escapes; nothing is drawn by string
concatenation and nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "Bar",
    "Histogram",
    "RangeChart",
    "RangeMark",
    "Tick",
    "range_chart",
    "score_histogram",
    "stacked_bar",
]

WIDTH: Final = 320
"""Width of a chart's drawing area (SVG user units)."""
HEIGHT: Final = 120
"""Height of a chart's drawing area."""
BINS: Final = 10
"""Bins of a score histogram: [0, 0.1), ..., [0.9, 1.0]."""
MAX_RANGES: Final = 100
"""Entries drawn one by one in a range chart; more are summarised by a histogram."""


@dataclass(kw_only=True, frozen=True)
class Bar:
    """A rectangle with a tooltip."""

    x: float
    """Left edge."""
    y: float
    """Top edge."""
    width: float
    """Width."""
    height: float
    """Height."""
    label: str
    """The tooltip: what the bar counts."""
    css_class: str = "bar"
    """The class the stylesheet colours it by."""


@dataclass(kw_only=True, frozen=True)
class Tick:
    """A label on an axis."""

    x: float
    """Where it sits."""
    text: str
    """What it says."""


@dataclass(kw_only=True, frozen=True)
class Histogram:
    """Counts of values in bins, as bars."""

    title: str
    """What the chart shows."""
    bars: list[Bar]
    """One bar per bin (empty bins have zero height)."""
    ticks: list[Tick]
    """Labels under the bars."""
    total: int
    """How many values were counted."""
    note: str = ""
    """What was not counted (errored or skipped evaluations)."""
    width: int = WIDTH
    """Drawing width."""
    height: int = HEIGHT
    """Drawing height (bars), without the tick labels."""


@dataclass(kw_only=True, frozen=True)
class RangeMark:
    """One entry's repeated runs: a line from lowest to highest score, a dot at the aggregate."""

    x: float
    """Horizontal position."""
    y_low: float
    """The lowest run's height."""
    y_high: float
    """The highest run's height."""
    y_score: float
    """The aggregate score's height."""
    label: str
    """The tooltip: entry, runs and aggregate."""


@dataclass(kw_only=True, frozen=True)
class RangeChart:
    """The spread of repeated runs per entry."""

    title: str
    """What the chart shows."""
    marks: list[RangeMark] = field(default_factory=list)
    """One mark per entry (when there are few enough)."""
    spread: Histogram | None = None
    """The histogram of spreads (highest minus lowest run), used when there are many entries."""
    width: int = WIDTH
    """Drawing width."""
    height: int = HEIGHT
    """Drawing height."""


def score_histogram(title: str, scores: Sequence[float], *, note: str = "") -> Histogram:
    """Bars of how many scores fall in each tenth of [0, 1] (1.0 in the last bin)."""
    counts = [0] * BINS
    for score in scores:
        counts[min(int(score * BINS), BINS - 1)] += 1
    return _histogram(
        title,
        counts,
        [f"{i / BINS:.1f} to {(i + 1) / BINS:.1f}" for i in range(BINS)],
        note=note,
        total=len(scores),
    )


def range_chart(title: str, runs: Mapping[str, tuple[Sequence[float], float | None]]) -> RangeChart:
    """The spread of each entry's repeated runs (``{entry: (run scores, aggregate)}``).

    Up to :data:`MAX_RANGES` entries are drawn one by one, ordered by aggregate score; more
    are summarised by a histogram of their spreads.
    """
    usable = {name: (scores, agg) for name, (scores, agg) in runs.items() if scores}
    if len(usable) > MAX_RANGES:
        spreads = [max(scores) - min(scores) for scores, _ in usable.values()]
        counts = [0] * BINS
        for spread in spreads:
            counts[min(int(spread * BINS), BINS - 1)] += 1
        histogram = _histogram(
            f"{title}: spread (highest minus lowest run) over {len(usable):,} entries",
            counts,
            [f"{i / BINS:.1f}" for i in range(BINS)],
            total=len(spreads),
        )
        return RangeChart(title=title, spread=histogram)
    ordered = sorted(usable.items(), key=lambda item: (item[1][1] is None, item[1][1] or 0.0))
    step = WIDTH / max(len(ordered), 1)
    marks = [
        RangeMark(
            x=step * (index + 0.5),
            y_low=_height(min(scores)),
            y_high=_height(max(scores)),
            y_score=_height(agg if agg is not None else sum(scores) / len(scores)),
            label=(
                f"{name}: runs {', '.join(f'{s:g}' for s in scores)}"
                + ("" if agg is None else f"; score {agg:g}")
            ),
        )
        for index, (name, (scores, agg)) in enumerate(ordered)
    ]
    return RangeChart(title=title, marks=marks)


def stacked_bar(counts: Mapping[str, int]) -> list[Bar]:
    """One horizontal bar split by status, each part as wide as its share."""
    total = sum(counts.values())
    bars: list[Bar] = []
    x = 0.0
    for status, count in counts.items():
        if not count:
            continue
        width = WIDTH * count / total
        bars.append(
            Bar(
                x=x,
                y=0,
                width=width,
                height=16,
                label=f"{status}: {count:,} ({100 * count / total:.1f}%)",
                css_class=f"st-{status}",
            )
        )
        x += width
    return bars


def _histogram(
    title: str, counts: Sequence[int], labels: Sequence[str], *, total: int, note: str = ""
) -> Histogram:
    top = max(counts) if counts and max(counts) else 1
    step = WIDTH / len(counts)
    bars = [
        Bar(
            x=index * step + 1,
            y=HEIGHT - HEIGHT * count / top,
            width=step - 2,
            height=HEIGHT * count / top,
            label=f"{labels[index]}: {count:,}",
        )
        for index, count in enumerate(counts)
    ]
    ticks = [Tick(x=0, text="0"), Tick(x=WIDTH / 2, text="0.5"), Tick(x=WIDTH, text="1")]
    return Histogram(title=title, bars=bars, ticks=ticks, total=total, note=note)


def _height(score: float) -> float:
    return HEIGHT - HEIGHT * score
