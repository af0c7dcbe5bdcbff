"""An import job: the file a worker reads into a dictionary or a collection (progress counts its records)."""

from __future__ import annotations

from django.db import models

from webapp.jobs.models import Job


class ImportJob(Job):
    """An import (dictionary or documents) run by a worker: a job (webapp.jobs) with the file it reads and the
    importer's report; the task takes this row's id."""

    class Kind(models.TextChoices):
        DICTIONARY = "dictionary", "Dictionary"
        DOCUMENTS = "documents", "Documents"

    job_kind = "import"

    import_kind = models.CharField(max_length=16, choices=Kind.choices, help_text="What the file holds.")
    path = models.CharField(max_length=1000, help_text="File on a volume the workers can read.")
    params = models.JSONField(default=dict, blank=True, help_text="Keyword arguments of the importer.")
    report = models.JSONField(default=dict, blank=True, help_text="The importer's report of a finished import.")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.import_kind} import {self.path} ({self.state})"

    @property
    def message(self) -> str:
        """What the Imports page says of it: why it failed, or the latest note (queued again because ...)."""
        return self.error or self.note

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
