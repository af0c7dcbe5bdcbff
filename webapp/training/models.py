"""Encoder models and index versions: which linker serves which dictionary release.

An IndexVersion is an artifact folder (tf-idf, faiss index, encoder, maps) built for one dictionary version
with one encoder (or none: sparse only) and, in front of a transformer, optionally a fast BNE/DAN first stage.
At most one index per dictionary is active, enforced by the
database; activation is one atomic switch (webapp.training.services.activate_index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from webapp.core.public import PublicMessageField
from webapp.jobs import lifecycle
from webapp.jobs.models import Job
from webapp.training.methods import RegisteredMethods
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


class WordVectorModel(models.Model):
    """Word vectors (fastText trained by a run, or an admin's uploaded ``.vec``/``.bin``) that BNE and DAN runs
    start from: a folder saved by :class:`linker.encoders.wordvec.WordVectors` under ``ARTIFACT_ROOT``.

    Its own table, not an :class:`EncoderModel` with a marker: word vectors encode words, not names, so no
    index can be built from them, and every place that takes an encoder (index builds, ``base_encoder``,
    ``IndexVersion.encoder``) would otherwise have to refuse them one by one. A row exists only for a
    complete folder: an upload is checked (``WordVectors.from_file``) before its row is written, a run's
    vectors are recorded when the run succeeds.
    """

    class Source(models.TextChoices):
        TRAINED = "trained", "Trained by a run (fastText)"
        UPLOADED = "uploaded", "Uploaded file"

    name = models.SlugField(max_length=120, unique=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    file_name = models.CharField(max_length=255, blank=True, help_text="The uploaded file's name.")
    words = models.PositiveIntegerField(default=0)
    dim = models.PositiveIntegerField(default=0)
    subwords = models.BooleanField(default=False, help_text="fastText n-grams: unseen words get vectors too.")
    dictionary = models.ForeignKey(
        Dictionary, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The dictionary whose names name_coverage was measured on.",
    )
    name_coverage = models.FloatField(null=True, blank=True, help_text="Share of the dictionary's name tokens in the vocabulary.")
    artifact_path = models.CharField(max_length=1000)
    config = models.JSONField(default=dict, blank=True, help_text="fastText settings or the file's format.")
    run = models.OneToOneField(
        "TrainingRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="trained_word_vectors",
        help_text="The fastText run that made them (none for an upload).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    @property
    def source_label(self) -> str:
        if self.source == self.Source.UPLOADED:
            return f"uploaded {self.file_name}" if self.file_name else "uploaded"
        return f"trained by run #{self.run_id}" if self.run_id else "trained by a run (deleted)"


def _job_link() -> models.OneToOneField:
    """A kind's link to its job (multi-table inheritance): its ``id`` column is its job's id."""
    return models.OneToOneField(Job, on_delete=models.CASCADE, parent_link=True, primary_key=True, db_column="id")


class WordVectorUpload(Job):
    """A large uploaded word-vector file checked by a worker (small ones are checked in the request).

    The job, not the word vectors: it says what happened to the file. On success it points at the
    :class:`WordVectorModel` made; on failure it keeps the error naming the file and the fault, and the
    stored file is removed (no model row, no folder).
    """

    job_kind = "word-vectors"

    job_ptr = _job_link()
    name = models.SlugField(max_length=120, help_text="The name the word vectors get.")
    file_name = models.CharField(max_length=255)
    path = models.CharField(max_length=1000, help_text="The stored upload, removed once checked.")
    size = models.PositiveBigIntegerField(default=0)
    expected_dim = models.PositiveIntegerField(null=True, blank=True)
    dictionary = models.ForeignKey(Dictionary, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    word_vectors = models.ForeignKey(WordVectorModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"word-vector upload {self.file_name} ({self.state})"


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


LOG_TAIL_LINES = 40
CANCELLED_BY_ADMIN = "cancelled by an admin"


def append_log(log: str, line: str) -> str:
    """``log`` with a time-stamped ``line`` added, keeping the last :data:`LOG_TAIL_LINES` lines."""
    lines = (log.splitlines() if log else []) + [f"{timezone.now():%H:%M:%S} {line}"]
    return "\n".join(lines[-LOG_TAIL_LINES:])


class TrainingRun(Job):
    """One training job run by a worker on the gpu queue: its inputs, live progress and results.

    A job (webapp.jobs): the task takes this row's id. Its life: ``queued`` -> :meth:`start` -> ``running`` ->
    :meth:`finish` (``succeeded``), :meth:`fail` or :meth:`stop_cancelled`; :meth:`cancel` is an admin's request.
    It beats a heartbeat (``heartbeat_at``) while alive rather than holding a lease, so that hours of GPU work
    outlive a database restart; a run whose worker was killed stops beating and is failed by the one job sweep
    (webapp.jobs.sweep) with :meth:`lost_reason`. The training data are recorded as :class:`TrainingExample` rows (the snapshot).
    """

    class Method(models.TextChoices, metaclass=RegisteredMethods):
        """The built-in methods by name; the choices are linker.recipe's table (webapp.training.methods)."""

        BIOSYN = "biosyn", "BioSyn (synonym marginalisation)"
        LATTE = "latte", "LATTE (re-ranker with latent and known types)"
        HIPRBERT = "hiprbert", "Hierarchy pre-training (HiPrBERT)"
        FASTTEXT = "fasttext", "Word vectors (fastText)"
        BNE = "bne", "BNE (name encoder over word vectors)"
        DAN = "dan", "DAN (name encoder over word vectors)"
        # Not a linker: a mention detector (webapp.training.detectors), recorded as a DetectorVersion.
        TAGGER = "tagger", "Mention tagger (BIO token classification)"

    # Methods that start from word vectors, and the ones whose output is not a linker (no index version).
    WORD_VECTOR_ENCODERS = (Method.BNE, Method.DAN)

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Started by an admin"
        DECISIONS = "decisions", "Retrain policy: new decisions"
        NIGHTLY = "nightly", "Retrain policy: nightly"

    job_kind = "training"

    job_ptr = _job_link()
    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="training_runs")
    collections = models.ManyToManyField(
        "corpus.Collection", blank=True, related_name="training_runs", help_text="Gold training data."
    )
    eval_collection = models.ForeignKey(
        "corpus.Collection", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs",
        help_text="Gold collection the trained model is evaluated on (Acc@1, Acc@5; a tagger: span precision, recall, F1).",
    )
    method = models.CharField(max_length=32, choices=Method.choices, default=Method.BIOSYN)
    base_model = models.CharField(max_length=500, blank=True, help_text="Local Hugging Face folder; empty: the default base model.")
    params = models.JSONField(default=dict, blank=True, help_text="Hyperparameters (the method's defaults filled in).")
    phase = models.CharField(max_length=32, blank=True, help_text="snapshot, synonym-pretrain, biosyn, candidates, latte, latent-types, hierarchy-pretrain, word-vectors, bne, dan, tagger, index, evaluate")
    epoch = models.PositiveIntegerField(default=0)
    epochs = models.PositiveIntegerField(default=0)
    step = models.PositiveIntegerField(default=0)
    total_steps = models.PositiveIntegerField(default=0)
    fraction = models.FloatField(default=0.0, help_text="0..1 of the current phase.")
    loss_history = models.JSONField(default=list, blank=True, help_text="[{phase, step, loss}, ...]")
    metrics = models.JSONField(default=dict, blank=True)
    log_tail = models.TextField(blank=True)
    device = models.CharField(max_length=32, blank=True)
    snapshot_at = models.DateTimeField(null=True, blank=True, help_text="Curator decisions made up to this time are training data.")
    encoder = models.ForeignKey(EncoderModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="training_runs")
    index_version = models.ForeignKey(IndexVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="training_runs")
    word_vectors = models.ForeignKey(
        WordVectorModel, null=True, blank=True, on_delete=models.PROTECT, related_name="training_runs",
        help_text="BNE/DAN: the word vectors it starts from; empty: fastText trained on the run's texts first.",
    )
    # The learning loop (webapp.training.loop): who queued the run, and what the promotion gate said of it.
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    gate_result = models.JSONField(
        default=dict, blank=True,
        help_text="The promotion gate's verdict on this run's index: {passed, reasons, evaluation, promoted}.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.method}, {self.state})"

    # --- the life of a run: every change of state goes through these ------------------------------------

    def start(self, worker: str, device: str, task_id: str = "") -> bool:
        """``queued`` -> ``running`` under a row lock. True for the one caller that started it; a re-delivered
        or duplicate task gets False (``self.state`` then says what it found)."""
        with transaction.atomic():
            started = lifecycle.start(self.pk, worker=worker, task_id=task_id, heartbeat=True)
            if started:
                TrainingRun.objects.filter(pk=self.pk).update(device=device, phase="snapshot")
        self.refresh_from_db()
        return started

    def finish(self, encoder: EncoderModel | None, index_version: IndexVersion | None, metrics: dict[str, Any],
               made: str = "") -> None:
        """``running`` -> ``succeeded`` with the trained encoder and its index (none for a base encoder, which
        is not a linker; neither for word vectors, whose row points at the run: say so in ``made``). The
        caller holds the row lock (``select_for_update`` in its transaction) and created the rows in that
        same transaction."""
        if self.state != self.State.RUNNING:
            raise ValueError(f"training run {self.pk} is {self.state}, not running")
        self.state = self.State.SUCCEEDED
        self.finished_at = timezone.now()
        self.encoder, self.index_version = encoder, index_version
        self.metrics = metrics
        self.fraction, self.phase = 1.0, "done"
        if not made:
            made = f"index {index_version.pk}" if index_version is not None else "a base encoder, no index"
            made = f"encoder {encoder.name}, {made}" if encoder is not None else made
        self.log_tail = append_log(self.log_tail, f"succeeded: {made}")
        self.save()

    def fail(self, reason: str, log_tail: str | None = None) -> bool:
        """An unfinished run ends ``failed`` with the reason (added to ``log_tail``, the worker's log when it
        passes one, else the row's); False when it had ended already."""
        return self._end(self.State.FAILED, reason, log_tail)

    def stop_cancelled(self, log_tail: str | None = None) -> bool:
        """``running`` -> ``cancelled``: the worker stopped at an admin's request."""
        return self._end(self.State.CANCELLED, CANCELLED_BY_ADMIN, log_tail)

    def _end(self, state: str, reason: str, log_tail: str | None) -> bool:
        # One conditional UPDATE: a run failed by the sweep (or cancelled) meanwhile keeps its first ending.
        tail = log_tail if log_tail is not None else append_log(self.log_tail, reason)
        with transaction.atomic():
            end = lifecycle.stop_cancelled if state == self.State.CANCELLED else lifecycle.fail
            ended = end(self.pk, reason)
            if ended:
                TrainingRun.objects.filter(pk=self.pk).update(log_tail=tail)
        if ended:
            self.refresh_from_db(fields=["state", "error", "finished_at", "log_tail"])
        return ended

    def cancel(self) -> bool:
        """An admin's request, under a row lock: a queued run is cancelled at once (True: revoke its task);
        a running one is asked to stop at its next progress report; a finished one stays as it is."""
        revoke = lifecycle.request_cancel(self.pk) == "cancelled"
        self.refresh_from_db()
        return revoke

    def lost_reason(self) -> str:
        """Why a stale run failed: where it was and on which worker."""
        seen = self.heartbeat_at.isoformat(timespec="seconds") if self.heartbeat_at else "never"
        return (f"worker lost (killed or crashed) at {self.phase or 'start'} step {self.step}/{self.total_steps}, "
                f"epoch {self.epoch}/{self.epochs}, on {self.worker or 'an unknown host'}; last heartbeat {seen}")


class TrainingExample(models.Model):
    """One (mention, concept) pair of a run's training snapshot, deduplicated on (normalised text, concept)."""

    class Source(models.TextChoices):
        GOLD = "gold", "Gold link"
        CURATOR = "curator", "Curator decision"

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="examples")
    text = models.TextField(help_text="Normalised mention text (one composite part), as trained on.")
    mention_text = models.TextField(blank=True, help_text="The mention as written.")
    concept_id = models.CharField(max_length=200)
    negative = models.BooleanField(default=False, help_text="A hard negative: a concept a curator rejected for this text.")
    source = models.CharField(max_length=16, choices=Source.choices)
    decision = models.ForeignKey(
        "curation.Decision", null=True, blank=True, on_delete=models.SET_NULL, related_name="training_examples"
    )

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "text", "concept_id", "negative"], name="one_example_per_run_text_concept"),
        ]

    def __str__(self) -> str:
        return f"{'NOT ' if self.negative else ''}{self.text!r} -> {self.concept_id}"


