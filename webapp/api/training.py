"""Training runs for admins and pipelines: start, status, cancel (the same services as /training/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.views import RejectNulMixin
from webapp.corpus.models import Collection
from webapp.linking.models import DetectorVersion
from webapp.training.base_encoders import get_base_encoder
from webapp.training.errors import RunError
from webapp.training.job_caps import JobCapReached
from webapp.training.methods import method_choices
from webapp.training.models import TrainingRun, WordVectorModel
from webapp.training.params import method_fields
from webapp.training.runs import cancel_run, start_run
from webapp.training.word_vectors import get_word_vectors
from webapp.vocab.models import Dictionary


class TrainingRunSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    collections = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    eval_collection = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    encoder = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    index_version = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    word_vectors = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True,
        help_text="BNE/DAN: the word vectors it starts from (null: fastText trained on its texts first).",
    )
    trained_word_vectors = serializers.SerializerMethodField(help_text="fastText: the word vectors it made.")
    detector_version = serializers.SerializerMethodField(
        help_text="tagger: the id of the mention detector version it made (GET /api/detectors/<id>/)."
    )

    # The job's created_at, under the name the API has always given it.
    queued_at = serializers.DateTimeField(source="created_at", read_only=True)

    class Meta:
        model = TrainingRun
        fields = [
            "id", "dictionary", "collections", "eval_collection", "method", "base_model", "params", "state", "phase",
            "epoch", "epochs", "step", "total_steps", "fraction", "metrics", "error", "device", "worker",
            "encoder", "index_version", "word_vectors", "trained_word_vectors", "detector_version", "queued_at",
            "started_at", "finished_at",
        ]
        read_only_fields = fields

    def get_trained_word_vectors(self, run: TrainingRun) -> str | None:
        if run.method != TrainingRun.Method.FASTTEXT or run.state != TrainingRun.State.SUCCEEDED:
            return None
        return WordVectorModel.objects.filter(run=run).values_list("name", flat=True).first()

    def get_detector_version(self, run: TrainingRun) -> int | None:
        if run.method != TrainingRun.Method.TAGGER:
            return None
        return DetectorVersion.objects.filter(run=run).values_list("pk", flat=True).first()


class TrainingRunStartSerializer(serializers.Serializer):
    dictionary = serializers.SlugField()
    collections = serializers.ListField(
        child=serializers.SlugField(), required=False, default=list,
        help_text="Gold collections to train on (BioSyn, LATTE, BNE, DAN, tagger: at least one; HiPrBERT: optional, "
                  "their gold mentions become extra names); fastText: any collections whose documents it trains on.",
    )
    eval_collection = serializers.SlugField(required=False, help_text="A held-out gold collection to evaluate on.")
    base_model = serializers.CharField(required=False, allow_blank=True, default="", help_text="Local Hugging Face folder.")
    base_encoder = serializers.SlugField(
        required=False, max_length=120,
        help_text="Name of a HiPrBERT base encoder to start from (BioSyn, HiPrBERT); sets base_model to its folder.",
    )
    extra_dictionaries = serializers.ListField(
        child=serializers.SlugField(), required=False, default=list,
        help_text="HiPrBERT: more dictionaries to pre-train on, besides dictionary (each needs a hierarchy).",
    )
    word_vectors = serializers.SlugField(
        required=False, max_length=120,
        help_text="BNE, DAN: name of a word-vector model to start from (GET /api/word-vectors/); left out: fastText is "
                  "trained on the gold collections' documents first.",
    )
    method = serializers.ChoiceField(
        choices=(), required=False,
        help_text="The method to train (the registered ones; biosyn when left out); params['method'] works too.",
    )
    PARAMS_HELP = ("The method's parameters, each left out keeping its default; a wrong name, type or value is refused "
                   "with the parameter named. The start form at /training/runs/new/ shows each one with its help.")
    params = serializers.DictField(required=False, default=dict, help_text=PARAMS_HELP)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The registered methods now (linker.recipe), not when this module was imported.
        method: serializers.ChoiceField = self.fields["method"]
        method.choices = method_choices()
        method.help_text = "; ".join(f"{name}: {label}" for name, label in method.choices.items()) + (
            ". biosyn when left out; params['method'] works too.")
        self.fields["params"].help_text = self.PARAMS_HELP + " Their names: " + "; ".join(
            f"{name}: {', '.join(f.name for f in method_fields(name))}" for name in method.choices) + "."

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
    queryset = (TrainingRun.objects.select_related("dictionary", "eval_collection", "encoder", "word_vectors")
                .prefetch_related("collections").order_by("-id"))

    @extend_schema(request=TrainingRunStartSerializer, responses={202: TrainingRunSerializer, 429: ErrorSerializer, 503: ErrorSerializer})
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
        found = {d.slug: d for d in Dictionary.objects.filter(slug__in=v["extra_dictionaries"])}
        extra = [found[slug] for slug in dict.fromkeys(v["extra_dictionaries"]) if slug in found]  # in the order asked
        unknown = sorted(set(v["extra_dictionaries"]) - set(found))
        if unknown:
            raise ValidationError({"extra_dictionaries": [f"no dictionary {', '.join(unknown)}"]})
        base_encoder = None
        if v.get("base_encoder"):
            try:
                base_encoder = get_base_encoder(v["base_encoder"])
            except RunError as exc:
                raise ValidationError({"base_encoder": [str(exc)]}) from exc
        word_vectors = None
        if v.get("word_vectors"):
            try:
                word_vectors = get_word_vectors(v["word_vectors"])
            except RunError as exc:
                raise ValidationError({"word_vectors": [str(exc)]}) from exc
        evaluation = None
        if v.get("eval_collection"):
            evaluation = Collection.objects.filter(slug=v["eval_collection"]).first()
            if evaluation is None:
                raise ValidationError({"eval_collection": [f"no collection {v['eval_collection']!r}"]})
        try:
            with transaction.atomic():
                run = start_run(dictionary, collections, params=v["params"], base_model=v["base_model"],
                                eval_collection=evaluation, user=request.user, method=v.get("method"),
                                base_encoder=base_encoder, extra_dictionaries=extra, word_vectors=word_vectors)
        except JobCapReached as exc:  # 429 with the cap and its setting named; nothing was created
            raise Throttled(detail=str(exc)) from exc
        except RunError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(TrainingRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: TrainingRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        with transaction.atomic():
            run = cancel_run(run.pk, user=request.user)
        return Response(TrainingRunSerializer(run).data)
