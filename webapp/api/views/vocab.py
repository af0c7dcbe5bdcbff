"""Dictionaries and concepts; ``?q=`` searches concepts with the same tiered search as the curation screen."""

from __future__ import annotations

from django.db.models import Max, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.exceptions import NotFound, ValidationError

from linker.text import normalize
from webapp.api.permissions import IsCurator
from webapp.api.serializers import (
    ConceptDetailSerializer,
    ConceptSerializer,
    DictionarySerializer,
)
from webapp.api.views.common import RejectNulMixin
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion
from webapp.vocab.selectors import search_concepts

API_SEARCH_LIMIT = 50  # a pipeline may want more than the typeahead's 20


class DictionaryViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsCurator]
    serializer_class = DictionarySerializer
    lookup_field = "slug"
    queryset = Dictionary.objects.prefetch_related("versions").order_by("slug")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="Search the concepts by id or name, as the curation screen does; the best 50."),
            OpenApiParameter("dictionary", str, description="Dictionary slug: its latest release only (default: every dictionary's latest)."),
        ]
    ),
    retrieve=extend_schema(
        parameters=[OpenApiParameter("dictionary", str, description="Dictionary slug, where several have the id.")]
    ),
)
class ConceptViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """``?q=`` searches ids and names, ``?dictionary=slug`` restricts to its latest release.

    The detail adds the concept's parents and children; an id that several releases share resolves to the
    latest release that has it.
    """

    permission_classes = [IsCurator]
    serializer_class = ConceptSerializer
    lookup_field = "concept_id"
    lookup_value_regex = "[^/]+"

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return ConceptDetailSerializer if self.action == "retrieve" else ConceptSerializer

    def get_object(self) -> Concept:
        qs = Concept.objects.select_related("version__dictionary").prefetch_related("names", "known_types")
        slug = self.request.query_params.get("dictionary")
        if slug:
            qs = qs.filter(version__dictionary__slug=slug)
        concept = qs.filter(concept_id=self.kwargs["concept_id"]).order_by("-version__imported_at", "-version_id").first()
        if concept is None:
            raise NotFound(f"no concept {self.kwargs['concept_id']!r}")
        self.check_object_permissions(self.request, concept)
        return concept

    def get_queryset(self) -> QuerySet[Concept]:
        qs = Concept.objects.select_related("version__dictionary").prefetch_related("names", "known_types")
        if getattr(self, "swagger_fake_view", False):
            # The OpenAPI schema (and so `manage.py check --deploy`, which builds it) needs the model, not a query:
            # the latest releases below would be looked up in a database that may not be migrated yet.
            return qs.none()
        slug = self.request.query_params.get("dictionary")
        versions = DictionaryVersion.objects.filter(pk__in=_latest_version_ids(slug))
        q = self.request.query_params.get("q", "").strip()
        if q:
            if not normalize(q):
                raise ValidationError({"q": "the query has no letters or digits"})
            # The curation screen's search: ids first, then names by prefix, later word, and similarity.
            hits = search_concepts(list(versions), q, limit=API_SEARCH_LIMIT)
            order = {hit.concept.pk: i for i, hit in enumerate(hits)}
            return sorted(qs.filter(pk__in=order), key=lambda c: order[c.pk])  # type: ignore[return-value]
        if slug:
            qs = qs.filter(version__in=versions)
        return qs.order_by("version_id", "concept_id")


def _latest_version_ids(slug: str | None) -> list[int]:
    """The latest release of the dictionary named, or of every dictionary: older releases would repeat concepts."""
    dictionaries = Dictionary.objects.filter(slug=slug) if slug else Dictionary.objects.all()
    return [v for v in dictionaries.annotate(v=Max("versions__id")).values_list("v", flat=True) if v is not None]
