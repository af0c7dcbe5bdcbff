"""Pieces every API view shares: pagination, the NUL guard, export renderers and uploads, the JSON 404."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.pagination import Pagination  # noqa: F401  (the viewsets import it from here)
from webapp.api.serializers import ImportReportSerializer
from webapp.core import limits
from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import ID_FORMS, LINK_CHOICES, check_export_options
from webapp.corpus.importers import ImportReport
from webapp.corpus.models import Document
from webapp.curation.export import export_documents, stream_documents, streams


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
    OpenApiParameter(
        "ids", str, enum=list(ID_FORMS), default="dictionary",
        description="The form of every concept id: " + "; ".join(f"{name}: {what}" for name, what in ID_FORMS.items()) + ".",
    ),
    OpenApiParameter(
        "links", str, enum=list(LINK_CHOICES), default="decided",
        description="Which links: " + "; ".join(f"{name}: {what}" for name, what in LINK_CHOICES.items()) + ".",
    ),
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


def query_flag(request: Request, name: str, default: bool = False) -> bool:
    """A yes/no query parameter as the schema types it (a boolean: true or false, given once); else a 400 naming it,
    not read as false."""
    values = request.query_params.getlist(name)
    if not values:
        return default
    if len(values) > 1:
        raise ValidationError({name: [f"given {len(values)} times; give it once"]})
    value = values[0].lower()
    if value not in ("true", "false"):
        raise ValidationError({name: [f"must be true or false (found {values[0][:40]!r})"]})
    return value == "true"


def export_options(request: Request, default: str = "pubtator") -> tuple[str, dict[str, Any]]:
    """The format (``as``) and the options of an export asked for by the request; a 400 naming what does not fit."""
    fmt = request.query_params.get("as", default)
    if fmt not in FORMATS:
        raise ValidationError({"as": [f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"]})
    suggestions = query_flag(request, "suggestions")
    ids = request.query_params.get("ids", "dictionary")
    links = request.query_params.get("links", "decided")
    for name, value, choices in (("ids", ids, tuple(ID_FORMS)), ("links", links, tuple(LINK_CHOICES))):
        if value not in choices:
            raise ValidationError({name: [f"unknown value {value!r}; expected one of {', '.join(choices)}"]})
    try:
        check_export_options(fmt, ids, links)
    except ValueError as exc:
        raise ValidationError({"links": [str(exc)]}) from None
    return fmt, {"suggestions": suggestions, "ids": ids, "links": links}


def export_response(
    request: Request, documents: QuerySet[Document], stem: str, *, stream: bool = False, default: str = "pubtator"
) -> HttpResponseBase:
    """The export as a file. ``stream``: a format written a document at a time (:func:`streams`) is sent as it is
    read, a batch of documents at a time in one snapshot of the database (:mod:`webapp.curation.export`); a zip is
    sent whole. ``default``: the format when the request names none."""
    fmt, options = export_options(request, default)
    if stream and streams(fmt):
        out = stream_documents(documents, fmt, stem=stem, **options)
        response: HttpResponseBase = StreamingHttpResponse(out.chunks, content_type=out.content_type)
        filename = out.filename
    else:
        export = export_documents(documents, fmt, stem=stem, **options)
        response, filename = HttpResponse(export.content, content_type=export.content_type), export.filename
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# What a multipart body carries besides the file (boundaries, headers, the other fields).
_MULTIPART_SLACK = 64 * 1024


def check_upload_request(request: Request) -> None:
    """Refuse a body over IMPORT_MAX_UPLOAD_BYTES by its Content-Length, before the body is read (call this
    before ``request.data``); :func:`check_upload` checks the file itself for bodies sent without a length."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return  # Django refuses a malformed length itself when it reads the body
    if length > limits.limit(limits.UPLOAD_BYTES) + _MULTIPART_SLACK:
        raise ValidationError({"file": [limits.over("the request body is", length, limits.UPLOAD_BYTES, "bytes")]})


def check_upload(upload: UploadedFile) -> None:
    if (upload.size or 0) > limits.limit(limits.UPLOAD_BYTES):
        name = Path(upload.name or "upload").name
        raise ValidationError({"file": [limits.over(f"{name} is", upload.size or 0, limits.UPLOAD_BYTES, "bytes")]})


def save_upload(upload: UploadedFile, folder: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(upload.name or "").name).lstrip(".") or "upload"
    path = folder / name
    with open(path, "wb") as fh:
        for chunk in upload.chunks():
            fh.write(chunk)
    return path


def import_report(collection: str, report: ImportReport) -> dict[str, Any]:
    data = {k: getattr(report, k) for k in ImportReportSerializer().fields if k != "collection"}
    return {"collection": collection, **data}



class NotFoundView(APIView):
    """Any other path under /api/ ending in a slash: a JSON 404 (401 without credentials), never an HTML page."""

    permission_classes = [IsAuthenticated]
    schema = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound("no such API endpoint")

    post = put = patch = delete = get
