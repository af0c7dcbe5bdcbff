"""The one job: what every kind of background work shares, its life cycle in one row.

An import, a training run, an evaluation or a word-vector upload is a :class:`Job` with a row of its own kind that
keeps what is the kind's (an import's file and report, a run's method and loss curve): Django's multi-table
inheritance, so ``TrainingRun`` *is* a job (``TrainingRun.objects.filter(state=...)`` reads this table) and every
job of every kind is one query away (``Job.objects.all()``). The life cycle:

    queued --start--> running --finish--> succeeded
       |                 |----fail-----> failed      (an error; or its worker was lost: webapp.jobs.sweep)
       '----cancel-------'--cancelled--> cancelled   (a queued job at once, a running one at its next report)

A running job proves it is alive by a lease (a PostgreSQL advisory lock its runner holds: webapp.jobs.lease) or a
heartbeat (``heartbeat_at``, for jobs that run for hours on a GPU and must outlive a database blip); the sweep fails
one that has neither. ``parent`` groups the chunks of one large job (an import's documents detected fifty at a time,
a corpus annotated chunk by chunk): the parent has no runner of its own; it runs while a chunk does and ends when
the last one has (webapp.jobs.lifecycle.roll_up).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models

from webapp.core.public import PublicMessageField


class Job(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    TERMINAL_STATES = (State.SUCCEEDED, State.FAILED, State.CANCELLED)
    UNFINISHED_STATES = (State.QUEUED, State.RUNNING)
    job_kind: ClassVar[str] = ""  # a kind's model names its kind: a new row of it takes that kind

    kind = models.CharField(max_length=32, db_index=True, help_text="What the job does (webapp.jobs.kinds).")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveBigIntegerField(default=0, help_text="Units done (records, names, steps).")
    progress_total = models.PositiveBigIntegerField(null=True, blank=True, help_text="Units in all; empty if unknown.")
    progress_note = models.CharField(max_length=200, blank=True, help_text="Where it is, in words: 'epoch 2 of 5'.")
    error = PublicMessageField(blank=True, help_text="Why it failed, naming what was wrong.")
    note = PublicMessageField(blank=True, help_text="The latest remark other than a failure: 'queued again because …'.")
    arguments = models.JSONField(default=dict, blank=True,
                                 help_text="What a kind without a row of its own works on ({'documents': [ids]}).")
    result = models.JSONField(default=dict, blank=True, help_text="What it made, in brief ({'summary': ...}).")
    cancel_requested = models.BooleanField(default=False, help_text="Someone asked it to stop; it does at its next report.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it.")
    worker = models.CharField(max_length=200, blank=True, help_text="Host name of the worker running it.")
    task_id = models.CharField(max_length=64, blank=True, help_text="Its Celery task id.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The runner's last sign of life (heartbeat kinds).")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children",
                               help_text="The job this one is a chunk of.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["state", "heartbeat_at"], name="job_state_heartbeat"),
            models.Index(fields=["kind", "state"], name="job_kind_state"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.state})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.kind:
            self.kind = self.job_kind
        super().save(*args, **kwargs)

    @property
    def is_active(self) -> bool:
        return self.state in self.UNFINISHED_STATES

    @property
    def is_finished(self) -> bool:
        return self.state in self.TERMINAL_STATES

    @property
    def percent(self) -> int | None:
        """Progress in percent where the total is known (an estimate may overshoot: capped at 100)."""
        if not self.progress_total:
            return None
        return min(100, round(100 * self.progress / self.progress_total))

    @property
    def rate(self) -> float | None:
        """Units done per second since it started (a parent: its chunks' documents together); None before any."""
        seconds = self.running_seconds
        if not self.progress or not seconds or seconds <= 0:
            return None
        return self.progress / seconds

    @property
    def seconds_left(self) -> float | None:
        """A running job's time left at the pace it has kept so far; None without a total or a pace."""
        rate = self.rate
        if self.state != self.State.RUNNING or not self.progress_total or rate is None:
            return None
        return max(self.progress_total - self.progress, 0) / rate

    @property
    def eta(self) -> str:
        """:attr:`seconds_left` in words ("about 4 min left"); empty where it is not known."""
        return eta_label(self.seconds_left)

    @property
    def running_seconds(self) -> float | None:
        from django.utils import timezone

        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()


def eta_label(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 10:
        return "a few seconds left"
    if seconds < 90:
        return f"about {round(seconds / 5) * 5:.0f} s left"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60):.0f} min left"
    return f"about {seconds / 3600:.1f} h left"
