"""Input of the curation views, validated before any service is called."""

from __future__ import annotations

from datetime import datetime

from django import forms

from webapp.curation.models import Decision
from webapp.curation.services import Scope


class SeenField(forms.CharField):
    """The mention version the curator saw: its ``updated_at`` as ISO 8601, with microseconds."""

    def to_python(self, value: object) -> datetime | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise forms.ValidationError("not a timestamp") from None
        if parsed.tzinfo is None:
            raise forms.ValidationError("the timestamp needs a time zone")
        return parsed


class DecisionForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, a) for a in ("accept", "relink", "nil", "reject")])
    concept = forms.IntegerField(required=False, min_value=1, help_text="Primary key of the chosen Concept.")
    part = forms.IntegerField(required=False, min_value=0, help_text="Composite part; empty: every part (accept, NIL).")
    via = forms.ChoiceField(choices=Decision.Via.choices, required=False)
    seen = SeenField()
    time_on_task_ms = forms.IntegerField(required=False, min_value=0, max_value=24 * 3600 * 1000)
    scope = forms.ChoiceField(choices=[(s, s) for s in Scope.CHOICES], required=False)
    # The panel's "decide without teaching" box sends "false"; left out, the decision teaches (webapp.curation.teaching).
    teach = forms.TypedChoiceField(choices=[(v, v) for v in ("true", "false", "1", "0")], coerce=lambda v: v in ("true", "1"),
                                   required=False, empty_value=True)
    # The mention the page moves on to after this decision (auto-advance): the answer is its panel, so the page
    # needs no second request (bench/curator_speed.py measured that request as a third of a decision's wait).
    next = forms.IntegerField(required=False, min_value=1)


class SpanForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    mention_type = forms.CharField(required=False, max_length=64)
    seen = SeenField(required=False)
    time_on_task_ms = forms.IntegerField(required=False, min_value=0, max_value=24 * 3600 * 1000)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if "start" in data and "end" in data and data["end"] <= data["start"]:
            raise forms.ValidationError("the span is empty")
        return data
