"""Encoder models and index versions: which linker serves which dictionary release.

An IndexVersion is an artifact folder (tf-idf, faiss index, encoder, maps) built for one dictionary version
with one encoder (or none: sparse only). At most one index per dictionary is active, enforced by the
database; activation is one atomic switch (webapp.training.services.activate_index).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from webapp.vocab.models import Dictionary, DictionaryVersion


class EncoderModel(models.Model):
    class Method(models.TextChoices):
        ZERO_SHOT = "zero_shot", "Base model, untrained (zero-shot)"
        SYNONYM_PRETRAIN = "synonym_pretrain", "Synonym pre-training (SapBERT-style)"
        BIOSYN = "biosyn", "BioSyn (synonym marginalisation)"
        IMPORTED = "imported", "Imported linker artifact"

    name = models.SlugField(max_length=120, unique=True)
    method = models.CharField(max_length=32, choices=Method.choices)
    base_model = models.CharField(max_length=500, help_text="Local Hugging Face folder the encoder started from.")
    config = models.JSONField(default=dict, blank=True, help_text="Hyperparameters and the linker configuration.")
    artifact_path = models.CharField(max_length=1000, help_text="Folder with the encoder weights (or a linker artifact).")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class IndexVersion(models.Model):
    class State(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"
        FAILED = "failed", "Failed"

    # Denormalised from dictionary_version so that the database itself can allow one active index per dictionary.
    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="index_versions")
    dictionary_version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="index_versions")
    encoder = models.ForeignKey(
        EncoderModel, null=True, blank=True, on_delete=models.PROTECT, related_name="index_versions",
        help_text="Empty: sparse (tf-idf) retrieval only.",
    )
    artifact_path = models.CharField(max_length=1000, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.BUILDING)
    name_count = models.PositiveIntegerField(default=0)
    concept_count = models.PositiveIntegerField(default=0)
    build_seconds = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["dictionary"], condition=Q(state="active"), name="one_active_index_per_dictionary"),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        """The model version string stored on every suggestion this index makes."""
        encoder = self.encoder.name if self.encoder_id else "sparse"
        return f"{self.dictionary.slug}@{self.dictionary_version.release}/{encoder}/index-{self.pk}"
