"""Query filters of the list endpoints (django-filter); each documents itself in the OpenAPI schema."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

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


class DocumentFilter(StrictFilterSet):
    collection = django_filters.CharFilter(field_name="collection__slug", help_text="Collection slug.")
    external_id = django_filters.CharFilter(help_text="The source's id (PMID).")

    class Meta:
        model = Document
        fields = ["collection", "external_id"]


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
