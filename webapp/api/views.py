"""The REST API: dictionaries, concept search, collections, documents, mentions, links, decisions,
POST /api/link, queued imports, and import / export in the interchange formats.

Anonymous requests get 401 (token or session authentication is required); curators read, decide and link;
admins import. Views validate with an input serializer and call a service (webapp.corpus.formats.services,
webapp.corpus.decisions, webapp.api.linking); they hold no workflow of their own.
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import TrigramSimilarity
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Count, Max, Prefetch, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from linker.data import ParseError
from linker.text import normalize
from webapp.api.filters import DocumentFilter, LinkFilter, MentionFilter
from webapp.api.linking import GivenSpan, link_text
from webapp.api.permissions import IsAdmin, IsCurator, IsCuratorForAll
from webapp.api.serializers import (
    CollectionCreateSerializer,
    CollectionSerializer,
    ConceptDetailSerializer,
    ConceptSerializer,
    ConflictSerializer,
    DecisionInputSerializer,
    DictionarySerializer,
    DictionaryUploadSerializer,
    DocumentCreateSerializer,
    DocumentDetailSerializer,
    DocumentListSerializer,
    ImportJobSerializer,
    ImportReportSerializer,
    ImportRequestSerializer,
    LinkRequestSerializer,
    LinkResponseSerializer,
    LinkSerializer,
    MentionSerializer,
    UploadSerializer,
)
from webapp.core.jobs import queue_import
from webapp.core.models import ImportJob
from webapp.corpus.formats import FORMATS, DocumentRecord, FormatError, LinkRecord, MentionRecord
from webapp.corpus.formats.services import (
    DuplicateDocument,
    export_documents,
    import_documents,
    import_records,
)
from webapp.corpus.importers import ImportReport, id_variants
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services import Conflict, CurationError, decide
from webapp.training.registry import get_active_linker
from webapp.vocab.models import Concept, Dictionary

# --- shared pieces ---------------------------------------------------------------------------------------


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


class RejectNulMixin:
    """PostgreSQL cannot compare text with NUL characters: such a query parameter or path is a 400, not a 500."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        values = [*kwargs.values(), *(v for vs in request.query_params.lists() for v in vs[1])]
        if any("\x00" in str(v) for v in values):
            raise ValidationError({"detail": "NUL characters are not allowed in paths or query parameters"})


class _FileRenderer(BaseRenderer):
    """Lets a client ask for an export by its media type; exports are finished bytes, errors are JSON."""

    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return data if isinstance(data, bytes) else json.dumps(data).encode("utf-8")


def _file_renderer(media_type: str, name: str) -> type[BaseRenderer]:
    return type(f"{name}Renderer", (_FileRenderer,), {"media_type": media_type, "format": name})


EXPORT_RENDERERS = [
    JSONRenderer,
    *(_file_renderer(f.content_type.split(";")[0], f.name.replace("-", "_")) for f in FORMATS.values() if not f.content_type.startswith("application/json")),
]
EXPORT_PARAMETERS = [
    OpenApiParameter("as", str, enum=list(FORMATS), default="pubtator", description="The file format."),
    OpenApiParameter("suggestions", bool, default=False, description="Also write the best model suggestion where no gold or curated link exists."),
]
EXPORT_RESPONSES: dict[Any, Any] = {
    (200, "text/plain"): OpenApiTypes.STR,
    (200, "application/xml"): OpenApiTypes.STR,
    (200, "application/json"): OpenApiTypes.OBJECT,
    (200, "application/zip"): OpenApiTypes.BINARY,
    (200, "application/x-ndjson"): OpenApiTypes.STR,
    400: OpenApiTypes.OBJECT,
    404: OpenApiTypes.OBJECT,
}


