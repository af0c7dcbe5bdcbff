"""Background jobs the workbench runs on Celery workers, recorded so their state survives the worker."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.core.public import PublicMessageField


class ImportJob(models.Model):
    """An import (dictionary or documents) run by a worker; the task takes this row's id."""

    class Kind(models.TextChoices):
        DICTIONARY = "dictionary", "Dictionary"
        DOCUMENTS = "documents", "Documents"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    path = models.CharField(max_length=1000, help_text="File on a volume the workers can read.")
    params = models.JSONField(default=dict, blank=True, help_text="Keyword arguments of the importer.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveIntegerField(default=0, help_text="Records read so far.")
    progress_total = models.PositiveIntegerField(
        null=True, blank=True, help_text="Records the file holds, as estimated before reading it; empty if unknown."
    )
    message = PublicMessageField(blank=True, help_text="The error, naming file and line, when the import failed.")
    report = models.JSONField(default=dict, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} import {self.path} ({self.state})"

    @property
    def is_active(self) -> bool:
        return self.state in (self.State.QUEUED, self.State.RUNNING)

    @property
    def target(self) -> str:
        """The slug of the collection or dictionary the file goes into."""
        return str(self.params.get("collection_slug") or self.params.get("dictionary_slug") or "")

    @property
    def summary(self) -> str:
        """The importer's one-line account of a finished import."""
        return str(self.report.get("message", ""))

    @property
    def warnings(self) -> list[str]:
        """What a finished import changed or left out of its file (a repeated PMID stored as ``ID#2``, a repeated
        annotation left out, ...), as the importer said it; not the summary again (an unchanged release says "nothing
        imported" as both)."""
        summary = self.summary
        return [str(w) for w in self.report.get("warnings") or [] if str(w) != summary]

    @property
    def percent(self) -> int | None:
        """Progress in percent where the total is known (an estimate, so capped at 100)."""
        if not self.progress_total:
            return None
        return min(100, round(100 * self.progress / self.progress_total))
