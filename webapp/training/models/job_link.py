"""The link of a kind of job to its :class:`~webapp.jobs.models.Job` row (multi-table inheritance)."""

from __future__ import annotations

from django.db import models

from webapp.jobs.models import Job


def job_link() -> models.OneToOneField:
    """A kind's link to its job (multi-table inheritance): its ``id`` column is its job's id."""
    return models.OneToOneField(Job, on_delete=models.CASCADE, parent_link=True, primary_key=True, db_column="id")
