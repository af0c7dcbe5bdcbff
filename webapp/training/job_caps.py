"""How much long work one person (and one dictionary) may have waiting or running at once.

Training runs and index builds take a worker of the ``gpu`` queue for minutes to hours each, one after another: an
admin's script once queued 30 runs and 32 builds in 12 minutes, and everyone else's work waited behind them. A run or
a build someone asks for (from a page or the API) is refused with :class:`JobCapReached` when its owner already has
the settings' number queued or running (``MAX_QUEUED_TRAINING_RUNS_PER_USER``, ``MAX_QUEUED_INDEX_BUILDS_PER_USER``),
or its dictionary has ``MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY`` builds under way. The workbench's own work (a
retrain policy's nightly run, a new release's carried-over build, a command) has no user and is not capped.

The count and the new row are one step: a transaction-scoped advisory lock per user (and per dictionary) makes two
requests at once take turns, so that both cannot pass a count that admits one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from webapp.linking.models import IndexVersion
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.vocab.models import Dictionary

# Advisory lock namespaces (two-key locks; webapp.jobs.lease uses another).
_USER_RUNS, _USER_BUILDS, _DICTIONARY_BUILDS = 0x4A435255, 0x4A434255, 0x4A434244  # "JCRU", "JCBU", "JCBD"


class JobCapReached(RunError):
    """Too much of this kind of job is queued or running already; the message names the cap and its setting."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def check_training_run_cap(user: Any) -> None:
    """Refuse a new training run of ``user`` who has ``MAX_QUEUED_TRAINING_RUNS_PER_USER`` queued or running. Call it
    inside the transaction that creates the run."""
    if not getattr(user, "pk", None):
        return
    _lock(_USER_RUNS, user.pk)
    cap = settings.MAX_QUEUED_TRAINING_RUNS_PER_USER
    count = TrainingRun.objects.filter(created_by_id=user.pk, state__in=TrainingRun.UNFINISHED_STATES).count()
    if count >= cap:
        raise JobCapReached(
            f"{user.get_username()} has {_jobs(count, 'training run')} queued or running, the most one user may have "
            f"(MAX_QUEUED_TRAINING_RUNS_PER_USER={cap}): wait for one to end, or cancel one on the training runs page",
            "MAX_QUEUED_TRAINING_RUNS_PER_USER")


def check_index_build_cap(user: Any, dictionary: Dictionary) -> None:
    """Refuse a new index build that ``user`` asks for when they have ``MAX_QUEUED_INDEX_BUILDS_PER_USER`` building, or
    ``dictionary`` has ``MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY``. Call it inside the transaction that creates the
    index version."""
    if not getattr(user, "pk", None):
        return
    building = IndexVersion.objects.filter(state=IndexVersion.State.BUILDING)
    _lock(_USER_BUILDS, user.pk)
    cap = settings.MAX_QUEUED_INDEX_BUILDS_PER_USER
    count = building.filter(created_by_id=user.pk).count()
    if count >= cap:
        raise JobCapReached(
            f"{user.get_username()} has {_jobs(count, 'index build')} queued or running, the most one user may have "
            f"(MAX_QUEUED_INDEX_BUILDS_PER_USER={cap}): wait for one to end, or cancel one on the models page",
            "MAX_QUEUED_INDEX_BUILDS_PER_USER")
    _lock(_DICTIONARY_BUILDS, dictionary.pk)
    cap = settings.MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY
    count = building.filter(dictionary_id=dictionary.pk).count()
    if count >= cap:
        raise JobCapReached(
            f"dictionary {dictionary.slug} has {_jobs(count, 'index build')} queued or running, the most one dictionary "
            f"may have (MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY={cap}): wait for one to end, or cancel one on the "
            "models page", "MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY")


def _jobs(count: int, kind: str) -> str:
    return f"{count} {kind}{'' if count == 1 else 's'}"


def _lock(namespace: int, key: int) -> None:
    """Hold an advisory lock until the current transaction ends (its caller's: the one that creates the job)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s::int, %s::int)", [namespace, key & 0x7FFFFFFF])
