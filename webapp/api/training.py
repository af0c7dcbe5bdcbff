"""Training runs for admins and pipelines: start, status, cancel (the same services as /training/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.views import RejectNulMixin
from webapp.corpus.models import Collection
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.training.runs import cancel_run, start_run
from webapp.vocab.models import Dictionary


class TrainingRunSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    collections = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    eval_collection = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    encoder = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    index_version = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = TrainingRun
        fields = [
            "id", "dictionary", "collections", "eval_collection", "method", "base_model", "params", "state", "phase",
            "epoch", "epochs", "step", "total_steps", "fraction", "metrics", "error", "device", "worker",
            "encoder", "index_version", "queued_at", "started_at", "finished_at",
        ]
        read_only_fields = fields


class TrainingRunStartSerializer(serializers.Serializer):
    dictionary = serializers.SlugField()
    collections = serializers.ListField(child=serializers.SlugField(), min_length=1, help_text="Gold collections to train on.")
    eval_collection = serializers.SlugField(required=False, help_text="A held-out gold collection to evaluate on.")
    base_model = serializers.CharField(required=False, allow_blank=True, default="", help_text="Local Hugging Face folder.")
    method = serializers.ChoiceField(
        choices=TrainingRun.Method.choices, required=False,
        help_text="biosyn (default) or latte: a re-ranker over the dictionary's active index (params['method'] works too).",
    )
    params = serializers.DictField(
        required=False, default=dict,
        help_text="The method's parameters; BioSyn's default to the paper's, LATTE's to the linker's (epochs, latent_types, top_k, ...).",
    )

    def validate_base_model(self, value: str) -> str:
        if value and ("\x00" in value or not _is_folder(value)):
            raise serializers.ValidationError("not a folder on the workers' machine (a local Hugging Face model)")
        return value


def _is_folder(value: str) -> bool:
    try:
        return Path(value).is_dir()
    except (OSError, ValueError):  # a name too long for the file system, or one it cannot encode
        return False


class TrainingRunViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    permission_classes = [IsAdmin]
    serializer_class = TrainingRunSerializer
    queryset = TrainingRun.objects.select_related("dictionary", "eval_collection", "encoder").prefetch_related("collections").order_by("-id")

    @extend_schema(request=TrainingRunStartSerializer, responses={202: TrainingRunSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = TrainingRunStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        dictionary = Dictionary.objects.filter(slug=v["dictionary"]).first()
        if dictionary is None:
            raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        collections = list(Collection.objects.filter(slug__in=v["collections"]))
        missing = sorted(set(v["collections"]) - {c.slug for c in collections})
        if missing:
            raise ValidationError({"collections": [f"no collection {', '.join(missing)}"]})
        evaluation = None
        if v.get("eval_collection"):
            evaluation = Collection.objects.filter(slug=v["eval_collection"]).first()
            if evaluation is None:
                raise ValidationError({"eval_collection": [f"no collection {v['eval_collection']!r}"]})
        try:
            with transaction.atomic():
                run = start_run(dictionary, collections, params=v["params"], base_model=v["base_model"],
                                eval_collection=evaluation, user=request.user, method=v.get("method"))
        except RunError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(TrainingRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: TrainingRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        with transaction.atomic():
            run = cancel_run(run.pk)
        return Response(TrainingRunSerializer(run).data)
