from __future__ import annotations

from pathlib import Path
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.fields import (
    SingleValuedForm,
    SlugLookupField,
    StrictModelSerializer,
    UploadSlugField,
    umls_codes_field,
    validate_metadata,
)
from webapp.core.public import public_message
from webapp.core.uploads import upload_folder
from webapp.corpus.formats import FORMATS
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services.decisions import LINK_ACTIONS, Scope
from webapp.imports.models import ImportJob
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
    dictionary = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    document_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Collection
        fields = ["slug", "title", "description", "dictionary", "has_gold", "detection", "auto_accept_threshold", "document_count"]


class ImportJobSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(source="import_kind", choices=ImportJob.Kind.choices, read_only=True,
                                   help_text="What the file holds: a dictionary or documents.")
    path = serializers.SerializerMethodField(help_text="The file: a server file by the path given, an upload by its name.")
    message = serializers.SerializerMethodField(help_text="Why the import failed, naming the file, its line and field.")
    warnings = serializers.SerializerMethodField(
        help_text="What a succeeded import changed or left out of the file (a repeated document id renamed, ...)."
    )

    class Meta:
        model = ImportJob
        fields = ["id", "kind", "path", "params", "state", "progress", "progress_total", "message", "warnings", "report",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = ["state", "progress", "progress_total", "message", "report", "created_at", "started_at",
                            "finished_at"]

    def get_path(self, job: ImportJob) -> str:
        # An upload's folder on the artifact volume is the server's; the admin knows the file by its name.
        return Path(job.path).name if upload_folder(job.path) is not None else job.path

    def get_message(self, job: ImportJob) -> str:
        return public_message(job.message)  # a row stored before the rule too

    def get_warnings(self, job: ImportJob) -> list[str]:
        return [public_message(w) for w in job.warnings]


class ImportRequestSerializer(SingleValuedForm):
    """Input of POST /api/imports/: a file on a volume the workers read, and the importer's options."""

    kind = serializers.ChoiceField(choices=ImportJob.Kind.choices)
    path = serializers.CharField(max_length=1000)
    slug = UploadSlugField(help_text="Dictionary slug (kind=dictionary) or collection slug (kind=documents).")
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    release = serializers.CharField(
        required=False, allow_blank=True, max_length=120,
        help_text="For a dictionary: the release's label (default: from the file's header, else its name and checksum).",
    )
    dictionary = serializers.SlugField(required=False, help_text="For documents: resolve gold ids in this dictionary.")
    format = serializers.ChoiceField(
        choices=[(f.name, f.label) for f in FORMATS.values()], default="pubtator",
        help_text="For documents: the file's format.",
    )
    force = serializers.BooleanField(
        required=False, default=False,
        help_text="For PubMed XML, BioC, JSON Lines or PubAnnotation documents: also replace (or, by a PubMed update, "
                  "delete) documents with curators' decisions or gold annotations whose text the file changes "
                  "(recorded in the audit log); without it they are kept and the result names them.",
    )


# --- concepts: detail with the hierarchy -------------------------------------------------------------


class ConceptRefSerializer(serializers.Serializer):
    concept_id = serializers.CharField()
    preferred_name = serializers.CharField()


class ConceptDetailSerializer(ConceptSerializer):
    parents = serializers.SerializerMethodField()
    children = serializers.SerializerMethodField()

    class Meta(ConceptSerializer.Meta):
        fields = [*ConceptSerializer.Meta.fields, "parents", "children"]

    @extend_schema_field(ConceptRefSerializer(many=True))
    def get_parents(self, concept: Concept) -> list[dict[str, str]]:
        edges = concept.parent_edges.select_related("parent").order_by("parent__concept_id")
        return [{"concept_id": e.parent.concept_id, "preferred_name": e.parent.preferred_name} for e in edges]

    @extend_schema_field(ConceptRefSerializer(many=True))
    def get_children(self, concept: Concept) -> list[dict[str, str]]:
        edges = concept.child_edges.select_related("child").order_by("child__concept_id")
        return [{"concept_id": e.child.concept_id, "preferred_name": e.child.preferred_name} for e in edges]


class DictionaryUploadSerializer(SingleValuedForm):
    """Input of POST /api/dictionaries/upload/: the file goes to the shared artifact volume, a worker imports it."""

    file = serializers.FileField()
    slug = UploadSlugField(max_length=64, help_text="The dictionary; an existing one gets the file as a new release.")
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    release = serializers.CharField(
        required=False, allow_blank=True, max_length=120,
        help_text="The release's label (default: from the file's header, else its name and checksum).",
    )
    sources = umls_codes_field(
        "sources", "A UMLS release (.zip of its META folder): the sources (SAB) whose names are imported, e.g. "
                   "MSH,OMIM,HPO (default: every source).",
    )
    languages = umls_codes_field(
        "languages", "A UMLS release: the languages (LAT) whose names are imported, e.g. ENG,FRE (default: ENG).",
    )


# --- collections and documents -------------------------------------------------------------------------


class CollectionCreateSerializer(StrictModelSerializer):
    dictionary = SlugLookupField(
        slug_field="slug", queryset=Dictionary.objects.all(), required=False, allow_null=True,
        help_text="Slug of the dictionary whose concepts the mentions link to.",
    )

    auto_accept_threshold = serializers.FloatField(
        required=False, allow_null=True, min_value=0.5, max_value=1.0,
        help_text="Accept the linker's top-1 without a curator when its calibrated confidence is at least this; null: off.",
    )

    class Meta:
        model = Collection
        fields = ["slug", "title", "description", "dictionary", "detection", "auto_accept_threshold"]


class UploadSerializer(SingleValuedForm):
    """Input of POST /api/collections/{slug}/upload/: a file in one of the interchange formats."""

    file = serializers.FileField(help_text="PubTator, BioC XML, BioC JSON, JSON Lines, a zip of brat .txt/.ann files, or plain "
                                           "text (format=text: a .txt file, or a .zip / .tar.gz of them, one document each; "
                                           "its mentions are then detected on a worker).")
    format = serializers.ChoiceField(choices=list(FORMATS))
    dictionary = serializers.SlugField(required=False, help_text="Resolve the file's ids in this dictionary (default: the collection's).")


class ImportReportSerializer(serializers.Serializer):
    collection = serializers.CharField()
    documents = serializers.IntegerField()
    skipped_documents = serializers.IntegerField()
    mentions = serializers.IntegerField()
    links = serializers.IntegerField()
    resolved_links = serializers.IntegerField()
    unresolved_links = serializers.IntegerField()
    nil_links = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())
    message = serializers.CharField()


