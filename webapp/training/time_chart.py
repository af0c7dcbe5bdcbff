"""An inline SVG chart of figures between 0 and 1 over time, several series on one time axis, drawn on the server
as the run page draws its loss curve (:func:`webapp.training.views.loss_curve`): no script, no library, so it
works offline and prints. The template draws what this computes: the points, the dots (each with a title a pointer
shows), the axis labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time

CHART_WIDTH, CHART_HEIGHT = 720, 220
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 44, 16, 14, 30
X_TICKS = 5  # dates along the time axis, the two ends included


@dataclass(frozen=True)
class Point:
    when: datetime
    value: float
    title: str  # what a pointer over the dot shows: the figure and what it was measured on


@dataclass(frozen=True)
class Series:
    name: str
    css: str  # the series' class in the template (its colour)
    points: Sequence[Point]


@dataclass(frozen=True)
class DrawnSeries:
    name: str
    css: str
    polyline: str  # "" with a single point (a dot alone)
    dots: list[tuple[float, float, str]]  # x, y, title
    last: float


@dataclass(frozen=True)
class TimeChart:
    series: list[DrawnSeries]
    y_ticks: list[tuple[float, str]]  # y, label
    x_ticks: list[tuple[float, str, str]]  # x, label, text-anchor
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    left: int = PLOT_LEFT
    right: int = CHART_WIDTH - PLOT_RIGHT
    top: int = PLOT_TOP
    bottom: int = CHART_HEIGHT - PLOT_BOTTOM


def as_datetime(day: date) -> datetime:
    return datetime.combine(day, time(12))  # a day's figure sits at its middle


def time_chart(series: Sequence[Series]) -> TimeChart | None:
    """The chart of the series that have points (None when none has): y from 0 (or the lowest value, for a
    negative kappa) to 1, x from the first point to the last over all series."""
    drawn = [s for s in series if s.points]
    if not drawn:
        return None
    whens = [p.when.replace(tzinfo=None) for s in drawn for p in s.points]
    values = [p.value for s in drawn for p in s.points]
    first, last = min(whens), max(whens)
    span = (last - first).total_seconds()
    lowest = min(values)
    low = 0.0 if lowest >= 0 else math.floor((lowest - 0.05) * 10) / 10  # a negative kappa: room below it
    left, right, top, bottom = PLOT_LEFT, CHART_WIDTH - PLOT_RIGHT, PLOT_TOP, CHART_HEIGHT - PLOT_BOTTOM

    def x(when: datetime) -> float:
        if not span:
            return (left + right) / 2
        return round(left + (right - left) * (when.replace(tzinfo=None) - first).total_seconds() / span, 1)

    def y(value: float) -> float:
        return round(bottom - (bottom - top) * (value - low) / (1.0 - low), 1)

    out = []
    for s in drawn:
        ordered = sorted(s.points, key=lambda p: p.when.replace(tzinfo=None))
        dots = [(x(p.when), y(p.value), p.title) for p in ordered]
        polyline = " ".join(f"{dx},{dy}" for dx, dy, _ in dots) if len(dots) > 1 else ""
        out.append(DrawnSeries(s.name, s.css, polyline, dots, ordered[-1].value))
    ticks = sorted({low, 0.0, 0.5, 1.0})
    y_ticks = [(y(v), f"{v:g}") for v in ticks]
    if not span:
        return TimeChart(out, y_ticks, [((left + right) / 2, first.strftime("%Y-%m-%d"), "middle")])
    shape = "%Y-%m-%d" if first.date() != last.date() else "%Y-%m-%d %H:%M"
    x_ticks = [(float(left), first.strftime(shape), "start")]
    # Dates between the ends (month-day), so a lead can tell which week a dip was; none on a span of hours.
    if (last - first).days >= 2:
        for n in range(1, X_TICKS - 1):
            when = first + (last - first) * n / (X_TICKS - 1)
            x_ticks.append((x(when), when.strftime("%m-%d"), "middle"))
    x_ticks.append((float(right), last.strftime(shape), "end"))
    return TimeChart(out, y_ticks, x_ticks)
