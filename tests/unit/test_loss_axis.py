"""The loss chart's y axis (issue #46): from 0, so that a loss moving 1 % does not fill the chart like a crash."""

from __future__ import annotations

from webapp.training.views import loss_axis, loss_curve


def test_axis_starts_at_zero_for_losses() -> None:
    assert loss_axis(0.809, 0.821) == (0.0, 0.821)


def test_flat_or_zero_losses_still_have_a_range() -> None:
    assert loss_axis(0.0, 0.0) == (0.0, 1.0)
    assert loss_axis(0.5, 0.5) == (0.0, 0.5)


def test_negative_values_are_padded() -> None:
    low, high = loss_axis(-2.0, 2.0)
    assert low < -2.0 and high > 2.0


def test_small_noise_stays_a_small_wiggle_on_the_chart() -> None:
    history = [{"phase": "biosyn", "step": i + 1, "loss": v} for i, v in enumerate([0.821, 0.809, 0.815, 0.82])]
    curve = loss_curve(history)
    assert curve is not None and curve.axis_low == 0.0 and curve.axis_high == 0.821
    ys = [float(point.split(",")[1]) for point in curve.points.split()]
    # 0.809 to 0.821 is 1.5 % of the axis: the points lie within a few pixels of each other, near the top.
    assert max(ys) - min(ys) < 3 and max(ys) < (curve.top + curve.bottom) / 2