class LinkSerializer(serializers.ModelSerializer):
    concept_id = serializers.CharField(source="concept.concept_id", read_only=True, allow_null=True, default=None)
    preferred_name = serializers.CharField(source="concept.preferred_name", read_only=True, allow_null=True, default=None)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = Link
        fields = ["id", "mention", "part", "concept_id", "preferred_name", "concept_ref", "nil", "origin", "score", "rank", "model_version", "created_by", "created_at"]


class MentionSerializer(serializers.ModelSerializer):
    document_external_id = serializers.CharField(source="document.external_id", read_only=True)
    collection = serializers.CharField(source="document.collection.slug", read_only=True)
    links = LinkSerializer(many=True, read_only=True)

    class Meta:
        model = Mention
        fields = ["id", "document", "document_external_id", "collection", "start", "end", "text", "mention_type", "status", "source",
                  "detector", "model_version", "part_texts", "created_at", "updated_at", "links"]


class DocumentListSerializer(serializers.ModelSerializer):
    collection = serializers.CharField(source="collection.slug", read_only=True)
    mention_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Document
        fields = ["id", "collection", "external_id", "title", "mention_count", "detection_state", "detection_error", "created_at",
                  "changed_at"]


# A document's detail lists its mentions up to this many (a 9.5M-character document with 20,000 took 12 s and
# hundreds of MB to serialise); the rest are paged by GET /api/mentions/?document=<id>, which mentions_url names.
DOCUMENT_MENTIONS_SHOWN = 1_000


