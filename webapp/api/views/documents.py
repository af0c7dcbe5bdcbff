"""Collections and documents: read, export, create, and upload files in the interchange formats."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Count, Prefetch, QuerySet
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from linker.data import ParseError
from webapp.api.filters import DocumentFilter
from webapp.api.parsers import JSONParser
from webapp.api.permissions import IsCurator
from webapp.api.scope import ProjectScopeFilter
from webapp.api.serializers import (
    DOCUMENT_MENTIONS_SHOWN,
    CollectionCreateSerializer,
    CollectionSerializer,
    DocumentCreateSerializer,
    DocumentDetailSerializer,
    DocumentListSerializer,
    ImportReportSerializer,
    UploadSerializer,
)
from webapp.api.views.bulk import BulkExportMixin
from webapp.api.views.common import (
    EXPORT_PARAMETERS,
    EXPORT_RENDERERS,
    EXPORT_RESPONSES,
    Pagination,
    RejectNulMixin,
    check_upload,
    check_upload_request,
    export_response,
    import_report,
    save_upload,
)
from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.public import public_message
from webapp.corpus.formats import DocumentRecord, FormatError, LinkRecord, MentionRecord
from webapp.corpus.formats.services import (
    DuplicateDocument,
    import_documents,
    import_records,
)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.projects import access


class CollectionViewSet(RejectNulMixin, BulkExportMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Collections: curators read and export; admins create them and upload files into them."""

    permission_classes = [IsCurator]
    serializer_class = CollectionSerializer
    lookup_field = "slug"
    pagination_class = Pagination

    def get_queryset(self) -> QuerySet[Collection]:
        # The one rule (webapp.projects.access.scope): a project's collection is its members'; an annotator's
        # workspace is theirs, their project's adjudicators' and managers', and the admins'.
        user = self.request.user
        collections = access.scope(Collection.objects.all(), user)
        # A project over some documents hides only those: they are not counted either.
        counted = Count("documents", filter=access.readable_documents_q(user, "documents__") or None)
        return collections.select_related("dictionary").annotate(document_count=counted).order_by("slug")

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        return CollectionCreateSerializer if self.action == "create" else CollectionSerializer

    @extend_schema(request=CollectionCreateSerializer, responses={201: CollectionSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = CollectionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        collection = data.save()
        out = self.get_queryset().get(pk=collection.pk)
        return Response(CollectionSerializer(out).data, status=status.HTTP_201_CREATED)

    @extend_schema(request={"multipart/form-data": UploadSerializer}, responses={201: ImportReportSerializer, 200: ImportReportSerializer, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser], serializer_class=UploadSerializer)
    def upload(self, request: Request, slug: str | None = None) -> Response:
        """Import a file (documents, with their gold mentions and links where it has them) in one transaction."""
        collection = self.get_object()
        check_upload_request(request)  # before request.data: an oversized body is refused unread
        data = UploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        check_upload(v["file"])
        with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
            path = save_upload(v["file"], Path(tmp))
            try:
                with transaction.atomic():  # the audit event with the documents it tells of
                    report = import_documents(path, v["format"], collection_slug=collection.slug,
                                              dictionary_slug=v.get("dictionary"))
                    record(actions.IMPORT_FINISHED, request=request, obj=collection, label=f"{v['file'].name} → {collection.slug}",
                           after={"format": v["format"], "documents": report.documents, "mentions": report.mentions,
                                  "links": report.links})
            except (ParseError, FormatError, FileNotFoundError, ValueError) as exc:
                record(actions.IMPORT_FAILED, request=request, obj=collection, label=f"{v['file'].name} → {collection.slug}",
                       after={"format": v["format"], "error": public_message(str(exc))[:500]})
                raise ValidationError({"detail": public_message(str(exc))}) from exc
        # Warnings name the file as the importer saw it: in the server's temporary folder, which is no one's business.
        report.warnings = [public_message(w) for w in report.warnings]
        code = status.HTTP_201_CREATED if report.created else status.HTTP_200_OK
        return Response(import_report(collection.slug, report), status=code)

    @extend_schema(parameters=EXPORT_PARAMETERS, responses=EXPORT_RESPONSES)
    @action(detail=True, methods=["get"], renderer_classes=EXPORT_RENDERERS)
    def export(self, request: Request, slug: str | None = None) -> HttpResponseBase:
        """Every document of the collection in one file: gold and curated links, suggestions on request. Sent as it is
        read (one snapshot of the database) in the formats written a document at a time; brat and text zips whole."""
        collection = self.get_object()
        documents = access.scope(Document.objects.filter(collection=collection), request.user)
        # A project-scoped token: the project's documents only, where the project covers part of the collection.
        documents = ProjectScopeFilter().filter_queryset(request, documents, self)
        return export_response(request, documents, collection.slug, stream=True)


class DocumentViewSet(RejectNulMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Documents: curators read and export; admins add them (with gold mentions if they have any)."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    filterset_class = DocumentFilter

    def get_parsers(self) -> list[BaseParser]:
        # A document comes with a list of mentions and a metadata object, which a form cannot carry: a multipart
        # POST lost its mentions and answered 201. JSON only (a form or multipart body is a 415), and the schema
        # says so. (Files of documents go to POST /api/collections/{slug}/upload/.)
        if getattr(self, "request", None) is not None and self.request.method == "POST":
            return [JSONParser()]
        return super().get_parsers()

    def get_queryset(self) -> QuerySet[Document]:
        qs = (access.scope(Document.objects.all(), self.request.user).select_related("collection")
              .annotate(mention_count=Count("mentions")).order_by("id"))
        # A list shows no text: a page of 50 documents of 9.5M characters would hold 475M of it.
        return _with_mentions(qs) if self.action == "retrieve" else qs.defer("text", "metadata")

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        if self.action == "create":
            return DocumentCreateSerializer
        return DocumentDetailSerializer if self.action == "retrieve" else DocumentListSerializer

    @extend_schema(request=DocumentCreateSerializer, responses={201: DocumentDetailSerializer, 400: OpenApiTypes.OBJECT})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = DocumentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection: Collection = v["collection"]
        record = DocumentRecord(
            external_id=v["external_id"],
            text=v["text"],
            title=v["title"],
            metadata=v["metadata"],
            mentions=[
                MentionRecord(
                    m["start"], m["end"], v["text"][m["start"] : m["end"]], m["mention_type"],
                    tuple(LinkRecord(part=link["part"], concept_id=link["concept_id"], nil=link["nil"]) for link in m["links"]),
                    where=f"mentions[{i}]",
                )
                for i, m in enumerate(v["mentions"])
            ],
        )
        try:
            import_records(
                [record], source="request", collection_slug=collection.slug,
                dictionary_slug=collection.dictionary.slug if collection.dictionary else None, skip_existing=False,
            )
        except DuplicateDocument as exc:
            raise ValidationError({"external_id": [str(exc)]}) from exc
        except (FormatError, ValueError) as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        document = _with_mentions(self.get_queryset()).get(collection=collection, external_id=record.external_id)
        return Response(DocumentDetailSerializer(document).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=EXPORT_PARAMETERS, responses=EXPORT_RESPONSES)
    @action(detail=True, methods=["get"], renderer_classes=EXPORT_RENDERERS)
    def export(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        document = self.get_object()
        return export_response(request, Document.objects.filter(pk=document.pk), f"{document.collection.slug}-{document.external_id}")


def _with_mentions(documents: QuerySet[Document]) -> QuerySet[Document]:
    """With the first DOCUMENT_MENTIONS_SHOWN mentions (and one more, to tell whether there are more)."""
    links = Link.objects.select_related("concept", "created_by").order_by("part", "id")
    mentions = Mention.objects.order_by("start", "end", "id").prefetch_related(Prefetch("links", queryset=links))
    return documents.prefetch_related(Prefetch("mentions", queryset=mentions[: DOCUMENT_MENTIONS_SHOWN + 1], to_attr="first_mentions"))
