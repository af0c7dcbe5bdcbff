"""Bulk export for pipelines (issue #45): a collection's documents as one streamed file, and a listing of them walked
by an opaque cursor, both narrowed by the document filters (changed since, model version, detection state, mention
status: :class:`webapp.api.filters.DocumentFilter`). Who may read what is the collection export's rule."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.filters import DocumentFilter
from webapp.api.pagination import MAX_PAGE_SIZE, KeysetPagination
from webapp.api.scope import ProjectScopeFilter
from webapp.api.serializers import DocumentListSerializer
from webapp.api.views.common import (
    EXPORT_PARAMETERS,
    EXPORT_RENDERERS,
    EXPORT_RESPONSES,
    export_options,
    export_response,
)
from webapp.corpus.formats import FORMATS
from webapp.corpus.models import Collection, Document, Mention
from webapp.projects import access

STREAMED = [name for name, f in FORMATS.items() if f.stream is not None]

FILTER_PARAMETERS = [
    OpenApiParameter("changed_since", OpenApiTypes.DATETIME, description=DocumentFilter.base_filters["changed_since"].extra["help_text"]),
    OpenApiParameter("model_version", str, description=DocumentFilter.base_filters["model_version"].extra["help_text"]),
    OpenApiParameter("detection_state", str, enum=list(Document.DetectionState.values),
                     description=DocumentFilter.base_filters["detection_state"].extra["help_text"]),
    OpenApiParameter("mention_status", str, enum=list(Mention.Status.values),
                     description=DocumentFilter.base_filters["mention_status"].extra["help_text"]),
]
_PAGE = inline_serializer("DocumentCursorPage", {
    "next": serializers.URLField(allow_null=True, help_text="The next page (null after the last): follow it as given."),
    "results": DocumentListSerializer(many=True),
})


class BulkExportMixin:
    """Actions of the collection viewset: ``documents/`` (the cursor listing) and ``documents/stream/`` (the file)."""

    def collection_documents(self, request: Request) -> tuple[Collection, QuerySet[Document]]:
        """The collection and its documents the user may read (the export's rule), narrowed by the document filters."""
        collection: Collection = self.get_object()  # type: ignore[attr-defined]
        documents = access.scope(Document.objects.filter(collection=collection), request.user)
        # A project-scoped token: the project's documents only, where the project covers part of the collection.
        documents = ProjectScopeFilter().filter_queryset(request, documents, self)
        filters = DocumentFilter(request.query_params, queryset=documents, request=request)
        if not filters.is_valid():
            raise ValidationError(filters.errors)
        return collection, filters.qs

    @extend_schema(
        parameters=[*FILTER_PARAMETERS, OpenApiParameter("cursor", str, description="Where the page starts: the 'next' link's, as given."),
                    OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
                                     description=f"Documents a page (1 to {MAX_PAGE_SIZE}; default 100).")],
        responses={200: _PAGE, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], url_path="documents", pagination_class=None)
    def documents(self, request: Request, slug: str | None = None) -> Response:
        """The collection's documents by id, a page at a time after an opaque cursor: a walk meets every document
        once, also while documents are added (they come after the cursor)."""
        documents = self.collection_documents(request)[1].select_related("collection").defer("text", "metadata")
        rows, next_link = KeysetPagination().paginate(request, documents.annotate(mention_count=Count("mentions")))
        return Response({"next": next_link, "results": DocumentListSerializer(rows, many=True).data})

    @extend_schema(
        parameters=[
            OpenApiParameter("as", str, enum=STREAMED, default="jsonl", description="The file format (those written a document at a time)."),
            *(p for p in EXPORT_PARAMETERS if p.name != "as"), *FILTER_PARAMETERS,
        ],
        responses=EXPORT_RESPONSES,
    )
    @action(detail=True, methods=["get"], url_path="documents/stream", renderer_classes=EXPORT_RENDERERS)
    def documents_stream(self, request: Request, slug: str | None = None) -> HttpResponseBase:
        """Every document of the collection that the filters keep, in one file sent as it is read: one snapshot of
        the database, however long it takes (documents written meanwhile are not in it)."""
        fmt, _ = export_options(request, default="jsonl")
        if fmt not in STREAMED:
            raise ValidationError({"as": [f"{fmt!r} is not streamed; expected one of {', '.join(STREAMED)} "
                                          "(the export endpoint writes the others whole)"]})
        collection, documents = self.collection_documents(request)
        return export_response(request, documents, collection.slug, stream=True, default="jsonl")
