"""Word vectors for admins and pipelines: list them, and upload a ``.vec``/``.bin`` file (the same service as the
models page: read at once when small, refused with the file and the fault named and nothing kept; read by a
worker when large, followed at ``/api/word-vector-uploads/<id>/``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from linker.methods.word_vector_params import MAX_DIM
from webapp.api.permissions import IsAdmin
from webapp.api.schema import ErrorSerializer
from webapp.api.views import RejectNulMixin
from webapp.training.errors import RunError
from webapp.training.models import WordVectorModel, WordVectorUpload
from webapp.training.word_vectors import upload_word_vectors
from webapp.vocab.models import Dictionary


class WordVectorSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True,
                                              help_text="The dictionary whose names name_coverage measures.")
    run = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True, help_text="The fastText run that made them.")

    class Meta:
        model = WordVectorModel
        fields = ["id", "name", "source", "file_name", "words", "dim", "subwords", "dictionary", "name_coverage",
                  "run", "created_at"]
        read_only_fields = fields


class WordVectorUploadSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    word_vectors = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = WordVectorUpload
        fields = ["id", "name", "file_name", "size", "expected_dim", "dictionary", "state", "error", "word_vectors",
                  "created_at", "finished_at"]
        read_only_fields = fields


class WordVectorFileSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True, help_text="fastText .bin, word2vec .bin, or word2vec text .vec/.txt.")
    name = serializers.SlugField(required=False, max_length=120, help_text="The model's name; default: from the file's.")
    dim = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DIM,
                                   help_text="Refuse the file unless its vectors have this dimension.")
    dictionary = serializers.SlugField(required=False, help_text="Measure the coverage of this dictionary's names.")


class WordVectorViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                        viewsets.GenericViewSet):
    permission_classes = [IsAdmin]
    serializer_class = WordVectorSerializer
    queryset = WordVectorModel.objects.select_related("dictionary").order_by("-id")
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": WordVectorFileSerializer},
                   responses={201: WordVectorSerializer, 202: WordVectorUploadSerializer, 400: OpenApiTypes.OBJECT,
                              503: ErrorSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Upload a word-vector file: 201 with the word vectors when read at once, 202 with the upload job when a
        worker reads it (large files); a refused file is a 400 naming the file and the fault."""
        data = WordVectorFileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        dictionary = None
        if v.get("dictionary"):
            dictionary = Dictionary.objects.filter(slug=v["dictionary"]).first()
            if dictionary is None:
                raise ValidationError({"dictionary": [f"no dictionary {v['dictionary']!r}"]})
        try:
            with transaction.atomic():
                outcome = upload_word_vectors(v["file"], v.get("name", ""), v.get("dim"), dictionary, user=request.user)
        except RunError as exc:
            raise ValidationError({"file": [str(exc)]}) from exc
        if outcome.job is not None:
            return Response(WordVectorUploadSerializer(outcome.job).data, status=status.HTTP_202_ACCEPTED)
        return Response(WordVectorSerializer(outcome.word_vectors).data, status=status.HTTP_201_CREATED)


class WordVectorUploadViewSet(RejectNulMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Large uploads read by a worker: their state, and the error naming the file and the fault when refused."""

    permission_classes = [IsAdmin]
    serializer_class = WordVectorUploadSerializer
    queryset = WordVectorUpload.objects.select_related("dictionary", "word_vectors").order_by("-id")
