"""Word vectors: the ones BNE and DAN start from, and the job that checks a large uploaded word-vector file.

A :class:`WordVectorModel` is a folder of word vectors; a :class:`WordVectorUpload` the job that checks an upload.
The encoders themselves are what serving serves (:class:`webapp.linking.models.EncoderModel`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.jobs.models import Job
from webapp.training.models.job_link import job_link
from webapp.vocab.models import Dictionary


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


class WordVectorUpload(Job):
    """A large uploaded word-vector file checked by a worker (small ones are checked in the request).

    The job, not the word vectors: it says what happened to the file. On success it points at the
    :class:`WordVectorModel` made; on failure it keeps the error naming the file and the fault, and the
    stored file is removed (no model row, no folder).
    """

    job_kind = "word-vectors"

    job_ptr = job_link()
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
