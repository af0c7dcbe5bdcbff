"""What serving serves: encoders, index versions and detector versions (the models of :mod:`webapp.linking`).

An IndexVersion is an artifact folder (tf-idf, faiss index, encoder, maps) built for one dictionary version
with one :class:`EncoderModel` (or none: sparse only) and, in front of a transformer, optionally a fast BNE/DAN
first stage. A DetectorVersion is a trained mention tagger. At most one of each per dictionary is active, enforced
by the database; training builds, trains and promotes them (webapp.training.services.activate_index,
webapp.training.detectors.activate_detector), serving reads which are active (:mod:`.versions`).

Their tables keep the names they had when these models were training's (``training_indexversion`` ...): the
move was a change of Django's state only (linking's 0001, training's 0015).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from webapp.core.public import PublicMessageField
from webapp.jobs.models import Job
from webapp.vocab.models import Dictionary, DictionaryVersion


class EncoderModel(models.Model):
    class Method(models.TextChoices):
        ZERO_SHOT = "zero_shot", "Base model, untrained (zero-shot)"
        SYNONYM_PRETRAIN = "synonym_pretrain", "Synonym pre-training (SapBERT-style)"
        BIOSYN = "biosyn", "BioSyn (synonym marginalisation)"
        LATTE = "latte", "LATTE re-ranker over a linker"
        # Not a linker: a Hugging Face folder that BioSyn runs and index builds start from.
        HIPRBERT = "hiprbert", "Base encoder: hierarchy pre-training (HiPrBERT)"
        IMPORTED = "imported", "Imported linker artifact"
        # Fast name encoders over word vectors (linker.encoders.bne / dan): linkers like BioSyn's.
        BNE = "bne", "BNE (BiLSTM over characters and word vectors)"
        DAN = "dan", "DAN (deep averaging network over word vectors)"

    # What loads each method's encoder (linker.encoders.base.load_encoder reads the same from encoder.json).
    KINDS = {Method.BNE: "bne", Method.DAN: "dan"}
    KIND_LABELS = {"transformer": "Transformer", "bne": "BNE", "dan": "DAN"}

    name = models.SlugField(max_length=120, unique=True)
    method = models.CharField(max_length=32, choices=Method.choices)
    base_model = models.CharField(max_length=500, help_text="Local Hugging Face folder the encoder started from.")
    config = models.JSONField(default=dict, blank=True, help_text="Hyperparameters and the linker configuration.")
    artifact_path = models.CharField(max_length=1000, help_text="Folder with the encoder weights (or a linker artifact).")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "training_encodermodel"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> str:
        """transformer, bne or dan: by the method, or for an imported artifact by its encoder.json."""
        if self.method in self.KINDS:
            return self.KINDS[self.method]
        if self.method == self.Method.IMPORTED:
            from linker.encoders.base import encoder_kind

            folder = Path(self.artifact_path)
            try:
                return encoder_kind(folder / "encoder" if (folder / "encoder").is_dir() else folder)
            except (OSError, ValueError):
                return "transformer"
        return "transformer"

    @property
    def kind_label(self) -> str:
        return self.KIND_LABELS.get(self.kind, self.kind)


class IndexVersion(models.Model):
    class State(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    # Where a build is (``phase``), written by its builder while it runs (webapp.training.index_progress): through a
    # connection of its own, at most once a second. "encoding" and "first-stage" count distinct names.
    class Phase(models.TextChoices):
        QUEUED = "", "Waiting for a worker"
        READING = "reading", "Reading the names from the database"
        LOADING = "loading", "Loading the encoder"
        TFIDF = "tf-idf", "Fitting tf-idf"
        ENCODING = "encoding", "Encoding names"
        FIRST_STAGE = "first-stage", "Encoding names with the first stage"
        FAISS = "faiss", "Building the faiss index"
        SAVING = "saving", "Writing the artifact"
        DONE = "done", "Done"

    COUNTED_PHASES = (Phase.ENCODING, Phase.FIRST_STAGE)

    # Denormalised from dictionary_version so that the database itself can allow one active index per dictionary.
    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="index_versions")
    dictionary_version = models.ForeignKey(DictionaryVersion, on_delete=models.CASCADE, related_name="index_versions")
    encoder = models.ForeignKey(
        EncoderModel, null=True, blank=True, on_delete=models.PROTECT, related_name="index_versions",
        help_text="Empty: sparse (tf-idf) retrieval only.",
    )
    # Checked where builds are created (webapp.training.index_builds.check_first_stage): a BNE or DAN encoder of
    # the same dictionary, in front of a transformer encoder only.
    first_stage = models.ForeignKey(
        EncoderModel, null=True, blank=True, on_delete=models.PROTECT, related_name="first_stage_of",
        help_text="A fast BNE/DAN encoder searched first: the transformer then encodes only mentions that are not a "
                  "dictionary name (RetrievalConfig.cascade='exact'). Empty: the transformer encodes every mention.",
    )
    artifact_path = models.CharField(max_length=1000, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.BUILDING)
    name_count = models.PositiveIntegerField(default=0)
    concept_count = models.PositiveIntegerField(default=0)
    build_seconds = models.FloatField(null=True, blank=True)
    error = PublicMessageField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    # A build's progress (see Phase) and its life: started and finished by its builder, on the database's clock.
    phase = models.CharField(max_length=16, choices=Phase.choices, blank=True, default="")
    progress = models.PositiveIntegerField(default=0, help_text="Names done in the current phase.")
    progress_total = models.PositiveIntegerField(null=True, blank=True, help_text="Names of the current phase.")
    phase_started_at = models.DateTimeField(null=True, blank=True)
    progress_at = models.DateTimeField(null=True, blank=True, help_text="When progress was last written.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    build = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="built_index",
        help_text="The job that builds it (webapp.jobs): queued, running, then ended with the build.",
    )
    activate_when_built = models.BooleanField(default=False, help_text="Activated (and open mentions re-linked) once built.")
    cancel_requested = models.BooleanField(default=False, help_text="An admin asked the builder to stop; it does between batches.")

    class Meta:
        db_table = "training_indexversion"
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

    @property
    def first_stage_label(self) -> str:
        """"first stage: dan-run-4 (DAN)", or empty without one."""
        if self.first_stage_id is None:
            return ""
        return f"first stage: {self.first_stage.name} ({self.first_stage.kind_label})"

    # --- a build's progress, for the pages ----------------------------------------------------------------

    @property
    def is_counting(self) -> bool:
        """Whether the current phase counts names (a bar, a rate and the time left can be shown)."""
        return self.state == self.State.BUILDING and self.phase in self.COUNTED_PHASES and bool(self.progress_total)

    @property
    def progress_percent(self) -> int | None:
        if not self.progress_total:
            return None
        return min(100, 100 * self.progress // self.progress_total)

    @property
    def names_per_second(self) -> float | None:
        """Names encoded per second in the current phase, by the builder's last report (None before there is one)."""
        if not self.is_counting or not self.progress or self.phase_started_at is None or self.progress_at is None:
            return None
        seconds = (self.progress_at - self.phase_started_at).total_seconds()
        return self.progress / seconds if seconds > 0 else None

    @property
    def seconds_left(self) -> float | None:
        """The current phase's names left at its rate so far."""
        rate = self.names_per_second
        if rate is None or self.progress_total is None:
            return None
        return max(0.0, (self.progress_total - self.progress) / rate)

    @property
    def running_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()


