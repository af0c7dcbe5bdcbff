"""Template filters that write the training pages' figures as their cards do: a duration as "36 min 24 s", not
"2184.4 s" (counts use Django's ``floatformat:"g"``: "74,431")."""

from __future__ import annotations

from django import template

from webapp.training.index_progress import duration as _duration

register = template.Library()


@register.filter
def duration(seconds: float | int | str | None) -> str:
    """Seconds as "12 s", "5 min 51 s", "1 h 04 min"; an empty string for no value (the template shows its dash)."""
    if seconds is None or seconds == "":
        return ""
    try:
        return _duration(float(seconds))
    except (TypeError, ValueError):
        return ""
