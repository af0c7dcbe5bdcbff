from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import models
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html

from webapp.imports.models import ImportJob
from webapp.core.public import public_message
from webapp.core.uploads import upload_folder
from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.records import MAX_METADATA_DEPTH, has_nul, too_deep
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services.decisions import LINK_ACTIONS, Scope
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion


class SlugLookupField(serializers.SlugRelatedField):
    """A slug looked up in the database, refusing NUL first: PostgreSQL cannot compare text holding one."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError("NUL characters are not allowed")
        return super().to_internal_value(data)

    def get_value(self, dictionary: Any) -> Any:
        # A form's "dictionary=" reaches run_validation as "", not as the null DRF makes of it.
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        # DRF reads "" as null for a relation (an HTML form's empty choice); the schema says a slug or null.
        if data == "":
            raise serializers.ValidationError("may not be blank: give a slug" + (", or null for none" if self.allow_null else ""))
        return super().run_validation(data)


class RawLengthCharField(serializers.CharField):
    """A text whose max_length holds for the text as given: DRF trims blanks first, so a 204-character title with
    four leading blanks passed a maxLength of 200 that the schema states of the text sent."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().run_validation(data)


class StrictModelSerializer(serializers.ModelSerializer):
    """A model's text fields with RawLengthCharField."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: RawLengthCharField,
        models.SlugField: serializers.SlugField,  # a slug has no blanks to trim
    }


class SingleValuedForm(serializers.Serializer):
    """A form (multipart) body gives each field once: DRF reads the last of a repeated field, so languages=A and
    languages=B (the array a client meant) answered 202 with B alone."""

    def to_internal_value(self, data: Any) -> Any:
        getlist = getattr(data, "getlist", None)
        if getlist is not None:
            repeated = {name: [f"given {len(getlist(name))} times; give it once"] for name in self.fields
                        if len(getlist(name)) > 1}
            if repeated:
                raise serializers.ValidationError(repeated)
        return super().to_internal_value(data)


# JSON's literals: a multipart form has no null or boolean, so a client that sends one gets its name as text. As a
# slug it would name a dictionary "null"; it is refused instead.
RESERVED_SLUGS = frozenset({"null", "true", "false"})


class UploadSlugField(serializers.SlugField):
    """A slug given in a form (multipart): not one of JSON's literals."""

    def to_internal_value(self, data: Any) -> str:
        slug = super().to_internal_value(data)
        if slug.lower() in RESERVED_SLUGS:
            raise serializers.ValidationError(f"{slug!r} is reserved (a form cannot tell it from JSON's {slug.lower()})")
        return slug


def umls_codes_field(what: str, help_text: str) -> serializers.RegexField:
    """Comma-separated UMLS abbreviations (SAB or LAT: MSH, SNOMEDCT_US, ENG): upper case, each starting with a letter."""
    return serializers.RegexField(
        r"^\s*[A-Z][A-Z0-9_.-]*(\s*,\s*[A-Z][A-Z0-9_.-]*)*\s*$", required=False, allow_blank=True, max_length=2000,
        help_text=help_text,
        error_messages={"invalid": f"expected {what} as upper-case UMLS abbreviations separated by commas"},
    )


def validate_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Document metadata as PostgreSQL's jsonb can store it and the app can encode it back."""
    if has_nul(metadata):
        raise serializers.ValidationError("NUL characters are not allowed, in keys or values")
    if too_deep(metadata):
        raise serializers.ValidationError(f"nested too deeply (more than {MAX_METADATA_DEPTH} levels)")
    return metadata


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
        fields = ["id", "collection", "external_id", "title", "mention_count", "detection_state", "detection_error", "created_at"]


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


# --- POST /api/link ---------------------------------------------------------------------------------


class SpanInputSerializer(serializers.Serializer):
    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=1)
    mention_type = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError("end must be greater than start")
        return attrs


class LinkRequestSerializer(serializers.Serializer):
    dictionary = serializers.SlugField(help_text="The dictionary whose active index links the text.")
    text = serializers.CharField(max_length=100_000, trim_whitespace=False)
    mentions = SpanInputSerializer(
        many=True, required=False, max_length=2000,
        help_text="Spans to link; left out, mentions are found by matching the dictionary's names.",
    )
    k = serializers.IntegerField(min_value=1, max_value=50, default=10, help_text="Candidates per mention part.")
    types = serializers.BooleanField(
        default=True,
        help_text="The LATTE re-ranker's types (predicted, latent, conflicts). false: where the re-ranker only types "
        "(it kept the retriever's order) its pass is skipped, about a third of a request's time; a re-ranker that "
        "re-orders still ranks.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        bad = {i: f"span {m['start']}-{m['end']} is outside the text (length {len(attrs['text'])})"
               for i, m in enumerate(attrs.get("mentions") or []) if m["end"] > len(attrs["text"])}
        if bad:
            raise serializers.ValidationError({"mentions": bad})
        return attrs


class LatentTypeSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The latent type's number in the re-ranker (0 to K-1).")
    label = serializers.CharField(help_text="Its first three typical names.")
    typical_names = serializers.ListField(child=serializers.CharField(),
                                          help_text="The dictionary names most typical of it, computed at training.")
    probability = serializers.FloatField()


class PredictedTypeSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="A known type of the dictionary (e.g. a MEDIC slim).")
    probability = serializers.FloatField()


class CandidateSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    part = serializers.IntegerField()
    concept_id = serializers.CharField()
    preferred_name = serializers.CharField(allow_blank=True)
    matched_name = serializers.CharField()
    score = serializers.FloatField()
    dense = serializers.FloatField(allow_null=True)
    sparse = serializers.FloatField(allow_null=True)
    known_types = serializers.ListField(child=serializers.CharField())
    latent_type = LatentTypeSerializer(allow_null=True, help_text="The candidate's most likely latent type (a LATTE re-ranker's).")
    type_conflict = serializers.BooleanField(help_text="Its known types do not meet the mention's predicted ones.")
    homonyms = serializers.ListField(child=serializers.CharField(),
                                     help_text="Other concepts owning the matched name: choosing is a convention.")


class LinkedMentionSerializer(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()
    mention_type = serializers.CharField(allow_blank=True)
    source = serializers.ChoiceField(choices=["given", "detected"])
    ranked_by = serializers.ChoiceField(choices=["retriever", "latte"],
                                        help_text="Who ordered the candidates: the retriever or the LATTE re-ranker.")
    predicted_types = PredictedTypeSerializer(many=True, help_text="The mention's known types as the re-ranker predicts them, best first.")
    latent_type = LatentTypeSerializer(allow_null=True)
    confidence = serializers.FloatField(allow_null=True, help_text="Calibrated probability that the top-1 is right (null: not calibrated).")
    nil = serializers.BooleanField(allow_null=True, help_text="The confidence is below the index's no-concept threshold.")
    candidates = CandidateSerializer(many=True)


class LinkResponseSerializer(serializers.Serializer):
    dictionary = serializers.CharField()
    release = serializers.CharField()
    model_version = serializers.CharField()
    index_version = serializers.IntegerField()
    mentions = LinkedMentionSerializer(many=True)