class DetectorVersion(models.Model):
    """A trained mention tagger (a tagger training run's artifact folder) that may find the mentions of a
    dictionary's documents: ``ready`` once its run succeeded, ``active`` while it serves, ``retired`` after.

    At most one per dictionary is active, enforced by the database (as for :class:`IndexVersion`); activation is
    one atomic switch (:func:`webapp.training.detectors.activate_detector`). ``metrics`` are the tagger's span
    figures on the run's held-out gold collection (precision, recall, F1; exact and overlapping spans);
    ``training_data`` says where its spans came from (gold, curator-added, moved, rejected, confirmed detector
    spans, documents: :mod:`webapp.training.tagger_inputs`).
    """

    class State(models.TextChoices):
        READY = "ready", "Ready"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"

    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="detector_versions")
    # By name, not by import: serving sits below training (the layers contract). The column stays on this table (a
    # tagger run makes at most one detector); turned around it would be a column of training's run table to move.
    run = models.OneToOneField(
        "training.TrainingRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="detector_version",
        help_text="The tagger run that trained it.",
    )
    label = models.CharField(max_length=120, unique=True, help_text="Stored on every mention it finds: tagger-run-12.")
    artifact_path = models.CharField(max_length=1000, help_text="The tagger's folder (linker.detect.tagger.Tagger.load).")
    state = models.CharField(max_length=16, choices=State.choices, default=State.READY)
    metrics = models.JSONField(default=dict, blank=True, help_text="Span figures on the run's evaluation collection.")
    mention_types = models.JSONField(default=list, blank=True, help_text="The mention types it was trained on; empty: all.")
    training_data = models.JSONField(default=dict, blank=True, help_text="Where its training spans came from (counts).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    activated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "training_detectorversion"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dictionary"], condition=Q(state="active"), name="one_active_detector_per_dictionary"),
        ]

    def __str__(self) -> str:
        return self.label

    def figure(self, name: str) -> float | None:
        """One of the span figures (``f1``, ``precision_overlap`` ...), None when the run had no evaluation."""
        value = self.metrics.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def precision(self) -> float | None:
        return self.figure("precision")

    @property
    def recall(self) -> float | None:
        return self.figure("recall")

    @property
    def f1(self) -> float | None:
        return self.figure("f1")

    @property
    def f1_overlap(self) -> float | None:
        return self.figure("f1_overlap")

    @property
    def types_label(self) -> str:
        return ", ".join(self.mention_types) if self.mention_types else "all types"
