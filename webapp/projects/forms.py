"""Input of the project pages (creation, settings, members), validated before any service is called."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from webapp.corpus.models import Collection
from webapp.projects.models import Member, Project
from webapp.vocab.models import KnownType

_SEPARATORS = re.compile(r"[\s,;]+")


def split_ids(text: str) -> list[str]:
    return [t for t in _SEPARATORS.split(text or "") if t]


def grouped_types(types: Iterable[KnownType]) -> list[tuple[str, list[tuple[int, str]]]]:
    """The known types as choices grouped by their vocabulary's name, in the order given."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for t in types:
        groups.setdefault(t.vocabulary.name, []).append((t.pk, t.label))
    return list(groups.items())


class _FilterFields(forms.Form):
    annotators_per_document = forms.IntegerField(
        min_value=1, max_value=10, initial=2, label="Annotators per document",
        help_text="1: single annotation (an annotator's decisions become the document's links when they finish); "
                  "2 or more: independent, blind double annotation, then adjudication.",
    )
    concept_types = forms.ModelMultipleChoiceField(
        queryset=KnownType.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
        label="Concept filter: known types", help_text="Only concepts with one of these types are candidates.",
    )
    concept_roots = forms.CharField(
        required=False, label="Concept filter: subtrees", widget=forms.TextInput(attrs={"placeholder": "e.g. MESH:D009369 MESH:C10"}),
        help_text="Only concepts under these concepts (roots included) are candidates; ids separated by spaces or commas.",
    )

    def __init__(self, *args: Any, dictionary_id: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        types = KnownType.objects.filter(concepts__version__dictionary_id=dictionary_id).distinct() if dictionary_id else KnownType.objects.all()
        types = types.select_related("vocabulary").order_by("vocabulary__name", "label")
        field = self.fields["concept_types"]
        field.queryset = types  # type: ignore[attr-defined]
        # Grouped by vocabulary (MEDIC's slim mappings, UMLS semantic types ...): the page shows each group under its
        # name, with a filter box, instead of one unlabelled column of every dictionary's types.
        field.widget.choices = grouped_types(types)


    def clean_concept_roots(self) -> list[str]:
        return split_ids(self.cleaned_data["concept_roots"])


class ProjectForm(_FilterFields):
    title = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=64, help_text="Short name used in addresses, e.g. 'ncbi-double'.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.filter(is_workspace=False).order_by("slug"), to_field_name="slug",
        help_text="The documents to curate; the adjudicated links land on them.",
    )
    documents = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "placeholder": "empty: every document of the collection"}),
        label="Only these documents",
        help_text="Document ids (PMIDs) of the collection, separated by spaces or commas. Only these are hidden from "
                  "curators outside the project; empty: the whole collection is.",
    )
    field_order = ["title", "slug", "description", "collection", "documents", "annotators_per_document", "concept_types", "concept_roots"]

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if Project.objects.filter(slug=slug).exists():
            raise forms.ValidationError(f"a project named {slug!r} exists already")
        return slug

    def clean_documents(self) -> list[str]:
        return split_ids(self.cleaned_data["documents"])


class SettingsForm(_FilterFields):
    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    field_order = ["title", "description", "annotators_per_document", "concept_types", "concept_roots"]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name")
    role = forms.ChoiceField(choices=Member.Role.choices)

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"no user is called {name!r}")
        return user
