"""Index versions for admins and pipelines: list them, follow one, and build one of a dictionary's latest release
with an encoder (a HiPrBERT base encoder, a trained linker of any kind) or none (tf-idf only), optionally with a fast
BNE/DAN first stage in front of a transformer, on a worker; the same service as the models page's "Build an index"
and ``manage.py build_index --queue``."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.views import RejectNulMixin
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.index_builds import IndexBuildError
from webapp.training.job_caps import JobCapReached
from webapp.training.services import queue_index_build
from webapp.vocab.models import Dictionary


class IndexVersionSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    release = serializers.CharField(source="dictionary_version.release", read_only=True)
    encoder = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    encoder_kind = serializers.SerializerMethodField(help_text="transformer, bne or dan; null: tf-idf only.")
    first_stage = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    first_stage_kind = serializers.SerializerMethodField(help_text="bne or dan; null: no first stage.")
    label = serializers.CharField(read_only=True)

    class Meta:
        model = IndexVersion
        fields = ["id", "dictionary", "release", "encoder", "encoder_kind", "first_stage", "first_stage_kind", "label",
                  "state", "name_count", "concept_count", "build_seconds", "error", "created_at", "activated_at"]
        read_only_fields = fields

    def get_encoder_kind(self, index: IndexVersion) -> str | None:
        return index.encoder.kind if index.encoder_id else None

    def get_first_stage_kind(self, index: IndexVersion) -> str | None:
        return index.first_stage.kind if index.first_stage_id else None


class IndexBuildSerializer(serializers.Serializer):
    dictionary = serializers.SlugField(help_text="Its latest release is indexed.")
    encoder = serializers.SlugField(
        required=False, max_length=120,
        help_text="Name of an encoder model: a HiPrBERT base encoder (zero-shot) or a trained linker (BioSyn, BNE, DAN); "
                  "left out: tf-idf only.",
    )
    first_stage = serializers.SlugField(
        required=False, max_length=120,
        help_text="Name of a BNE or DAN encoder of the same dictionary, searched in front of a transformer encoder: the "
                  "transformer then encodes only mentions that are not a dictionary name (top candidates unchanged).",
    )


class IndexVersionViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          viewsets.GenericViewSet):
    permission_classes = [IsAdmin]
    serializer_class = IndexVersionSerializer
    queryset = IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder", "first_stage").order_by("-id")

    @extend_schema(request=IndexBuildSerializer, responses={202: IndexVersionSerializer, 429: ErrorSerializer, 503: ErrorSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = IndexBuildSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        dictionary = Dictionary.objects.filter(slug=v["dictionary"]).first()
        if dictionary is None:
            raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        encoder, first_stage = self._encoder(v, "encoder"), self._encoder(v, "first_stage")
        try:
            with transaction.atomic():
                index = queue_index_build(dictionary, encoder, user=request.user, first_stage=first_stage)
        except IndexBuildError as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        except JobCapReached as exc:  # 429 with the cap and its setting named; nothing was created
            raise Throttled(detail=str(exc)) from exc
        except RunError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(IndexVersionSerializer(index).data, status=status.HTTP_202_ACCEPTED)

    @staticmethod
    def _encoder(data: dict[str, Any], field: str) -> EncoderModel | None:
        if not data.get(field):
            return None
        encoder = EncoderModel.objects.filter(name=data[field]).first()
        if encoder is None:
            raise ValidationError({field: [f"no encoder model named {data[field]!r}"]})
        return encoder
