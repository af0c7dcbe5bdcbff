"""Corpus runs (admins): ``POST /api/corpus-runs/`` starts one (detect + link over a collection, chunk by chunk:
webapp.curation.corpus_runs), ``GET /api/corpus-runs/`` lists the runs. A run is a job: its progress, rate, time
left and chunks are at ``/api/jobs/<id>/`` and ``/api/jobs/?parent=<id>``, and ``POST /api/jobs/<id>/cancel/``
cancels it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.jobs import JobSerializer
from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.views import RejectNulMixin
from webapp.corpus.models import Collection
from webapp.curation.corpus_runs.jobs import CHUNK_DOCUMENTS, CORPUS_RUN, start_run
from webapp.curation.corpus_runs.scope import ALL, DOCUMENT_FILTERS, ScopeError, parse_scope
from webapp.curation.services.detection import DetectionUnavailable
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.projects import access

MAX_CHUNK = 10_000


class CorpusRunSerializer(serializers.Serializer):
    collection = serializers.SlugField(help_text="The collection's slug.")
    documents = serializers.ChoiceField(choices=list(DOCUMENT_FILTERS), default=ALL,
                                        help_text="all: every document; unannotated: those without any mention yet.")
    concepts = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list,
                                     help_text="Concept ids its links may name (a whitelist); empty: any.")
    roots = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list,
                                  help_text="Subtree roots: every concept under one (the root too) is in scope.")
    mention_types = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list,
                                          help_text="Mention types it detects and links; empty: every type.")
    chunk_size = serializers.IntegerField(min_value=1, max_value=MAX_CHUNK, default=CHUNK_DOCUMENTS,
                                          help_text="Documents per chunk (one Celery task each).")


class CorpusRunViewSet(RejectNulMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Corpus runs, newest first (admins)."""

    permission_classes = [IsAdmin]
    serializer_class = JobSerializer
    queryset = Job.objects.filter(kind=CORPUS_RUN, parent__isnull=True).select_related("created_by").order_by("-created_at", "-id")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None  # the project's pagination is always on
        context = self.get_serializer_context() | {"job_views": services.describe_all(page)}
        return self.get_paginated_response(JobSerializer(page, many=True, context=context).data)

    @extend_schema(request=CorpusRunSerializer, responses={201: JobSerializer, 400: OpenApiTypes.OBJECT, 404: ErrorSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = CorpusRunSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = access.scope(Collection.objects.select_related("dictionary"), request.user).filter(
            slug=v["collection"]).first()
        if collection is None:
            return Response({"detail": f"no collection {v['collection']}"}, status=status.HTTP_404_NOT_FOUND)
        try:
            run = start_run(collection, parse_scope(v), request.user, v["chunk_size"])
        except (ScopeError, DetectionUnavailable) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(JobSerializer(run, context=self.get_serializer_context()).data, status=status.HTTP_201_CREATED)
