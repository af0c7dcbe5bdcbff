"""Input of the team workflow's pages (assignment, adjudication), validated before any service is called."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from webapp.corpus.models import Document
from webapp.projects.forms import split_ids
from webapp.projects.models import Member, Project
from webapp.teamwork.services.assignment import Mode


class AssignForm(forms.Form):
    mode = forms.ChoiceField(choices=Mode.CHOICES, initial=Mode.PER_DOCUMENT, widget=forms.RadioSelect, label="How")
    annotators = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple, to_field_name="username")
    documents = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Documents (by hand)",
                                help_text="Document ids separated by spaces or commas; only for “by hand”.")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["annotators"].queryset = get_user_model().objects.filter(  # type: ignore[attr-defined]
            project_memberships__project=project, project_memberships__role=Member.Role.ANNOTATOR).order_by("username")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        ids = split_ids(data.get("documents", ""))
        docs: list[Document] = []
        if data.get("mode") == Mode.MANUAL:
            if not ids:
                self.add_error("documents", "list the documents to assign by hand")
            found = {d.external_id: d for d in Document.objects.filter(collection_id=self.project.collection_id, external_id__in=ids)}
            missing = [i for i in ids if i not in found]
            if missing:
                self.add_error("documents", f"{self.project.collection} has no document {', '.join(missing[:8])}")
            docs = [found[i] for i in ids if i in found]
        data["document_objects"] = docs
        return data


class ResolveForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    annotator = forms.CharField(required=False)
    concept = forms.IntegerField(required=False)
    label = forms.ChoiceField(required=False, choices=[("", ""), ("NIL", "NIL"), ("REJECT", "Not a mention")])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        given = [k for k in ("annotator", "concept", "label") if data.get(k) not in (None, "")]
        if len(given) != 1:
            raise forms.ValidationError("take one annotator's decision, or choose a concept, or say NIL / not a mention")
        return data
