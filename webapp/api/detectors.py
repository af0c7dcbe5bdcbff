"""Mention detector versions for admins and pipelines: list them (``?dictionary=slug``), follow one, activate one
(one atomic switch: the dictionary's active one retires) or retire one; the same services as the models page's
"Mention detectors" and ``manage.py activate_detector``. Tagger runs make them (``POST /api/training-runs/`` with
method ``tagger``)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.views import RejectNulMixin
from webapp.linking.models import DetectorVersion
from webapp.training.detectors import DetectorActivationError, activate_detector, retire_detector


class DetectorVersionSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    run = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True, help_text="The tagger run that trained it.")
    metrics = serializers.DictField(
        read_only=True, help_text="Span figures on the run's evaluation collection: precision, recall, f1 (exact spans), "
                                  "f1_overlap and the like (overlapping spans); empty without an evaluation collection.")
    mention_types = serializers.ListField(child=serializers.CharField(), read_only=True,
                                          help_text="The mention types it was trained on; empty: every type.")
    training_data = serializers.DictField(
        read_only=True, help_text="Where its training spans came from: gold, curator_added, moved, confirmed_detector, "
                                  "rejected (left out), documents, ...")

    class Meta:
        model = DetectorVersion
        fields = ["id", "dictionary", "run", "label", "state", "metrics", "mention_types", "training_data", "created_at",
                  "activated_at", "retired_at"]
        read_only_fields = fields


class DetectorVersionViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [IsAdmin]
    serializer_class = DetectorVersionSerializer
    queryset = DetectorVersion.objects.select_related("dictionary").order_by("-id")

    def get_queryset(self) -> QuerySet[DetectorVersion]:
        queryset = super().get_queryset()
        slug = self.request.query_params.get("dictionary")
        return queryset.filter(dictionary__slug=slug) if slug else queryset

    @extend_schema(parameters=[OpenApiParameter("dictionary", OpenApiTypes.STR, description="Only this dictionary's (slug).")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=None, responses={200: DetectorVersionSerializer})
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, pk: str | None = None) -> Response:
        """Make it the detector its dictionary serves; the one active before retires, in one transaction."""
        version = self.get_object()
        try:
            version = activate_detector(version.pk, user=request.user)
        except DetectorActivationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(DetectorVersionSerializer(version).data)

    @extend_schema(request=None, responses={200: DetectorVersionSerializer})
    @action(detail=True, methods=["post"])
    def retire(self, request: Request, pk: str | None = None) -> Response:
        """Stop it serving (its dictionary then has no active detector until another is activated)."""
        version = self.get_object()
        return Response(DetectorVersionSerializer(retire_detector(version.pk, user=request.user)).data)
