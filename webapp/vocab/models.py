"""Dictionaries (with versions), concepts, names, known types and hierarchy edges.

A dictionary (MEDIC, HPO, a customer's terminology) has releases; each release is a DictionaryVersion with
its own concepts, so an old model's links keep pointing at the concepts it was trained on.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Left, Length

from webapp.core.public import PublicMessageField


class Dictionary(models.Model):
    slug = models.SlugField(max_length=64, unique=True, help_text="Short stable name, e.g. 'medic' or 'hpo'.")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "dictionaries"

    def __str__(self) -> str:
        return self.title or self.slug

    def latest_version(self) -> DictionaryVersion | None:
        return self.versions.order_by("-imported_at").first()


class DictionaryVersion(models.Model):
    class Format(models.TextChoices):
        MEDIC = "medic", "MEDIC TSV (CTD_diseases.tsv)"
        DNORM = "dnorm", "DNorm/BioSyn dictionary text"
        OBO = "obo", "OBO ontology"
        UMLS = "umls", "UMLS Metathesaurus release (RRF)"
        DEMO = "demo", "Demo data written by the workbench"

    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="versions")
    release = models.CharField(max_length=120, help_text="Release label from the file header, or given at import.")
    source_format = models.CharField(max_length=16, choices=Format.choices)
    source_name = models.CharField(max_length=500, blank=True, help_text="File the release was imported from.")
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the imported file: the same file is never imported twice.")
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    concept_count = models.PositiveIntegerField(default=0)
    name_count = models.PositiveIntegerField(default=0)
    edge_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["dictionary", "-imported_at"]
        constraints = [
            models.UniqueConstraint(fields=["dictionary", "release"], name="unique_release_per_dictionary"),
            models.UniqueConstraint(fields=["dictionary", "checksum"], name="unique_file_per_dictionary"),
        ]

    def __str__(self) -> str:
        return f"{self.dictionary.slug} {self.release}"


class KnownTypeVocabulary(models.Model):
    """A set of coarse types concepts carry: MEDIC SlimMappings, OBO subsets, UMLS semantic types."""

    name = models.CharField(max_length=120, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "known-type vocabularies"

    def __str__(self) -> str:
        return self.name


class KnownType(models.Model):
    vocabulary = models.ForeignKey(KnownTypeVocabulary, on_delete=models.CASCADE, related_name="types")
    code = models.CharField(max_length=200)
    label = models.CharField(max_length=200)

    class Meta:
        ordering = ["vocabulary", "label"]
        constraints = [models.UniqueConstraint(fields=["vocabulary", "code"], name="unique_known_type_code")]

    def __str__(self) -> str:
        return self.label


class Concept(models.Model):
    version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="concepts")
    concept_id = models.CharField(max_length=100, help_text="Primary id, e.g. MESH:D003920 or HP:0001250.")
    alt_ids = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    preferred_name = models.TextField()
    definition = models.TextField(blank=True)
    obsolete = models.BooleanField(default=False)
    known_types = models.ManyToManyField(KnownType, blank=True, related_name="concepts")

    class Meta:
        ordering = ["concept_id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "concept_id"], name="unique_concept_id_per_version"),
            models.CheckConstraint(condition=~Q(concept_id=""), name="concept_id_not_empty"),
        ]
        indexes = [GinIndex(fields=["alt_ids"], name="concept_alt_ids_gin")]

    def __str__(self) -> str:
        return f"{self.concept_id} {self.preferred_name}"


# Characters of a name's normalised form that key the prefix index (webapp.vocab.selectors: shorter queries use the
# b-tree range instead).
PREFIX_KEY = 3


class Name(models.Model):
    class Source(models.TextChoices):
        DICTIONARY = "dictionary", "Dictionary"
        CURATOR = "curator", "Curator synonym"
        TRAINING = "training", "Training mention"

    concept = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="names")
    text = models.TextField()
    normalized = models.TextField(help_text="Lowercased, punctuation removed (linker.text.normalize).")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.DICTIONARY)
    scope = models.CharField(max_length=16, blank=True, help_text="OBO synonym scope: EXACT, RELATED, BROAD, NARROW.")
    is_preferred = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-is_preferred", "text"]
        constraints = [
            models.UniqueConstraint(fields=["concept", "text"], name="unique_name_text_per_concept"),
            models.CheckConstraint(condition=~Q(text=""), name="name_text_not_empty"),
        ]
        indexes = [
            # Concept search (typeahead) over normalised names: trigram similarity and ILIKE '%q%'.
            GinIndex(fields=["normalized"], name="name_normalized_trgm", opclasses=["gin_trgm_ops"]),
            models.Index(fields=["normalized"], name="name_normalized_btree"),
            # Concept search's prefix tier: the names starting with a typed query, shortest first, read in index
            # order and stopped at the rows it needs (a sort of every "car…" name took 170 ms at 3 million names).
            models.Index(Left("normalized", PREFIX_KEY), Length("normalized"), name="name_prefix_length"),
        ]

    def __str__(self) -> str:
        return self.text


class Term(models.Model):
    """A word of a version's normalised names, with the number of names it occurs in: concept search's spelling
    correction looks a typed word up here (tens of thousands of rows) instead of ranking millions of names by
    trigram similarity (:mod:`webapp.vocab.spelling`).

    Kept by database triggers on ``vocab_name`` (migration 0005), not by the code that writes names: COPY
    imports, curator synonyms, release carry-overs, undo and deletions all pass through them, so no path can
    leave the words behind. A term whose names are all gone stays with ``names = 0`` and is not offered.
    """

    version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="terms")
    term = models.TextField()
    names = models.IntegerField(default=0, help_text="Names of the version this word occurs in.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "term"], name="unique_term_per_version")]
        indexes = [GinIndex(fields=["term"], name="term_trgm", opclasses=["gin_trgm_ops"])]

    def __str__(self) -> str:
        return self.term


class HierarchyEdge(models.Model):
    version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="edges")
    child = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="parent_edges")
    parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="child_edges")
    relation = models.CharField(max_length=32, default="is_a")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["child", "parent", "relation"], name="unique_hierarchy_edge"),
            models.CheckConstraint(condition=~Q(child=F("parent")), name="edge_not_self_loop"),
        ]

    def __str__(self) -> str:
        return f"{self.child_id} {self.relation} {self.parent_id}"


class ReleaseCarryOver(models.Model):
    """What carrying curator work over to a new release did (:func:`webapp.training.releases.carry_over`).

    One row per new release, written by the worker after the import commits and again each time the carry-over
    is run (it is idempotent): curator synonyms of the previous release copied to the surviving concepts, and
    how many synonyms and curated links name a concept that did not survive (listed on the diff page).
    """

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    version = models.OneToOneField(DictionaryVersion, on_delete=models.CASCADE, related_name="carry_over")
    previous = models.ForeignKey(
        DictionaryVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The release the curator work came from (the one before, or the active index's).",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    synonyms_carried = models.PositiveIntegerField(default=0, help_text="Curator synonyms copied to the new release.")
    synonyms_present = models.PositiveIntegerField(default=0, help_text="Already names of the surviving concept.")
    synonyms_to_review = models.PositiveIntegerField(default=0, help_text="Their concept did not survive.")
    links_to_review = models.PositiveIntegerField(default=0, help_text="Curated links to a concept that did not survive.")
    index_message = PublicMessageField(blank=True, help_text="The index build queued for the release, or why none was.")
    error = PublicMessageField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"carry-over to {self.version}"


class RemovedName(models.Model):
    """A curator synonym taken back by an undo, so that every process's live index forgets it too.

    The process that undid it removes the name from its own index after commit; the others read these rows
    (newer than the last they saw) when they next hand out the linker (:mod:`webapp.linking.registry`).
    """

    version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="+")
    concept_id = models.CharField(max_length=100)
    text = models.TextField()
    removed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.text} -/- {self.concept_id}"
