"""Index versions for admins and pipelines: list them, follow one, and build one of a dictionary's latest release
with an encoder (a HiPrBERT base encoder, a trained linker) or none (tf-idf only), on a worker; the same
service as the models page's "Build an index of" and ``manage.py build_index --queue``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.views import RejectNulMixin
from webapp.training.errors import RunError
from webapp.training.models import EncoderModel, IndexVersion
from webapp.training.services import queue_index_build
from webapp.vocab.models import Dictionary


class IndexVersionSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    release = serializers.CharField(source="dictionary_version.release", read_only=True)
    encoder = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    label = serializers.CharField(read_only=True)

    class Meta:
        model = IndexVersion
        fields = ["id", "dictionary", "release", "encoder", "label", "state", "name_count", "concept_count",
                  "build_seconds", "error", "created_at", "activated_at"]
        read_only_fields = fields


class IndexBuildSerializer(serializers.Serializer):
    dictionary = serializers.SlugField(help_text="Its latest release is indexed.")
    encoder = serializers.SlugField(
        required=False, max_length=120,
        help_text="Name of an encoder model: a HiPrBERT base encoder (zero-shot) or a trained linker; left out: tf-idf only.",
    )


class IndexVersionViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          viewsets.GenericViewSet):
    permission_classes = [IsAdmin]
    serializer_class = IndexVersionSerializer
    queryset = IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder").order_by("-id")

    @extend_schema(request=IndexBuildSerializer, responses={202: IndexVersionSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = IndexBuildSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        dictionary = Dictionary.objects.filter(slug=v["dictionary"]).first()
        if dictionary is None:
            raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        encoder = None
        if v.get("encoder"):
            encoder = EncoderModel.objects.filter(name=v["encoder"]).first()
            if encoder is None:
                raise ValidationError({"encoder": [f"no encoder model named {v['encoder']!r}"]})
            if not Path(encoder.artifact_path).is_dir():
                raise ValidationError({"encoder": [f"encoder {encoder.name!r}: its folder {encoder.artifact_path} is gone"]})
        try:
            with transaction.atomic():
                index = queue_index_build(dictionary, encoder, user=request.user)
        except RunError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(IndexVersionSerializer(index).data, status=status.HTTP_202_ACCEPTED)
