"""The start form's fields that read the database, and the checks that do, per method.

A method's parameters make their own fields (:mod:`webapp.training.param_fields`); what a person chooses among the
workbench's rows does not: the base encoder of a method that starts from a transformer (``Method.base_model``), the
dictionaries HiPrBERT pre-trains on, the word vectors BNE and DAN start from, the collections whose documents
fastText reads, the dictionary whose hierarchy DAN learns. Each is declared here once, with what it adds to the
run's params and what it checks; a method without an entry here takes gold collections and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.db.models import Exists, OuterRef, QuerySet

from webapp.corpus.models import Collection
from webapp.linking.models import EncoderModel
from webapp.training.base_encoders import base_encoders, describe
from webapp.training.errors import RunError
from webapp.training.hierarchy_inputs import check_has_hierarchy
from webapp.training.models import WordVectorModel
from webapp.training.word_vectors import describe as describe_word_vectors
from webapp.training.word_vectors import word_vector_models
from webapp.vocab.models import Dictionary, HierarchyEdge

__all__ = ["GlueField", "FormGlue", "form_glue", "base_fields", "VECTORS_GROUP"]

VECTORS_GROUP = "Word vectors"  # the group of linker.methods.word_vector_params' fields


class BaseEncoderField(forms.ModelChoiceField):
    def label_from_instance(self, obj: EncoderModel) -> str:
        return describe(obj)


class WordVectorsField(forms.ModelChoiceField):
    def label_from_instance(self, obj: WordVectorModel) -> str:
        return describe_word_vectors(obj)


class HierarchyField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Dictionary) -> str:
        return str(obj) if getattr(obj, "has_edges", True) else f"{obj} (no hierarchy)"


class HierarchiesField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Dictionary) -> str:
        return str(obj) if getattr(obj, "has_edges", True) else f"{obj} (no hierarchy)"


def _hierarchy_dictionaries() -> QuerySet[Dictionary]:
    # Any release's edges: a hint for the label; the latest release is what is checked (clean).
    return (Dictionary.objects.annotate(has_edges=Exists(HierarchyEdge.objects.filter(version__dictionary=OuterRef("pk"))))
            .order_by("slug"))


def base_fields() -> dict[str, forms.Field]:
    """The base encoder a method that starts from a transformer starts from: a HiPrBERT one, or a folder."""
    return {
        "base_encoder": BaseEncoderField(
            queryset=base_encoders(), to_field_name="name", required=False,
            help_text="A HiPrBERT base encoder (hierarchy pre-training) to start from."),
        "base_model": forms.CharField(
            required=False, max_length=500, label="Or a base model folder",
            help_text="Local Hugging Face folder on the workers' machine, instead of a base encoder."),
    }



@dataclass(frozen=True)
class GlueField:
    """A field of the form that a method reads: shown in ``group`` ("": the method's own), after ``after``."""

    name: str
    make: Callable[[], forms.Field]
    group: str = ""
    after: str = ""


Check = Callable[[forms.Form, dict[str, Any]], None]


@dataclass(frozen=True)
class FormGlue:
    """What a method's start form reads from the database beyond its parameters.

    ``collections``: "required" (gold collections to train on), "optional", or "texts" (the documents of any
    collections, ``text_collections``); ``own_vectors``: its fastText fields are hidden once word vectors are chosen.
    ``check(form, data)`` adds its errors; ``params(data)`` is what its fields add to the run's params."""

    fields: tuple[GlueField, ...] = ()
    collections: str = "required"
    own_vectors: bool = False
    check: Check | None = None
    params: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _word_vectors() -> forms.Field:
    field = WordVectorsField(
        queryset=word_vector_models(), to_field_name="name", required=False, label="Start from word vectors",
        help_text="A fastText run's vectors, or a file uploaded on the Models page.")
    field.empty_label = "none: train fastText on the run's texts first"
    return field


def _hierarchy() -> forms.Field:
    field = HierarchyField(queryset=_hierarchy_dictionaries(), to_field_name="slug", required=False,
                           label="Hierarchy of", help_text="For a level ≥ 1; empty: the run's dictionary.")
    field.empty_label = "the run's dictionary"
    return field


def _extra_dictionaries() -> forms.Field:
    return HierarchiesField(
        queryset=_hierarchy_dictionaries(), to_field_name="slug", required=False, label="More dictionaries",
        help_text="Also pre-train on these dictionaries' hierarchies (names of two dictionaries are never compared).")


def _text_collections() -> forms.Field:
    return forms.ModelMultipleChoiceField(
        queryset=Collection.objects.order_by("slug"), to_field_name="slug", required=False,
        label="Documents to train on", help_text="The titles and abstracts of these collections' documents (gold or not).")


def _check_hierarchies(form: forms.Form, data: dict[str, Any]) -> None:
    """A field error naming each chosen dictionary that has no hierarchy to pre-train on."""
    dictionary = data.get("dictionary")
    for field, chosen in (("dictionary", [dictionary] if dictionary else []),
                          ("extra_dictionaries", data.get("extra_dictionaries") or [])):
        for d in chosen:
            try:
                check_has_hierarchy(d)
            except RunError as exc:
                form.add_error(field, str(exc))


def _check_texts(form: forms.Form, data: dict[str, Any]) -> None:
    if not (data.get("text_collections") or data.get("include_names") or data.get("include_definitions")):
        form.add_error("text_collections", "Choose documents to train on, or let the dictionary's names or definitions "
                                           "join the texts.")


def _check_dan_hierarchy(form: forms.Form, data: dict[str, Any]) -> None:
    level = data.get("level") or 0
    chosen = data.get("hierarchy") or data.get("dictionary")
    if level >= 1 and chosen is not None:
        try:
            check_has_hierarchy(chosen)
        except RunError as exc:
            form.add_error("hierarchy", f"{exc}: DAN at level {level} learns the ancestors at that level; choose a "
                                        "dictionary with a hierarchy, or level 0.")


def _dan_params(data: dict[str, Any]) -> dict[str, Any]:
    return {"hierarchy": data["hierarchy"].pk} if data.get("hierarchy") is not None else {}


_WORD_VECTORS = GlueField("word_vectors", _word_vectors, VECTORS_GROUP)
_GLUE = {
    "hiprbert": FormGlue(fields=(GlueField("extra_dictionaries", _extra_dictionaries),), collections="optional",
                         check=_check_hierarchies),
    "fasttext": FormGlue(fields=(GlueField("text_collections", _text_collections, VECTORS_GROUP),), collections="texts",
                         check=_check_texts),
    "bne": FormGlue(fields=(_WORD_VECTORS,), own_vectors=True),
    "dan": FormGlue(fields=(_WORD_VECTORS, GlueField("hierarchy", _hierarchy, after="level")), own_vectors=True,
                    check=_check_dan_hierarchy, params=_dan_params),
}


def form_glue(method: str) -> FormGlue:
    """The database fields and checks of ``method``'s start form (none: gold collections only)."""
    return _GLUE.get(method, FormGlue())