def _export(request: Request, documents: QuerySet[Document], stem: str) -> HttpResponse:
    fmt = request.query_params.get("as", "pubtator")
    if fmt not in FORMATS:
        raise ValidationError({"as": [f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"]})
    suggestions = request.query_params.get("suggestions", "false").lower() in ("1", "true", "yes")
    export = export_documents(documents, fmt, suggestions=suggestions, stem=stem)
    response = HttpResponse(export.content, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response


def _save_upload(upload: UploadedFile, folder: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(upload.name or "").name).lstrip(".") or "upload"
    path = folder / name
    with open(path, "wb") as fh:
        for chunk in upload.chunks():
            fh.write(chunk)
    return path


def _report(collection: str, report: ImportReport) -> dict[str, Any]:
    data = {k: getattr(report, k) for k in ImportReportSerializer().fields if k != "collection"}
    return {"collection": collection, **data}


# --- the lead's first API, extended ------------------------------------------------------------------


class DictionaryViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsCurator]
    serializer_class = DictionarySerializer
    lookup_field = "slug"
    queryset = Dictionary.objects.prefetch_related("versions").order_by("slug")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="Search the concepts' names (trigram similarity); the best 50."),
            OpenApiParameter("dictionary", str, description="Dictionary slug: its latest release only."),
        ]
    ),
    retrieve=extend_schema(
        parameters=[OpenApiParameter("dictionary", str, description="Dictionary slug, where several have the id.")]
    ),
)
class ConceptViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """``?q=`` searches names (trigram index), ``?dictionary=slug`` restricts to its latest release.

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


class ImportJobViewSet(RejectNulMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Admins queue imports of files the workers can read; the job row reports progress and errors."""

    permission_classes = [IsAdmin]
    serializer_class = ImportJobSerializer
    queryset = ImportJob.objects.order_by("-created_at")

    @extend_schema(request=ImportRequestSerializer, responses={202: ImportJobSerializer})
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


# --- dictionaries: upload ------------------------------------------------------------------------------


class DictionaryUploadView(RejectNulMixin, GenericAPIView):
    """Admins upload a dictionary file (MEDIC TSV, DNorm text, OBO); a worker imports it as a new release."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]
    serializer_class = DictionaryUploadSerializer

    @extend_schema(request=DictionaryUploadSerializer, responses={202: ImportJobSerializer, 400: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = DictionaryUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        # The shared artifact volume: the worker that runs the import may be on another machine.
        folder = Path(settings.ARTIFACT_ROOT) / "uploads" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        path = _save_upload(v["file"], folder)
        job = queue_import(ImportJob.Kind.DICTIONARY, path, {"dictionary_slug": v["slug"], "title": v.get("title") or None}, user=request.user)
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


# --- collections and documents -----------------------------------------------------------------------------


class CollectionViewSet(RejectNulMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Collections: curators read and export; admins create them and upload files into them."""

    permission_classes = [IsCurator]
    serializer_class = CollectionSerializer
    lookup_field = "slug"
    queryset = Collection.objects.select_related("dictionary").annotate(document_count=Count("documents")).order_by("slug")
    pagination_class = Pagination

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
        data = UploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
            path = _save_upload(v["file"], Path(tmp))
            try:
                report = import_documents(path, v["format"], collection_slug=collection.slug, dictionary_slug=v.get("dictionary"))
            except (ParseError, FormatError, FileNotFoundError, ValueError) as exc:
                raise ValidationError({"detail": str(exc).replace(f"{tmp}/", "")}) from exc
        code = status.HTTP_201_CREATED if report.created else status.HTTP_200_OK
        return Response(_report(collection.slug, report), status=code)

    @extend_schema(parameters=EXPORT_PARAMETERS, responses=EXPORT_RESPONSES)
    @action(detail=True, methods=["get"], renderer_classes=EXPORT_RENDERERS)
    def export(self, request: Request, slug: str | None = None) -> HttpResponse:
        """Every document of the collection in one file: gold and curated links, suggestions on request."""
        collection = self.get_object()
        return _export(request, Document.objects.filter(collection=collection), collection.slug)


