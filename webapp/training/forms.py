"""The start-a-run form: dictionary, gold collections, the method, and its main knobs with their defaults
(BioSyn: the paper's hyperparameters; LATTE: epochs, latent types K and top-k, the rest the linker's defaults;
HiPrBERT: more dictionaries, the batches, the distances and the held-out share). BioSyn and HiPrBERT start
from a base encoder: the default base model, a HiPrBERT one, or a folder typed in."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Exists, OuterRef

from webapp.corpus.models import Collection
from webapp.training.base_encoders import base_encoders, default_base_label, describe
from webapp.training.errors import RunError
from webapp.training.hierarchy_inputs import check_has_hierarchy
from webapp.training.hiprbert import MAX_HOLDOUT, scope_defaults
from webapp.training.models import EncoderModel
from webapp.training.params import BIOSYN, HIPRBERT, LATTE, default_params
from webapp.vocab.models import Dictionary, HierarchyEdge

DEFAULTS = default_params(BIOSYN)
LATTE_DEFAULTS = default_params(LATTE)
HIPRBERT_DEFAULTS = default_params(HIPRBERT)
STUDENT, FULL = scope_defaults("student"), scope_defaults("full")


class HierarchyDictionariesField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Dictionary) -> str:
        return str(obj) if getattr(obj, "has_edges", True) else f"{obj} (no hierarchy)"


class BaseEncoderField(forms.ModelChoiceField):
    def label_from_instance(self, obj: EncoderModel) -> str:
        return describe(obj)


class StartRunForm(forms.Form):
    method = forms.ChoiceField(
        choices=[(BIOSYN, "BioSyn: train the encoder on synonyms and mentions"),
                 (LATTE, "LATTE: a re-ranker over the active model (context, latent and known types)"),
                 (HIPRBERT, "Hierarchy pre-training (HiPrBERT): a base encoder from the dictionaries' hierarchies")],
        initial=BIOSYN, widget=forms.RadioSelect, required=False,
    )
    dictionary = forms.ModelChoiceField(queryset=Dictionary.objects.order_by("slug"), to_field_name="slug")
    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug",
        help_text="Gold mentions to train on; curator decisions made so far are added. HiPrBERT: optional, "
                  "their gold mentions become extra names of the concepts they link to.",
    )
    eval_collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(has_gold=True).order_by("slug"), to_field_name="slug", required=False,
        label="Evaluate on", help_text="A gold collection held out of training (Acc@1, Acc@5).",
    )
    base_encoder = BaseEncoderField(
        queryset=base_encoders(), to_field_name="name", required=False,
        help_text="A HiPrBERT base encoder (hierarchy pre-training) to start from, or the default base model.",
    )
    base_model = forms.CharField(required=False, max_length=500, label="Or a base model folder",
                                 help_text="Local Hugging Face folder on the workers' machine, instead of a base encoder.")
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

    extra_dictionaries = HierarchyDictionariesField(
        # Any release's edges: a hint for the label; the latest release is what is checked (clean).
        queryset=Dictionary.objects.annotate(has_edges=Exists(HierarchyEdge.objects.filter(version__dictionary=OuterRef("pk"))))
        .order_by("slug"), to_field_name="slug", required=False, label="More dictionaries",
        help_text="Also pre-train on these dictionaries' hierarchies (names of two dictionaries are never compared).",
    )
    hiprbert_scope = forms.ChoiceField(
        choices=[("auto", "auto (full on a GPU, student on a CPU)"), ("full", "full (the paper: the whole model)"),
                 ("student", "student (3 layers: CPU)")], initial=HIPRBERT_DEFAULTS["train_scope"], label="Scope",
    )
    hiprbert_epochs = forms.IntegerField(min_value=1, max_value=100, initial=HIPRBERT_DEFAULTS["epochs"], label="Epochs")
    max_batches = forms.IntegerField(
        min_value=0, max_value=10_000_000, label="Max batches per epoch",
        help_text=f"Empty: the scope's ({STUDENT['max_batches']} for the student, about 30 minutes on two CPU cores; "
                  f"{FULL['max_batches'] or 'all'} for full). 0: every name once.",
    )
    hiprbert_batch_size = forms.IntegerField(
        min_value=2, max_value=4096, label="Batch size (names)",
        help_text=f"Empty: the scope's ({STUDENT['batch_size']} for the student, {FULL['batch_size']} for full, the paper's).",
    )
    distances = forms.ChoiceField(
        choices=[("hierarchy", "hierarchy: synonym, sibling, parent-child, other (the paper)"),
                 ("synonym", "synonym only (the SapBERT-style baseline)")],
        initial=HIPRBERT_DEFAULTS["distances"],
    )
    holdout_share = forms.FloatField(
        min_value=0.0, max_value=MAX_HOLDOUT, initial=HIPRBERT_DEFAULTS["holdout_share"], label="Held-out share",
        help_text="Concepts left out of training and scored on (ROC AUC, Spearman per distance); 0: none.",
    )
    device = forms.ChoiceField(choices=[("", "auto (cuda if the worker has one)"), ("cpu", "cpu"), ("cuda", "cuda")],
                               initial="")

    PARAMS = ("epochs", "topk", "dense_ratio", "lr", "batch_size", "max_length", "train_scope", "skip_pretrain", "max_queries")
    # LATTE's form fields -> its params; the rest keep LATTE's defaults.
    LATTE_PARAMS = {"latte_epochs": "epochs", "latent_types": "latent_types", "latte_top_k": "top_k"}
    LATTE_FIELDS = tuple(LATTE_PARAMS)
    # HiPrBERT's form fields -> its params (lr and the rest keep the linker's defaults).
    HIPRBERT_PARAMS = {"hiprbert_scope": "train_scope", "hiprbert_epochs": "epochs", "max_batches": "max_batches",
                       "hiprbert_batch_size": "batch_size", "distances": "distances", "holdout_share": "holdout_share",
                       "device": "device"}
    HIPRBERT_FIELDS = ("extra_dictionaries", *HIPRBERT_PARAMS)
    BASE_FIELDS = ("base_encoder", "base_model")
    # Fields of the common group that only some methods read (the page hides them for the others).
    field_methods = {"eval_collection": f"{BIOSYN} {LATTE}"}
    student_defaults = STUDENT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the chosen method's fields matter; an empty one keeps its default. Collections are required
        # by BioSyn and LATTE only (clean).
        for name in (*self.PARAMS, *self.LATTE_FIELDS, *self.HIPRBERT_FIELDS, "collections"):
            self.fields[name].required = False
        base: forms.ModelChoiceField = self.fields["base_encoder"]  # type: ignore[assignment]
        base.empty_label = default_base_label()

    def groups(self) -> list[tuple[str, str, list[forms.BoundField]]]:
        """The fields as the page shows them: (legend, the methods they serve, fields): what every run needs,
        the base encoder (BioSyn and HiPrBERT), then each method's knobs."""
        own = {"method", *self.PARAMS, *self.LATTE_FIELDS, *self.HIPRBERT_FIELDS, *self.BASE_FIELDS}
        return [
            ("", "", [self["method"]] + [f for f in self if f.name not in own]),
            ("Base encoder", f"{BIOSYN} {HIPRBERT}", [self[name] for name in self.BASE_FIELDS]),
            ("BioSyn", BIOSYN, [self[name] for name in self.PARAMS]),
            ("LATTE", LATTE, [self[name] for name in self.LATTE_FIELDS]),
            ("HiPrBERT", HIPRBERT, [self[name] for name in self.HIPRBERT_FIELDS]),
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        method = data.get("method") or BIOSYN
        dictionary, evaluation = data.get("dictionary"), data.get("eval_collection")
        extra = [d for d in data.get("extra_dictionaries") or [] if d != dictionary]
        if method == HIPRBERT:
            self._check_hierarchies(dictionary, extra)
            if evaluation is not None:
                self.add_error("eval_collection", "Hierarchy pre-training is scored on held-out concepts (held-out "
                                                  "share), not on a gold collection.")
        else:
            if not data.get("collections") and "collections" not in self.errors:
                self.add_error("collections", self.fields["collections"].error_messages["required"])
            if extra:
                self.add_error("extra_dictionaries", "Only hierarchy pre-training trains on several dictionaries.")
        if method == LATTE and data.get("base_encoder"):
            self.add_error("base_encoder", "LATTE re-ranks over the active index: it takes no base encoder.")
        if data.get("base_encoder") and data.get("base_model"):
            self.add_error("base_model", "Choose a base encoder or type a folder, not both.")
        allowed = {d.pk for d in (dictionary, *extra) if d is not None}
        for collection in list(data.get("collections") or []) + ([evaluation] if evaluation else []):
            if dictionary is not None and collection.dictionary_id not in (None, *allowed):
                self.add_error(None, f"{collection} links to another dictionary ({collection.dictionary}).")
        data["extra_dictionaries"] = extra
        return data

    def _check_hierarchies(self, dictionary: Dictionary | None, extra: list[Dictionary]) -> None:
        """A field error naming each chosen dictionary that has no hierarchy to pre-train on."""
        for field, chosen in (("dictionary", [dictionary] if dictionary else []), ("extra_dictionaries", extra)):
            for d in chosen:
                try:
                    check_has_hierarchy(d)
                except RunError as exc:
                    self.add_error(field, str(exc))

    def params(self) -> dict[str, Any]:
        """The chosen method's params (with ``method``) from the fields of that method."""
        data = self.cleaned_data
        method = data.get("method") or BIOSYN
        if method == LATTE:
            chosen = {param: data.get(field) for field, param in self.LATTE_PARAMS.items()}
        elif method == HIPRBERT:
            chosen = {param: data.get(field) for field, param in self.HIPRBERT_PARAMS.items()}
        else:
            chosen = {name: data.get(name) for name in self.PARAMS}
        return {"method": method} | {k: v for k, v in chosen.items() if v not in (None, "")}
