"""The geometry of a scorecard's charts, drawn by its template as inline SVG.

Charts are computed here as plain shapes (bars, ranges, ticks, with their tooltips) so the
template only writes elements whose attributes it escapes; nothing is drawn by string
concatenation and nothing is fetched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "Bar",
    "Histogram",
    "RangeChart",
    "RangeMark",
    "SeriesChart",
    "SeriesPoint",
    "Tick",
    "range_chart",
    "score_histogram",
    "series_chart",
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
_X_LABELS: Final = 6
"""At most this many runs get their date written under a chart over time."""


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


@dataclass(kw_only=True, frozen=True)
class SeriesPoint:
    """One run's value on a chart over time: a dot (a link to its page), within its band."""

    x: float
    """Horizontal position (runs are evenly spaced, oldest on the left)."""
    y: float
    """The value's height."""
    y_low: float | None
    """The height of its interval's lower bound (``None``: no interval)."""
    y_high: float | None
    """The height of its upper bound."""
    label: str
    """The tooltip: run, value, interval, n."""
    href: str | None
    """Where the dot links to (the run's scorecard), relative to the page."""
    mark: str = ""
    """``"worse"``, ``"better"`` or ``"changed"`` when the run changed significantly."""


@dataclass(kw_only=True, frozen=True)
class SeriesChart:
    """A figure of successive runs: a line through the values over a band of their intervals."""

    title: str
    """What the chart shows."""
    points: list[SeriesPoint]
    """One per run that has the figure, oldest first."""
    line: str
    """The SVG ``points`` of the line through the values."""
    band: str
    """The SVG ``points`` of the band's polygon (empty without intervals)."""
    y_ticks: list[Tick]
    """Labels on the vertical axis (``x`` holds their height)."""
    x_ticks: list[Tick]
    """Labels under the runs (the date of a few of them)."""
    width: int = WIDTH
    """Drawing width."""
    height: int = HEIGHT
    """Drawing height, without the labels."""


def series_chart(
    title: str,
    values: Sequence[tuple[float, tuple[float, float] | None, str, str | None, str]],
    *,
    x_labels: Sequence[str],
    floor: float | None = 0.0,
    ceiling: float | None = 1.0,
    digits: int = 3,
) -> SeriesChart:
    """A chart of a figure over successive runs.

    Args:
        title: What it shows.
        values: Per run, oldest first: ``(value, (low, high) or None, tooltip, link, mark)``.
        x_labels: Per run, what to write under it (a few are written, evenly spread).
        floor: The lowest value the axis shows at least (``None``: the data's lowest).
        ceiling: The highest value the axis shows at least (``None``: the data's highest).
        digits: Decimals of the axis labels.
    """
    seen = [bound for value, bounds, *_ in values for bound in (value, *(bounds or ()))]
    bottom = min([*seen, *([] if floor is None else [floor])], default=0.0)
    top = max([*seen, *([] if ceiling is None else [ceiling])], default=1.0)
    if top <= bottom:
        top = bottom + 1.0
    step = WIDTH / max(len(values), 1)

    def height(value: float) -> float:
        return HEIGHT - HEIGHT * (value - bottom) / (top - bottom)

    points = [
        SeriesPoint(
            x=step * (index + 0.5),
            y=height(value),
            y_low=None if bounds is None else height(bounds[0]),
            y_high=None if bounds is None else height(bounds[1]),
            label=label,
            href=href,
            mark=mark,
        )
        for index, (value, bounds, label, href, mark) in enumerate(values)
    ]
    line = " ".join(f"{point.x:.2f},{point.y:.2f}" for point in points)
    band = ""
    if any(point.y_low is not None for point in points):
        upper = [f"{p.x:.2f},{p.y if p.y_high is None else p.y_high:.2f}" for p in points]
        lower = [f"{p.x:.2f},{p.y if p.y_low is None else p.y_low:.2f}" for p in reversed(points)]
        band = " ".join(upper + lower)
    shown = max(1, math.ceil(len(x_labels) / _X_LABELS))
    return SeriesChart(
        title=title,
        points=points,
        line=line,
        band=band,
        y_ticks=[
            Tick(x=height(value), text=f"{value:.{digits}g}")
            for value in (bottom, (bottom + top) / 2, top)
        ],
        x_ticks=[
            Tick(x=step * (index + 0.5), text=text)
            for index, text in enumerate(x_labels)
            if index % shown == 0
        ],
    )


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