class Evaluation(Job):
    """Acc@1/Acc@5 of an index version (its encoder and names) on a gold collection, computed by a worker (a job)."""

    job_kind = "evaluation"

    job_ptr = _job_link()
    index_version = models.ForeignKey(IndexVersion, on_delete=models.CASCADE, related_name="evaluations")
    collection = models.ForeignKey("corpus.Collection", on_delete=models.CASCADE, related_name="evaluations")
    metrics = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of index {self.index_version_id} on {self.collection_id} ({self.state})"

    @property
    def acc1(self) -> float | None:
        return self.metrics.get("acc@1")

    @property
    def acc5(self) -> float | None:
        return self.metrics.get("acc@5")


class MentionOutcome(models.Model):
    """One gold mention's result in an :class:`Evaluation`: what the index put first and where gold came.

    Kept per mention so two evaluations on the same collection can be set side by side mention by mention
    (the comparison page's deltas, McNemar's test, the list of mentions whose top-1 changed). ``gold`` and
    ``predicted`` hold concept ids per composite part joined by ``|`` (``+`` within a part naming several).
    """

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="outcomes")
    mention = models.ForeignKey("corpus.Mention", on_delete=models.CASCADE, related_name="+")
    mention_type = models.CharField(max_length=64, blank=True)
    gold = models.CharField(max_length=500)
    predicted = models.CharField(max_length=500, blank=True, help_text="Top-1 concept id per part.")
    rank = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Rank at which every part is right (1 = top-1 correct); empty: not in the top k.",
    )

    class Meta:
        ordering = ["evaluation", "mention"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "mention"], name="one_outcome_per_evaluation_mention")]

    def __str__(self) -> str:
        return f"evaluation {self.evaluation_id} mention {self.mention_id}: rank {self.rank}"

    @property
    def correct(self) -> bool:
        return self.rank == 1


