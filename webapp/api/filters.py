"""Query filters of the list endpoints (django-filter); each documents itself in the OpenAPI schema."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from webapp.corpus.models import Document, Link, Mention


class StrictFilterSet(django_filters.FilterSet):
    """A filter's parameter means what the schema says: given once (``status=a&status=b`` read only the last), and
    a choice, number or yes/no given empty (``status=``), or a yes/no given as anything but true or false, is refused
    rather than read as no filter at all. A text filter may be empty: the schema's string allows it, and it filters
    nothing."""

    def is_valid(self) -> bool:
        valid = super().is_valid()
        getlist = getattr(self.data, "getlist", None)
        for name, field in self.filters.items():
            values = getlist(name) if getlist else []
            if len(values) > 1:
                self.form.add_error(name, f"given {len(values)} times; give it once")
            elif values == [""] and not isinstance(field, django_filters.CharFilter):
                self.form.add_error(name, "may not be blank: give a value, or leave the parameter out")
            elif isinstance(field, django_filters.BooleanFilter) and values and values[0].lower() not in ("true", "false"):
                # Django's yes/no field reads anything else as "unknown", i.e. no filter.
                self.form.add_error(name, f"must be true or false (found {values[0][:40]!r})")
        return valid and not self.form.errors


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")


class _DateTimeField(forms.DateTimeField):
    """A date and time with its offset (RFC 3339, the schema's date-time): ``2026-01-31T09:00:00Z``. Django's own
    reads a date alone, or a time without an offset in the server's zone: a client's mistake met with a guess."""

    def to_python(self, value: Any) -> datetime | None:
        if value in self.empty_values:
            return None
        text = str(value)
        if not _RFC3339.fullmatch(text):
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise forms.ValidationError(f"must be a date and time with its offset, e.g. 2026-01-31T09:00:00Z (found {shown!r})")
        try:
            # In UTC: PostgreSQL refuses offsets past 15:59 that RFC 3339's form allows (+17:53).
            return datetime.fromisoformat(text.upper()).astimezone(UTC)
        except (ValueError, OverflowError) as exc:
            raise forms.ValidationError(f"not a date and time ({exc})") from None


class DateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _DateTimeField


class DocumentFilter(StrictFilterSet):
    collection = django_filters.CharFilter(field_name="collection__slug", help_text="Collection slug.")
    external_id = django_filters.CharFilter(help_text="The source's id (PMID).")
    changed_since = DateTimeFilter(
        field_name="changed_at", lookup_expr="gte",
        help_text="Documents whose text, mentions or links were written at or after this time (ISO 8601, e.g. "
        "2026-01-31T09:00:00Z; changed_at of each document).",
    )
    model_version = django_filters.CharFilter(
        method="filter_model_version", help_text="Documents with a mention or link written by this model version (its label).",
    )
    detection_state = django_filters.ChoiceFilter(choices=Document.DetectionState.choices, help_text="Where mention detection stands.")
    mention_status = django_filters.ChoiceFilter(
        choices=Mention.Status.choices, method="filter_mention_status", help_text="Documents with at least one mention of this status.",
    )

    class Meta:
        model = Document
        fields = ["collection", "external_id", "changed_since", "model_version", "detection_state", "mention_status"]

    def filter_model_version(self, queryset: QuerySet[Document], name: str, value: str) -> QuerySet[Document]:
        if not value:
            return queryset
        by_mention = Mention.objects.filter(model_version=value).values("document_id")
        by_link = Link.objects.filter(model_version=value).values("mention__document_id")
        return queryset.filter(Q(pk__in=by_mention) | Q(pk__in=by_link))

    def filter_mention_status(self, queryset: QuerySet[Document], name: str, value: str) -> QuerySet[Document]:
        return queryset.filter(pk__in=Mention.objects.filter(status=value).values("document_id"))


class MentionFilter(StrictFilterSet):
    collection = django_filters.CharFilter(field_name="document__collection__slug", help_text="Collection slug.")
    document = django_filters.NumberFilter(field_name="document_id", help_text="Document id.")
    status = django_filters.ChoiceFilter(choices=Mention.Status.choices)
    source = django_filters.ChoiceFilter(choices=Mention.Source.choices)
    mention_type = django_filters.CharFilter()
    origin = django_filters.ChoiceFilter(
        choices=Link.Origin.choices, method="filter_origin", help_text="Mentions with at least one link of this origin."
    )
    concept = django_filters.CharFilter(method="filter_concept", help_text="Mentions linked to this concept id (any origin).")

    class Meta:
        model = Mention
        fields = ["collection", "document", "status", "source", "mention_type", "origin", "concept"]

    def filter_origin(self, queryset: QuerySet[Mention], name: str, value: str) -> QuerySet[Mention]:
        return queryset.filter(pk__in=Link.objects.filter(origin=value).values("mention_id"))

    def filter_concept(self, queryset: QuerySet[Mention], name: str, value: str) -> QuerySet[Mention]:
        return queryset.filter(pk__in=Link.objects.filter(concept__concept_id=value).values("mention_id"))


class LinkFilter(StrictFilterSet):
    collection = django_filters.CharFilter(field_name="mention__document__collection__slug", help_text="Collection slug.")
    document = django_filters.NumberFilter(field_name="mention__document_id", help_text="Document id.")
    mention = django_filters.NumberFilter(field_name="mention_id", help_text="Mention id.")
    status = django_filters.ChoiceFilter(field_name="mention__status", choices=Mention.Status.choices, help_text="The mention's status.")
    origin = django_filters.ChoiceFilter(choices=Link.Origin.choices)
    concept = django_filters.CharFilter(field_name="concept__concept_id", help_text="Concept id.")
    nil = django_filters.BooleanFilter()

    class Meta:
        model = Link
        fields = ["collection", "document", "mention", "status", "origin", "concept", "nil"]
