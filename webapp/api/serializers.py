from __future__ import annotations

from rest_framework import serializers

from webapp.core.models import ImportJob
from webapp.corpus.models import Collection
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion


class DictionaryVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = DictionaryVersion
        fields = ["id", "release", "source_format", "source_name", "imported_at", "concept_count", "name_count", "edge_count"]


class DictionarySerializer(serializers.ModelSerializer):
    versions = DictionaryVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Dictionary
        fields = ["slug", "title", "description", "versions"]


class ConceptSerializer(serializers.ModelSerializer):
    dictionary = serializers.CharField(source="version.dictionary.slug", read_only=True)
    release = serializers.CharField(source="version.release", read_only=True)
    names = serializers.SerializerMethodField()
    known_types = serializers.SlugRelatedField(many=True, read_only=True, slug_field="label")

    class Meta:
        model = Concept
        fields = ["concept_id", "preferred_name", "alt_ids", "definition", "obsolete", "dictionary", "release", "names", "known_types"]

    def get_names(self, concept: Concept) -> list[dict[str, str]]:
        return [{"text": n.text, "source": n.source} for n in concept.names.all()]


class CollectionSerializer(serializers.ModelSerializer):
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    document_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Collection
        fields = ["slug", "title", "description", "dictionary", "has_gold", "document_count"]


class ImportJobSerializer(serializers.ModelSerializer):
    class Meta:
        model = ImportJob
        fields = ["id", "kind", "path", "params", "state", "progress", "message", "report", "created_at", "started_at", "finished_at"]
        read_only_fields = ["state", "progress", "message", "report", "created_at", "started_at", "finished_at"]


class ImportRequestSerializer(serializers.Serializer):
    """Input of POST /api/imports/: a file on a volume the workers read, and the importer's options."""

    kind = serializers.ChoiceField(choices=ImportJob.Kind.choices)
    path = serializers.CharField(max_length=1000)
    slug = serializers.SlugField(help_text="Dictionary slug (kind=dictionary) or collection slug (kind=documents).")
    title = serializers.CharField(required=False, allow_blank=True)
    dictionary = serializers.SlugField(required=False, help_text="For documents: resolve gold ids in this dictionary.")