class DocumentDetailSerializer(DocumentListSerializer):
    mentions = serializers.SerializerMethodField(
        help_text=f"The first {DOCUMENT_MENTIONS_SHOWN:,} mentions by offset; mention_count says how many there are."
    )
    mentions_complete = serializers.SerializerMethodField(help_text="mentions lists every mention of the document.")
    mentions_url = serializers.SerializerMethodField(help_text="Every mention of the document, paged.")

    class Meta(DocumentListSerializer.Meta):
        fields = [*DocumentListSerializer.Meta.fields, "detected_at", "detection_model", "text", "metadata", "mentions",
                  "mentions_complete", "mentions_url"]

    @extend_schema_field(MentionSerializer(many=True))
    def get_mentions(self, document: Document) -> list[dict[str, Any]]:
        return MentionSerializer(_first_mentions(document)[:DOCUMENT_MENTIONS_SHOWN], many=True).data  # type: ignore[return-value]

    def get_mentions_complete(self, document: Document) -> bool:
        return len(_first_mentions(document)) <= DOCUMENT_MENTIONS_SHOWN

    def get_mentions_url(self, document: Document) -> str:
        return f"{reverse('api:mention-list')}?document={document.pk}"


def _first_mentions(document: Document) -> list[Mention]:
    """The first DOCUMENT_MENTIONS_SHOWN + 1 mentions by offset: prefetched by the document views (first_mentions)."""
    first = getattr(document, "first_mentions", None)
    if first is None:
        first = list(document.mentions.order_by("start", "end", "id")[: DOCUMENT_MENTIONS_SHOWN + 1])
    return first


class LinkInputSerializer(serializers.Serializer):
    part = serializers.IntegerField(min_value=0, max_value=50, default=0)
    concept_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    nil = serializers.BooleanField(default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["nil"] == bool(attrs["concept_id"]):
            raise serializers.ValidationError("give either a concept_id or nil: true")
        return attrs


class MentionInputSerializer(serializers.Serializer):
    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=1)
    mention_type = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    links = LinkInputSerializer(many=True, required=False, default=list)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError("end must be greater than start")
        parts = [link["part"] for link in attrs["links"]]
        if len(parts) != len(set(parts)):
            raise serializers.ValidationError("each composite part can be linked once")
        return attrs


class DocumentCreateSerializer(serializers.Serializer):
    """Input of POST /api/documents/: one document, with gold mentions and links if it has any; a document without
    mentions is queued for mention detection (its ``detection_state`` says how far it is)."""

    collection = SlugLookupField(slug_field="slug", queryset=Collection.objects.all())
    external_id = serializers.CharField(max_length=120)
    title = serializers.CharField(required=False, allow_blank=True, default="", help_text="The title, if the text starts with it.")
    text = serializers.CharField(max_length=1_000_000, trim_whitespace=False)
    metadata = serializers.DictField(required=False, default=dict)
    mentions = MentionInputSerializer(many=True, required=False, default=list)

    def validate_text(self, text: str) -> str:
        if "\x00" in text:
            raise serializers.ValidationError("the text contains a NUL character")
        return text

    def validate_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return validate_metadata(metadata)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors = {
            i: f"span {m['start']}-{m['end']} is outside the text (length {len(attrs['text'])})"
            for i, m in enumerate(attrs["mentions"])
            if m["end"] > len(attrs["text"])
        }
        if errors:
            raise serializers.ValidationError({"mentions": errors})
        return attrs


# --- mentions: decisions -----------------------------------------------------------------------------


class DecisionInputSerializer(serializers.Serializer):
    """Input of POST /api/mentions/{id}/decision/."""

    action = serializers.ChoiceField(choices=[a.value for a in LINK_ACTIONS])
    concept_id = serializers.CharField(max_length=100, required=False, allow_blank=True, default="", help_text="The chosen concept (relink; optional for accept).")
    dictionary = serializers.SlugField(required=False, help_text="Where to find concept_id when the collection has no dictionary.")
    part = serializers.IntegerField(min_value=0, max_value=50, default=0)
    updated_at = serializers.DateTimeField(help_text="The mention's updated_at as you read it; a stale value gets 409.")
    scope = serializers.ChoiceField(
        choices=list(Scope.CHOICES), default=Scope.MENTION,
        help_text="Also apply the decision to every identical open mention of the document or collection.",
    )
    time_on_task_ms = serializers.IntegerField(min_value=0, required=False, help_text="Time the curator spent, if known.")
    teach = serializers.BooleanField(
        default=True,
        help_text="false: decide without teaching: the text becomes no name of the concept, and the decision is no "
        "training pair and makes no hard negatives. A link to a parent never teaches.",
    )


class ConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    current = MentionSerializer()