class DocumentViewSet(RejectNulMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Documents: curators read and export; admins add them (with gold mentions if they have any)."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    filterset_class = DocumentFilter

    def get_queryset(self) -> QuerySet[Document]:
        qs = Document.objects.select_related("collection").annotate(mention_count=Count("mentions")).order_by("id")
        return _with_mentions(qs) if self.action == "retrieve" else qs

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
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        document = self.get_object()
        return _export(request, Document.objects.filter(pk=document.pk), f"{document.collection.slug}-{document.external_id}")


def _with_mentions(documents: QuerySet[Document]) -> QuerySet[Document]:
    links = Link.objects.select_related("concept", "created_by").order_by("part", "id")
    mentions = Mention.objects.order_by("start", "end", "id").prefetch_related(Prefetch("links", queryset=links))
    return documents.prefetch_related(Prefetch("mentions", queryset=mentions))


# --- mentions, links and decisions ---------------------------------------------------------------------------


class MentionViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """Mentions with their links; ``POST /api/mentions/{id}/decision/`` records a curator's decision."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    serializer_class = MentionSerializer
    filterset_class = MentionFilter

    def get_queryset(self) -> QuerySet[Mention]:
        links = Link.objects.select_related("concept", "created_by").order_by("part", "id")
        return (
            Mention.objects.select_related("document__collection")
            .prefetch_related(Prefetch("links", queryset=links))
            .order_by("document_id", "start", "end", "id")
        )

    @extend_schema(
        request=DecisionInputSerializer,
        responses={200: MentionSerializer, 400: OpenApiTypes.OBJECT, 409: ConflictSerializer},
        description="accept (the best suggestion, or the concept given), relink (concept_id), nil, or reject. "
        "Send the mention's updated_at as you read it: if it changed since, nothing is recorded and the "
        "answer is 409 with the current mention.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsCuratorForAll], serializer_class=DecisionInputSerializer)
    def decision(self, request: Request, pk: str | None = None) -> Response:
        mention = self.get_object()
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        concept = _decision_concept(mention, v["concept_id"], v.get("dictionary")) if v["concept_id"] else None
        try:
            # The same service as the curation screen: logged, undoable, hard negatives, live index updated.
            decide(
                user=request.user, mention_id=mention.pk, action=v["action"], seen_updated_at=v["updated_at"],
                concept=concept, part=v["part"], via=Decision.Via.API, time_on_task_ms=v.get("time_on_task_ms"),
                scope=v["scope"],
            )
        except Conflict as exc:
            current = self.get_queryset().get(pk=mention.pk)
            return Response({"detail": str(exc), "current": MentionSerializer(current).data}, status=status.HTTP_409_CONFLICT)
        except CurationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(MentionSerializer(self.get_queryset().get(pk=mention.pk)).data)


def _decision_concept(mention: Mention, concept_id: str, dictionary_slug: str | None) -> Concept:
    """The concept a curator named: one the mention's links already point to, else the dictionary's latest release."""
    variants = id_variants(concept_id)
    linked = Concept.objects.filter(links__mention=mention, concept_id__in=variants).order_by("-version_id").first()
    if linked is not None:
        return linked
    slug = dictionary_slug or (mention.document.collection.dictionary.slug if mention.document.collection.dictionary else None)
    if not slug:
        raise ValidationError({"dictionary": ["the collection has no dictionary: name the concept's dictionary"]})
    dictionary = Dictionary.objects.filter(slug=slug).first()
    version = dictionary.latest_version() if dictionary else None
    if version is None:
        raise ValidationError({"dictionary": [f"no imported dictionary {slug!r}"]})
    concept = (
        Concept.objects.filter(version=version, concept_id__in=variants).first()
        or Concept.objects.filter(version=version, alt_ids__overlap=variants).order_by("concept_id").first()
    )
    if concept is None:
        raise ValidationError({"concept_id": [f"no concept {concept_id!r} in {slug} release {version.release}"]})
    return concept


class LinkViewSet(RejectNulMixin, viewsets.ReadOnlyModelViewSet):
    """Links of every origin (gold, model suggestions, curator decisions), filterable."""

    permission_classes = [IsCurator]
    pagination_class = Pagination
    serializer_class = LinkSerializer
    filterset_class = LinkFilter
    queryset = Link.objects.select_related("concept", "created_by").order_by("id")


# --- POST /api/link -------------------------------------------------------------------------------------------


class LinkTextView(RejectNulMixin, GenericAPIView):
    """Mentions of a text with ranked candidates, by the dictionary's active index."""

    permission_classes = [IsCuratorForAll]
    throttle_classes = [AnonRateThrottle, UserRateThrottle, ScopedRateThrottle]
    throttle_scope = "link"
    serializer_class = LinkRequestSerializer

    @extend_schema(
        request=LinkRequestSerializer,
        responses={200: LinkResponseSerializer, 400: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
        description="Give mentions as spans of the text, or leave them out to find them with the dictionary "
        "matcher. 503 when the dictionary has no active index.",
    )
    def post(self, request: Request) -> Response:
        data = LinkRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if not Dictionary.objects.filter(slug=v["dictionary"]).exists():
            raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        try:
            active = get_active_linker(v["dictionary"])
        except (OSError, ValueError) as exc:
            return Response({"detail": f"the active index of {v['dictionary']} cannot be loaded: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        if active is None:
            return Response(
                {"detail": f"dictionary {v['dictionary']} has no active index; an admin builds one with "
                 f"'manage.py build_index --dictionary {v['dictionary']} --activate'"},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        spans = [GivenSpan(m["start"], m["end"], m["mention_type"]) for m in v["mentions"]] if "mentions" in v else None
        return Response(link_text(active, v["text"], spans, v["k"]))


class NotFoundView(APIView):
    """Any other path under /api/ ending in a slash: a JSON 404 (401 without credentials), never an HTML page."""

    permission_classes = [IsAuthenticated]
    schema = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound("no such API endpoint")

    post = put = patch = delete = get
