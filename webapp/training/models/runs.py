"""Training runs: one training job's inputs, live progress and results, and the examples it trained on."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction
from django.utils import timezone

from webapp.jobs import lifecycle
from webapp.jobs.models import Job
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.methods import RegisteredMethods, method_choices
from webapp.training.models.job_link import job_link
from webapp.training.models.word_vectors import WordVectorModel
from webapp.vocab.models import Dictionary

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

    job_ptr = job_link()
    dictionary = models.ForeignKey(Dictionary, on_delete=models.CASCADE, related_name="training_runs")
    collections = models.ManyToManyField(
        "corpus.Collection", blank=True, related_name="training_runs", help_text="Gold training data."
    )
    eval_collection = models.ForeignKey(
        "corpus.Collection", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs",
        help_text="Gold collection the trained model is evaluated on (Acc@1, Acc@5; a tagger: span precision, recall, F1).",
    )
    method = models.CharField(max_length=32, choices=method_choices, default=Method.BIOSYN)  # the registered ones
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
