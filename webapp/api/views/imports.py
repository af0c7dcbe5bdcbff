"""Admins' imports: queued import jobs of files the workers read, and dictionary uploads."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.serializers import (
    DictionaryUploadSerializer,
    ImportJobSerializer,
    ImportRequestSerializer,
)
from webapp.api.views.common import (
    RejectNulMixin,
    check_upload,
    check_upload_request,
    save_upload,
)
from webapp.artifacts.manifests import publish
from webapp.core.limits import LimitExceeded, check_path
from webapp.core.uploads import new_upload_folder
from webapp.imports.jobs import queue_import
from webapp.imports.models import ImportJob


class ImportJobViewSet(RejectNulMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Admins queue imports of files the workers can read; the job row reports progress and errors."""

    permission_classes = [IsAdmin]
    serializer_class = ImportJobSerializer
    queryset = ImportJob.objects.order_by("-created_at")

    @extend_schema(request=ImportRequestSerializer, responses={202: ImportJobSerializer, 503: ErrorSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            check_path(v["path"])
        except LimitExceeded as exc:
            raise ValidationError({"path": [str(exc)]}) from None
        try:
            readable = Path(v["path"]).is_file()
        except OSError as exc:  # a name longer than the file system allows raises instead of answering False
            raise ValidationError({"path": [f"{v['path']} is not a readable file ({exc.strerror or exc})"]}) from None
        if not readable:
            raise ValidationError({"path": [f"{v['path']} is not a readable file"]})
        if v["kind"] == ImportJob.Kind.DICTIONARY:
            params = {"dictionary_slug": v["slug"], "title": v.get("title") or None, "release": v.get("release") or None}
            # A UMLS release's filters, only when given: the job of any other file has the params it always had.
            params.update({k: v[k] for k in ("sources", "languages") if v.get(k)})
        else:
            params = {"collection_slug": v["slug"], "title": v.get("title") or None, "dictionary_slug": v.get("dictionary"),
                      "format": v["format"]}
            if v.get("force"):  # only when asked: the job of any other import has the params it always had
                params["force"] = True
        job = queue_import(v["kind"], v["path"], params, user=request.user)
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


# --- dictionaries: upload ------------------------------------------------------------------------------


class DictionaryUploadView(RejectNulMixin, GenericAPIView):
    """Admins upload a dictionary file (MEDIC TSV, DNorm text, OBO, a .zip of a UMLS release); a worker imports it as a
    new release."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]
    serializer_class = DictionaryUploadSerializer

    @extend_schema(request=DictionaryUploadSerializer,
                   responses={202: ImportJobSerializer, 400: OpenApiTypes.OBJECT, 503: ErrorSerializer})
    def post(self, request: Request) -> Response:
        check_upload_request(request)  # before request.data: an oversized body is refused unread
        data = DictionaryUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        check_upload(v["file"])
        # The shared artifact volume: the worker that runs the import may be on another machine. The file goes
        # when its job ends, or now if the job is not queued (the task queue unreachable: a 503).
        folder = new_upload_folder()
        try:
            path = save_upload(v["file"], folder)
            publish(path)  # for a worker on another host (webapp.artifacts)
            params = {"dictionary_slug": v["slug"], "title": v.get("title") or None, "release": v.get("release") or None}
            # A UMLS release's filters, only when given: the job of any other file has the params it always had.
            params.update({k: v[k] for k in ("sources", "languages") if v.get(k)})
            job = queue_import(ImportJob.Kind.DICTIONARY, path, params, user=request.user)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
