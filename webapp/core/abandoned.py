"""The sweep of abandoned jobs: a job whose row says ``running`` while nobody holds its lease is failed.

Imports, evaluations and word-vector uploads are run under a lease (:mod:`webapp.core.lease`), which
PostgreSQL drops the moment the runner's process dies. A running job without one lost its worker: it is failed,
with a message that says so and what to do, and an uploaded file it was reading is removed. Nothing of its work
remains: an import and a word-vector upload write in one transaction, which died with the process; an
evaluation writes its figures only at its end.

The sweep runs in the stale-run sweeper thread of every worker and launcher (every few seconds, see
:mod:`webapp.training.sweeper`), when a worker starts, and on the beat schedule, so a killed job is failed within
seconds. (Training runs, which keep a heartbeat of their own, are swept by :mod:`webapp.training.runs`.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from webapp.core.lease import leased, try_take_over
from webapp.core.models import ImportJob

logger = logging.getLogger(__name__)

WORKER_LOST = "the worker running it stopped (killed, out of memory, or its machine went down)"


@dataclass(frozen=True)
class LeasedKind:
    """One kind of job run under a lease: how to find its running rows and how to fail one (in the caller's
    transaction, the row locked)."""

    lease: str  # the lease's kind (webapp.core.lease.NAMESPACES)
    model: Callable[[], type[models.Model]]  # imported late: the training app's models load after core's
    fail: Callable[[Any], str]  # fails the row, returns the reason written
    after_commit: Callable[[Any], None] = lambda row: None  # cleanup once the failure is committed


def _fail_import(job: Any) -> str:
    total = f" of {job.progress_total:,}" if job.progress_total else ""
    where = f"after {job.progress:,}{total} records" if job.progress else "before it had read a record"
    reason = (f"{WORKER_LOST} {where}; nothing of this import was written (an import is one transaction). "
              "Import the file again.")
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJob.State.FAILED, message=reason, finished_at=timezone.now())
    return reason


def _import_ended(job: Any) -> None:
    from webapp.core.jobs import import_ended

    import_ended(job.pk)


def _evaluation() -> type[models.Model]:
    from webapp.training.models import Evaluation

    return Evaluation


def _fail_evaluation(evaluation: Any) -> str:
    reason = f"{WORKER_LOST}; no figures were recorded. Evaluate again."
    _evaluation().objects.filter(pk=evaluation.pk).update(state="failed", error=reason, finished_at=timezone.now())
    return reason


def _word_vector_upload() -> type[models.Model]:
    from webapp.training.models import WordVectorUpload

    return WordVectorUpload


def _fail_word_vectors(upload: Any) -> str:
    reason = f"{upload.file_name}: {WORKER_LOST} while checking the file; no word vectors were kept. Upload it again."
    _word_vector_upload().objects.filter(pk=upload.pk).update(state="failed", error=reason, finished_at=timezone.now())
    return reason


def _discard_word_vectors(upload: Any) -> None:
    from webapp.core.uploads import discard_upload

    discard_upload(upload.path)


KINDS: tuple[LeasedKind, ...] = (
    LeasedKind("import", lambda: ImportJob, _fail_import, _import_ended),
    LeasedKind("evaluation", _evaluation, _fail_evaluation),
    LeasedKind("word-vector upload", _word_vector_upload, _fail_word_vectors, _discard_word_vectors),
)


def fail_abandoned_jobs() -> list[str]:
    """Fail every running job whose lease nobody holds; one line per job failed ("import 7 failed: ...")."""
    done: list[str] = []
    for kind in KINDS:
        model = kind.model()
        running = list(model.objects.filter(state="running").values_list("pk", flat=True))
        if not running:
            continue
        for pk in set(running) - leased(kind.lease, running):
            line = _fail_one(kind, model, pk)
            if line:
                logger.warning("abandoned jobs: %s", line)
                done.append(line)
    return done


def _fail_one(kind: LeasedKind, model: type[models.Model], pk: int) -> str:
    with transaction.atomic():
        # The lease first, for this transaction: a runner taking the job up now cannot start it meanwhile (it
        # finds the lease taken and leaves the job), and one that took it since the look above is seen here.
        if not try_take_over(kind.lease, pk):
            return ""
        row = model.objects.select_for_update(skip_locked=True).filter(pk=pk, state="running").first()
        if row is None:
            return ""  # ended meanwhile, or being swept by another process
        reason = kind.fail(row)
    kind.after_commit(row)
    return f"{kind.lease} {pk} failed: {reason}"
