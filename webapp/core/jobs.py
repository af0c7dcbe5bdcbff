"""Queue background imports: the row is created in the caller's transaction, the task after commit."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from django.db import transaction

from webapp.core.models import ImportJob


def queue_import(kind: str, path: str | Path, params: dict[str, Any], user: Any = None) -> ImportJob:
    from tasks.imports import run_import

    if kind not in ImportJob.Kind.values:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(ImportJob.Kind.values)}")
    job = ImportJob.objects.create(kind=kind, path=str(path), params=params, created_by=user)
    # on_commit: the worker must never look for a row that the web request has not committed yet.
    transaction.on_commit(partial(run_import.delay, job.pk))
    return job
