"""The start-a-run form: dictionary, gold collections, the method, and its main knobs with their defaults
(BioSyn: the paper's hyperparameters; LATTE: epochs, latent types K and top-k, the rest the linker's defaults)."""

from __future__ import annotations

from typing import Any

from django import forms

from webapp.corpus.models import Collection
from webapp.training.params import BIOSYN, LATTE, default_params
from webapp.vocab.models import Dictionary

DEFAULTS = default_params(BIOSYN)
LATTE_DEFAULTS = default_params(LATTE)


class StartRunForm(forms.Form):
    method = forms.ChoiceField(
        choices=[(BIOSYN, "BioSyn: train the encoder on synonyms and mentions"),
                 (LATTE, "LATTE: a re-ranker over the active model (context, latent and known types)")],
        initial=BIOSYN, widget=forms.RadioSelect, required=False,
    )
    dictionary = forms.ModelChoiceField(queryset=Dictionary.objects.order_by("slug"), to_field_name="slug")
    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug",
        help_text="Gold mentions to train on; curator decisions made so far are added.",
    )
    eval_collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug", required=False,
        label="Evaluate on", help_text="A gold collection held out of training (Acc@1, Acc@5).",
    )
    base_model = forms.CharField(required=False, max_length=500, help_text="Local Hugging Face folder; empty: the default base model.")
    epochs = forms.IntegerField(min_value=0, max_value=1000, initial=DEFAULTS["epochs"],
                                help_text="0: the scope's default (10, the paper's, on a GPU; 1 for the CPU student).")
    topk = forms.IntegerField(min_value=1, max_value=200, initial=DEFAULTS["topk"], label="Top-k candidates")
    dense_ratio = forms.FloatField(min_value=0.0, max_value=1.0, initial=DEFAULTS["dense_ratio"], label="Dense share α")
    lr = forms.FloatField(min_value=0.0, initial=DEFAULTS["lr"], label="Learning rate",
                          help_text="0: the scope's default (1e-5, the paper's; 2e-5 for the student).")
    batch_size = forms.IntegerField(min_value=1, max_value=4096, initial=DEFAULTS["batch_size"])
    max_length = forms.IntegerField(min_value=4, max_value=512, initial=DEFAULTS["max_length"])
    train_scope = forms.ChoiceField(
        choices=[("auto", "auto (full on a GPU, student on a CPU)"), ("full", "full (the paper)"),
                 ("student", "student (the paper on 3 layers: CPU)"), ("head", "head (frozen transformer)")],
        initial=DEFAULTS["train_scope"],
    )
    skip_pretrain = forms.BooleanField(required=False, label="Skip synonym pre-training")
    max_queries = forms.IntegerField(min_value=0, initial=0, help_text="Train on the first N queries only (0: all).")

    latte_epochs = forms.IntegerField(min_value=1, max_value=1000, initial=LATTE_DEFAULTS["epochs"], label="LATTE epochs")
    latent_types = forms.IntegerField(min_value=1, max_value=65536, initial=LATTE_DEFAULTS["latent_types"],
                                      label="Latent types K", help_text="The paper's 2048; most stay empty on a small dictionary.")
    latte_top_k = forms.IntegerField(min_value=2, max_value=200, initial=LATTE_DEFAULTS["top_k"], label="LATTE top-k",
                                     help_text="Retriever candidates the re-ranker orders (the paper's 10).")

    PARAMS = ("epochs", "topk", "dense_ratio", "lr", "batch_size", "max_length", "train_scope", "skip_pretrain", "max_queries")
    # LATTE's form fields -> its params; the rest keep LATTE's defaults.
    LATTE_PARAMS = {"latte_epochs": "epochs", "latent_types": "latent_types", "latte_top_k": "top_k"}
    LATTE_FIELDS = tuple(LATTE_PARAMS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the chosen method's fields matter; an empty one keeps its default.
        for name in (*self.PARAMS, *self.LATTE_FIELDS):
            self.fields[name].required = False

    def groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The fields as the page shows them: what every run needs, then each method's knobs."""
        own = {"method", *self.PARAMS, *self.LATTE_FIELDS, "base_model"}
        return [
            ("", [self["method"]] + [f for f in self if f.name not in own]),
            ("BioSyn", [self[name] for name in ("base_model", *self.PARAMS)]),
            ("LATTE", [self[name] for name in self.LATTE_FIELDS]),
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        dictionary, evaluation = data.get("dictionary"), data.get("eval_collection")
        for collection in list(data.get("collections") or []) + ([evaluation] if evaluation else []):
            if dictionary is not None and collection.dictionary_id not in (None, dictionary.pk):
                self.add_error(None, f"{collection} links to another dictionary ({collection.dictionary}).")
        return data

    def params(self) -> dict[str, Any]:
        """The chosen method's params (with ``method``) from the fields of that method."""
        data = self.cleaned_data
        method = data.get("method") or BIOSYN
        if method == LATTE:
            chosen = {param: data.get(field) for field, param in self.LATTE_PARAMS.items()}
        else:
            chosen = {name: data.get(name) for name in self.PARAMS}
        return {"method": method} | {k: v for k, v in chosen.items() if v not in (None, "")}