class PromotionGate(models.Model):
    """What a trained index must reach on a frozen gold collection before it may serve its dictionary.

    Measured against the active index on the same collection and mentions: overall Acc@1 may not drop by
    more than ``max_acc1_drop`` and, for every mention type with at least ``min_type_mentions`` mentions, the
    type's Acc@1 by more than ``max_type_drop`` (both fractions: 0.01 is one point). ``auto_promote``: a run
    that passes is promoted without an admin (webapp.training.loop).
    """

    dictionary = models.OneToOneField(Dictionary, on_delete=models.CASCADE, related_name="promotion_gate")
    collection = models.ForeignKey(
        "corpus.Collection", on_delete=models.PROTECT, related_name="+",
        help_text="The frozen gold collection every candidate is measured on (never trained on).",
    )
    max_acc1_drop = models.FloatField(default=0.0, help_text="Largest drop of Acc@1 allowed (0.01 = one point).")
    max_type_drop = models.FloatField(null=True, blank=True, help_text="Largest drop of any mention type's Acc@1; empty: not checked.")
    min_type_mentions = models.PositiveIntegerField(default=20, help_text="Types with fewer gold mentions are not gated (too noisy).")
    auto_promote = models.BooleanField(default=False, help_text="Promote a run that passes without waiting for an admin.")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"promotion gate of {self.dictionary.slug}"


