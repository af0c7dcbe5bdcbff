"""The dashboard's time chart (webapp.training.time_chart): where points land, the axes, a lone point, negatives."""

from __future__ import annotations

from datetime import datetime, timedelta

from webapp.training.time_chart import (
    CHART_HEIGHT,
    CHART_WIDTH,
    PLOT_BOTTOM,
    PLOT_LEFT,
    PLOT_RIGHT,
    PLOT_TOP,
    Point,
    Series,
    time_chart,
)

T0 = datetime(2026, 10, 5, 12)
LEFT, RIGHT, TOP, BOTTOM = PLOT_LEFT, CHART_WIDTH - PLOT_RIGHT, PLOT_TOP, CHART_HEIGHT - PLOT_BOTTOM


def test_no_point_no_chart() -> None:
    assert time_chart([Series("a", "a", [])]) is None


def test_two_series_share_the_time_axis_and_a_zero_to_one_scale() -> None:
    chart = time_chart([Series("agreement", "agreement", [Point(T0, 1.0, "first"), Point(T0 + timedelta(days=10), 0.5, "last")]),
                        Series("acc", "acc1", [Point(T0 + timedelta(days=5), 0.0, "middle")])])
    assert chart is not None
    agreement, acc = chart.series
    assert agreement.dots == [(LEFT, TOP, "first"), (RIGHT, (TOP + BOTTOM) / 2, "last")]
    assert agreement.polyline == f"{LEFT:.1f},{TOP:.1f} {RIGHT:.1f},{(TOP + BOTTOM) / 2:.1f}"
    assert acc.dots == [((LEFT + RIGHT) / 2, BOTTOM, "middle")] and acc.polyline == ""  # one point: a dot alone
    assert [label for _, label in chart.y_ticks] == ["0", "0.5", "1"]
    labels = [label for _, label, _ in chart.x_ticks]
    assert labels[0] == "2026-10-05" and labels[-1] == "2026-10-15" and len(labels) == 5


def test_a_negative_kappa_extends_the_axis_below_zero() -> None:
    chart = time_chart([Series("k", "agreement", [Point(T0, -0.3, "bad"), Point(T0 + timedelta(days=1), 0.9, "good")])])
    assert chart is not None
    assert chart.y_ticks[0][1] == "-0.4"
    assert chart.series[0].dots[0][1] < BOTTOM  # -0.3 sits above the axis' floor of -0.4


def test_a_lone_point_sits_in_the_middle_under_its_date() -> None:
    chart = time_chart([Series("a", "acc1", [Point(T0, 0.8, "x")])])
    assert chart is not None
    assert chart.series[0].dots[0][0] == (LEFT + RIGHT) / 2
    assert chart.x_ticks == [((LEFT + RIGHT) / 2, "2026-10-05", "middle")]
