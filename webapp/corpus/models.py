"""Collections of documents, the mentions in them, and links from mentions to concepts (or NIL).

A Link keeps the id as written (``concept_ref``) as well as the resolved Concept, so a gold corpus can be
imported before its dictionary and resolved later, and an id the dictionary lacks is never lost.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import HashIndex
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now, Upper
from django.utils import timezone

from webapp.core.public import PublicMessageField
from webapp.vocab.models import Concept, Dictionary


class Collection(models.Model):
    class Detection(models.TextChoices):
        # Which mention detectors run on a document imported without mentions (webapp.corpus.detection).
        MATCHER_AND_TAGGER = "matcher+tagger", "Dictionary matcher and tagger (the tagger when one is active)"
        MATCHER = "matcher", "Dictionary matcher only"
        TAGGER = "tagger", "Tagger only"
        OFF = "off", "Off: curators add every mention by hand"

    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    dictionary = models.ForeignKey(
        Dictionary, null=True, blank=True, on_delete=models.SET_NULL,
        help_text="The dictionary whose concepts this collection's mentions link to.",
    )
    has_gold = models.BooleanField(default=False, help_text="Imported with gold links (training or evaluation data).")
    detection = models.CharField(
        max_length=16, choices=Detection.choices, default=Detection.MATCHER_AND_TAGGER, db_default=Detection.MATCHER_AND_TAGGER,
        help_text="How mentions are found in a document imported without any: by the dictionary matcher over the active "
                  "index's names, by the dictionary's active tagger, both, or not at all.",
    )
    auto_accept_threshold = models.FloatField(
        null=True, blank=True,
        help_text="Accept a model's top-1 suggestion without a curator when its calibrated confidence is at least this "
                  "(0..1); empty: every mention waits for a curator.",
    )
    is_workspace = models.BooleanField(
        default=False, db_default=False,
        help_text="An annotator's copies of a project's documents (webapp.projects): hidden from the collection lists.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title or self.slug


class Document(models.Model):
    class DetectionState(models.TextChoices):
        NONE = "none", "Not detected"  # imported with mentions, or detection is off
        QUEUED = "queued", "Queued for detection"
        RUNNING = "running", "Detecting mentions"
        DONE = "done", "Mentions detected"
        FAILED = "failed", "Detection failed"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=120, help_text="PMID or the source's own id.")
    title = models.TextField(blank=True)
    text = models.TextField(help_text="Full text; mention offsets count characters of this text.")
    metadata = models.JSONField(default=dict, blank=True)
    # Rows written by COPY or raw SQL take the database's defaults (db_default).
    detection_state = models.CharField(
        max_length=16, choices=DetectionState.choices, default=DetectionState.NONE, db_default=DetectionState.NONE,
    )
    detection_error = PublicMessageField(blank=True, default="", db_default="", help_text="Why detection failed.")
    detected_at = models.DateTimeField(null=True, blank=True)
    detection_model = models.CharField(
        max_length=300, blank=True, default="", db_default="",
        help_text="What found the mentions, e.g. 'matcher:medic@2024/sparse/index-7 + tagger:tagger-run-12'.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept by the database (migration 0011's triggers): the last time the document, its mentions or their links
    # were written (a detection, a decision, an undo), whoever wrote them (COPY and raw SQL too). Exports' changed_since.
    changed_at = models.DateTimeField(default=timezone.now, db_default=Now(), editable=False)

    class Meta:
        ordering = ["collection", "id"]
        indexes = [models.Index(fields=["changed_at"], name="document_changed_at")]
        constraints = [models.UniqueConstraint(fields=["collection", "external_id"], name="unique_document_per_collection")]

    def __str__(self) -> str:
        return self.external_id


# The longest mention text a curator (adding or widening a span), the API or an import may store. The longest
# gold mention of NCBI Disease train is 80 characters, of BC5CDR train 105; a span ten times that is a slipped
# selection or a damaged file, and every page, panel, linker query and export that holds it pays for its length.
MENTION_MAX_CHARS = 1_000


def mention_too_long(text: str) -> str | None:
    """The refusal of a mention text longer than MENTION_MAX_CHARS, naming the mention; None when it fits."""
    if len(text) <= MENTION_MAX_CHARS:
        return None
    return f"the mention “{text[:40]}…” is {len(text):,} characters long, over the {MENTION_MAX_CHARS:,}-character limit for a mention"


class Mention(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Not reviewed"
        SUGGESTED = "suggested", "Suggested by the model"
        ACCEPTED = "accepted", "Accepted"
        RELINKED = "relinked", "Relinked"
        NIL = "nil", "NIL (no concept)"
        REJECTED = "rejected", "Rejected span"

    class Source(models.TextChoices):
        GOLD = "gold", "Gold annotation"
        DETECTOR = "detector", "Mention detector"
        CURATOR = "curator", "Added by a curator"

    class Detector(models.TextChoices):
        NONE = "", "Not detected"
        MATCHER = "matcher", "Dictionary matcher"
        TAGGER = "tagger", "Tagger"
        BOTH = "both", "Dictionary matcher and tagger"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="mentions")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    mention_type = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.GOLD)
    # Text of each part of a composite mention (BC5CDR's 7th column), empty for simple mentions.
    part_texts = ArrayField(models.TextField(), default=list, blank=True)
    # For source=detector: which detector found the span, and the version of it (the index or tagger label).
    detector = models.CharField(max_length=16, choices=Detector.choices, blank=True, default="", db_default="")
    model_version = models.CharField(max_length=300, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["document", "start", "end"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="mention_span_not_empty"),
            models.UniqueConstraint(fields=["document", "start", "end", "mention_type"], name="unique_mention_span"),
            # end <= length(document.text) and text = the span's characters are enforced by a trigger
            # (migration 0002), because a CHECK constraint cannot read the document row.
        ]
        indexes = [
            models.Index(fields=["document", "status"], name="mention_doc_status"),
            # A decision applied to every identical mention of its document or collection finds them by
            # text, case-insensitively (text__iexact: UPPER(text) = UPPER(%s)); without this index each such
            # decision read every mention of every collection twice, holding its locks. A hash index: it answers
            # that equality alone, and stores a 4-byte hash, so no text is too long for it (a btree's row is at
            # most 2,704 bytes: a 3,000-character mention failed to save with a raw ProgramLimitExceeded).
            HashIndex(Upper("text"), name="mention_text_upper_hash"),
        ]

    def __str__(self) -> str:
        return f"{self.text} [{self.start}:{self.end}]"

    @property
    def provenance(self) -> str:
        """Who put the mention there, as a sentence's end: "found by the dictionary matcher (index …)"."""
        if self.source == self.Source.DETECTOR:
            what = {
                self.Detector.MATCHER: "the dictionary matcher",
                self.Detector.TAGGER: "the tagger",
                self.Detector.BOTH: "both the dictionary matcher and the tagger",
            }.get(self.Detector(self.detector) if self.detector in self.Detector.values else None, "the mention detector")
            return f"found by {what}" + (f" ({self.model_version})" if self.model_version else "")
        if self.source == self.Source.CURATOR:
            return "added by a curator"
        return "gold annotation"


