"""The learning loop's settings per dictionary: the promotion gate and the retrain policy (webapp.training.loop).

Drops are typed in points (0.5 = half a point of Acc@1), the way the gate's verdict speaks, and stored as the
fractions the model keeps."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from webapp.corpus.models import Collection
from webapp.training.loop import POLICY_METHODS
from webapp.training.models import PromotionGate, RetrainPolicy, TrainingRun
from webapp.vocab.models import Dictionary


def gold_collections(dictionary: Dictionary) -> Any:
    """The dictionary's gold collections (and gold collections that name no dictionary)."""
    return Collection.objects.filter(has_gold=True).filter(dictionary__in=[dictionary]) | Collection.objects.filter(
        has_gold=True, dictionary__isnull=True)


class CollectionField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Collection) -> str:
        return f"{obj.slug} ({obj.title})" if obj.title and obj.title != obj.slug else obj.slug


class CollectionsField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Collection) -> str:
        return CollectionField.label_from_instance(self, obj)  # type: ignore[arg-type]


class GateForm(forms.Form):
    collection = CollectionField(
        queryset=Collection.objects.none(), to_field_name="slug", label="Gold collection",
        help_text="Frozen gold data every candidate and the active index are measured on; never trained on.",
        error_messages={"required": "Choose the gold collection the gate measures on.",
                        "invalid_choice": "That is not a gold collection of this dictionary."},
    )
    max_acc1_drop = forms.FloatField(
        label="Largest Acc@1 drop (points)", min_value=0, max_value=100, initial=0.0,
        help_text="0.5: a candidate may be half a point below the active index's Acc@1; 0: it must be at least as good.",
        error_messages={"required": "Say how far Acc@1 may drop, in points (0 for none)."},
    )
    max_type_drop = forms.FloatField(
        label="Largest drop per mention type (points)", min_value=0, max_value=100, required=False,
        help_text="The same for each mention type's Acc@1; empty: types are not checked.",
    )
    min_type_mentions = forms.IntegerField(
        label="Smallest type checked (mentions)", min_value=1, initial=20,
        help_text="Types with fewer gold mentions are not checked (a few mentions make a noisy figure).",
    )
    auto_promote = forms.BooleanField(
        label="Promote a run that passes without an admin", required=False,
        help_text="Runs are evaluated on the collection when they finish; one that passes serves at once.",
    )

    def __init__(self, dictionary: Dictionary, *args: Any, **kwargs: Any) -> None:
        gate = PromotionGate.objects.filter(dictionary=dictionary).select_related("collection").first()
        if gate is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                "collection": gate.collection.slug, "max_acc1_drop": round(100 * gate.max_acc1_drop, 3),
                "max_type_drop": round(100 * gate.max_type_drop, 3) if gate.max_type_drop is not None else None,
                "min_type_mentions": gate.min_type_mentions, "auto_promote": gate.auto_promote,
            }
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = gold_collections(dictionary).order_by("slug")

    def fractions(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "collection": data["collection"], "max_acc1_drop": data["max_acc1_drop"] / 100,
            "max_type_drop": data["max_type_drop"] / 100 if data["max_type_drop"] is not None else None,
            "min_type_mentions": data["min_type_mentions"], "auto_promote": data["auto_promote"],
        }


class PolicyForm(forms.Form):
    enabled = forms.BooleanField(label="Retrain without an admin", required=False, initial=True)
    every_decisions = forms.IntegerField(
        label="Every N new decisions", min_value=1, required=False,
        help_text="Curator decisions (accept, relink, NIL, reject; undone and auto-accepted ones not counted). "
                  "Empty: never by count.",
    )
    nightly = forms.BooleanField(label="Nightly, when there were new decisions", required=False)
    method = forms.ChoiceField(
        choices=[(m, label) for m, label in TrainingRun.Method.choices if m in POLICY_METHODS],
        initial=TrainingRun.Method.BIOSYN,
    )
    params = forms.CharField(
        label="Parameters (JSON)", required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "style": "width: 100%"}),
        help_text='Only what differs from the method\'s defaults, e.g. {"epochs": 2}; empty: the defaults.',
    )
    collections = CollectionsField(
        queryset=Collection.objects.none(), to_field_name="slug", widget=forms.CheckboxSelectMultiple,
        label="Gold training collections",
        error_messages={"required": "Choose at least one gold collection as training data."},
    )

    def __init__(self, dictionary: Dictionary, *args: Any, **kwargs: Any) -> None:
        policy = RetrainPolicy.objects.filter(dictionary=dictionary).first()
        if policy is not None and "initial" not in kwargs:
            defaults = {k: v for k, v in policy.params.items() if k != "method"}
            from webapp.training.params import default_params

            base = default_params(policy.method)
            changed = {k: v for k, v in defaults.items() if base.get(k) != v}
            kwargs["initial"] = {
                "enabled": policy.enabled, "every_decisions": policy.every_decisions, "nightly": policy.nightly,
                "method": policy.method, "params": json.dumps(changed) if changed else "",
                "collections": [c.slug for c in policy.collections.all()],
            }
        super().__init__(*args, **kwargs)
        self.fields["collections"].queryset = gold_collections(dictionary).order_by("slug")

    def clean_params(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("params") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError('Parameters are a JSON object of names and values, e.g. {"epochs": 2}.')
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("enabled") and not data.get("every_decisions") and not data.get("nightly"):
            raise forms.ValidationError("Say when to retrain: every N decisions, nightly, or both (or switch it off).")
        return data