class RetrainPolicy(models.Model):
    """When a dictionary's linker is retrained without an admin: every ``every_decisions`` new curator decisions,
    and/or nightly (Celery beat). The run is queued with ``method`` and ``params`` on ``collections``, evaluated
    on the promotion gate's collection and promoted through the gate.

    ``decisions_seen`` is the count of the dictionary's decisions when the last run was queued: the trigger
    compares the count now with it under a row lock, so concurrent decisions queue one run per threshold.
    """

    dictionary = models.OneToOneField(Dictionary, on_delete=models.CASCADE, related_name="retrain_policy")
    enabled = models.BooleanField(default=True)
    every_decisions = models.PositiveIntegerField(null=True, blank=True, help_text="Queue a run every N new decisions; empty: never by count.")
    nightly = models.BooleanField(default=False, help_text="Queue a run every night when there were new decisions.")
    method = models.CharField(max_length=32, choices=TrainingRun.Method.choices, default=TrainingRun.Method.BIOSYN)
    params = models.JSONField(default=dict, blank=True)
    collections = models.ManyToManyField("corpus.Collection", blank=True, related_name="+", help_text="Gold training data.")
    decisions_seen = models.PositiveIntegerField(default=0, help_text="The dictionary's decision count when the last run was queued.")
    last_triggered_at = models.DateTimeField(null=True, blank=True)
    last_run = models.ForeignKey(TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_error = PublicMessageField(blank=True, help_text="Why the last trigger queued no run (empty: it did).")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retrain policies"

    def __str__(self) -> str:
        return f"retrain policy of {self.dictionary.slug}"


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
    run = models.OneToOneField(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="detector_version",
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