class Link(models.Model):
    class Origin(models.TextChoices):
        GOLD = "gold", "Gold"
        MODEL = "model", "Model suggestion"
        CURATOR = "curator", "Curator decision"

    mention = models.ForeignKey(Mention, on_delete=models.CASCADE, related_name="links", db_index=False)  # link_mention_origin
    part = models.PositiveSmallIntegerField(default=0, help_text="Index of the composite part this link is for.")
    concept = models.ForeignKey(Concept, null=True, blank=True, on_delete=models.PROTECT, related_name="links")
    concept_ref = models.CharField(
        max_length=200, blank=True,
        help_text="Id as written by the source (e.g. 'D003110' or 'D020279+D035583'); empty for NIL.",
    )
    nil = models.BooleanField(default=False, help_text="No concept of the dictionary fits.")
    origin = models.CharField(max_length=16, choices=Origin.choices)
    score = models.FloatField(null=True, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    model_version = models.CharField(max_length=120, blank=True)
    type_conflict = models.BooleanField(
        default=False, db_default=False,  # rows written by COPY (imports) take the database's default
        help_text="A model suggestion whose concept's known types miss every type the re-ranker confidently predicts for the mention.",
    )
    confidence = models.FloatField(
        null=True, blank=True,
        help_text="A top-1 model suggestion: the linker's calibrated probability that it is right (linker.calibration).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["mention", "part", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["mention", "part"], condition=Q(origin="gold"), name="one_gold_link_per_mention_part"
            ),
            models.CheckConstraint(
                condition=Q(nil=True, concept__isnull=True) | Q(nil=False) & (Q(concept__isnull=False) | ~Q(concept_ref="")),
                name="link_has_concept_or_is_nil",
            ),
        ]
        indexes = [
            models.Index(fields=["origin", "concept"], name="link_origin_concept"),
            # A mention's links of one origin (its suggestions: the panel, storing them, a decision): with only
            # (mention) and (origin, concept) to choose from, statistics taken before the first suggestions (an
            # import's) made the planner read every model link of the table through (origin, concept) and keep
            # the mention's: 5 ms a query at 2K model links, growing with each panel viewed, until an ANALYZE.
            # Both columns in one index leave it no worse plan. It serves (mention) alone as well.
            models.Index(fields=["mention", "origin"], name="link_mention_origin"),
        ]

    def __str__(self) -> str:
        target = "NIL" if self.nil else (self.concept.concept_id if self.concept else self.concept_ref)
        return f"{self.mention} -> {target} ({self.origin})"
