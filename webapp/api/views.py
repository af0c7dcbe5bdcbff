"""A first, read-mostly API: dictionaries, concept search, collections, and queued imports for admins.

Anonymous requests get 401 (token or session authentication is required); the full API is a later issue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.postgres.search import TrigramSimilarity
from django.db.models import Count, Max, QuerySet
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from linker.text import normalize
from webapp.api.permissions import IsAdmin, IsCurator
from webapp.api.serializers import (
    CollectionSerializer,
    ConceptSerializer,
    DictionarySerializer,
    ImportJobSerializer,
    ImportRequestSerializer,
)
from webapp.core.jobs import queue_import
from webapp.core.models import ImportJob
from webapp.corpus.models import Collection
from webapp.vocab.models import Concept, Dictionary


class DictionaryViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsCurator]
    serializer_class = DictionarySerializer
    lookup_field = "slug"
    queryset = Dictionary.objects.prefetch_related("versions").order_by("slug")


class ConceptViewSet(viewsets.ReadOnlyModelViewSet):
    """``?q=`` searches names (trigram index), ``?dictionary=slug`` restricts to its latest release."""

    permission_classes = [IsCurator]
    serializer_class = ConceptSerializer
    lookup_field = "concept_id"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Concept]:
        qs = Concept.objects.select_related("version__dictionary").prefetch_related("names", "known_types")
        slug = self.request.query_params.get("dictionary")
        if slug:
            latest = Dictionary.objects.filter(slug=slug).annotate(v=Max("versions__id")).values_list("v", flat=True).first()
            qs = qs.filter(version_id=latest)
        q = self.request.query_params.get("q", "").strip()
        if q:
            norm = normalize(q)
            if not norm:
                raise ValidationError({"q": "the query has no letters or digits"})
            best = (
                Concept.objects.filter(pk__in=qs.values("pk"), names__normalized__trigram_similar=norm)
                .annotate(similarity=Max(TrigramSimilarity("names__normalized", norm)))
                .order_by("-similarity", "concept_id")
                .values_list("pk", flat=True)[:50]
            )
            ids = list(best)
            order = {pk: i for i, pk in enumerate(ids)}
            return sorted(qs.filter(pk__in=ids), key=lambda c: order[c.pk])  # type: ignore[return-value]
        return qs.order_by("version_id", "concept_id")


class CollectionViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsCurator]
    serializer_class = CollectionSerializer
    lookup_field = "slug"
    queryset = Collection.objects.select_related("dictionary").annotate(document_count=Count("documents")).order_by("slug")


class ImportJobViewSet(mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Admins queue imports of files the workers can read; the job row reports progress and errors."""

    permission_classes = [IsAdmin]
    serializer_class = ImportJobSerializer
    queryset = ImportJob.objects.order_by("-created_at")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if not Path(v["path"]).is_file():
            raise ValidationError({"path": [f"{v['path']} is not a readable file"]})
        if v["kind"] == ImportJob.Kind.DICTIONARY:
            params = {"dictionary_slug": v["slug"], "title": v.get("title") or None}
        else:
            params = {"collection_slug": v["slug"], "title": v.get("title") or None, "dictionary_slug": v.get("dictionary")}
        job = queue_import(v["kind"], v["path"], params, user=request.user)
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
