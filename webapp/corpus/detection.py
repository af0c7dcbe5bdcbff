"""Which documents wait for mention detection, and how they are queued for it.

A document imported without a single mention (plain text, a BioC/brat/JSONL file without annotations, a document
posted to the API or pasted on the Imports page) is written ``queued`` by the one document writer
(:mod:`webapp.corpus.writer`), unless its collection's detection is off; once the import commits,
:func:`queue_detection` sends its id, in batches, to the worker task ``tasks.detection.detect_mentions``, which
runs the collection's detectors and writes their mentions (:mod:`webapp.curation.services.detection`).

Each batch is a job (webapp.jobs, kind ``detection``); an import's many batches are the chunks of one parent job,
so the Jobs page shows "detection of 12,000 documents: 31 of 240 chunks done". A batch whose worker died is failed by
the job sweep, and its documents with it (:func:`fail_lost_batch`: "Detect again" queues them anew).

The broker being down does not undo an import that committed: the documents it could not queue are failed with
the reason, and stay curatable by hand (an admin's "Detect again" queues them once the broker is back).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.db.models import Q
from django.urls import reverse

from webapp.celery import INTERACTIVE_QUEUE
from webapp.core.queue import QueueUnavailable, job_task_id, send_now
from webapp.corpus.models import Collection, Document
from webapp.jobs import lifecycle
from webapp.jobs.kinds import WORKER_LOST, JobKind, register
from webapp.jobs.models import Job

logger = logging.getLogger(__name__)

__all__ = ["DETECT_TASK", "BATCH_DOCUMENTS", "NO_INDEX", "queue_detection", "requeue_after_activation", "wants_detection",
           "register_kind"]

DETECT_TASK = "tasks.detection.detect_mentions"
DETECTION = "detection"  # the job kind
BATCH_DOCUMENTS = 50  # documents per task: a re-delivered task redoes little, a long import still makes few messages
# The reason a document fails when its dictionary has no index to match against; an activation queues such
# documents again (:func:`requeue_after_activation`) by this prefix.
NO_INDEX_PREFIX = "no active index for dictionary"
NO_INDEX = NO_INDEX_PREFIX + " {dictionary}: build one on the Models page"

State = Document.DetectionState


def wants_detection(collection: Collection) -> bool:
    return collection.detection != Collection.Detection.OFF


def queue_detection(document_ids: Iterable[int]) -> None:
    """Send the documents (already ``queued``) to the detection task once the current transaction commits (at
    once outside one). Never raises for the broker: what could not be sent is failed with the reason."""
    ids = sorted(set(document_ids))
    if not ids:
        return
    batches = [ids[i : i + BATCH_DOCUMENTS] for i in range(0, len(ids), BATCH_DOCUMENTS)]
    # One batch (a pasted text, a few posted documents): someone waits on it, so the interactive queue; an import's
    # many batches stay on the default queue, where they do not hold up everyone's short work.
    queue = INTERACTIVE_QUEUE if len(batches) == 1 else None

    def publish() -> None:
        jobs = _batch_jobs(batches)
        for at, (job, batch) in enumerate(zip(jobs, batches, strict=True)):
            try:
                send_now(DETECT_TASK, batch, job.pk, queue=queue, task_id=job_task_id(job))
            except QueueUnavailable as exc:
                # One failure is enough to know: the rest would wait as long for the same answer.
                unsent = [pk for b in batches[at:] for pk in b]
                _fail_unsent(unsent, exc)
                for left in jobs[at:]:
                    lifecycle.fail(left.pk, f"not queued for mention detection: {exc}")
                return

    transaction.on_commit(publish)


def _batch_jobs(batches: list[list[int]]) -> list[Job]:
    """One job per batch; several are the chunks of one parent job (its progress counts documents)."""
    collection = Document.objects.filter(pk=batches[0][0]).values_list("collection__slug", flat=True).first() or ""
    parent = None
    if len(batches) > 1:
        parent = Job.objects.create(kind=DETECTION, progress_total=sum(map(len, batches)),
                                    arguments={"collection": collection, "chunks": len(batches)})
    return [Job.objects.create(kind=DETECTION, parent=parent, progress_total=len(batch),
                               arguments={"collection": collection, "documents": batch}) for batch in batches]


def _fail_unsent(ids: Sequence[int], exc: QueueUnavailable) -> None:
    logger.error("%d documents could not be queued for mention detection: %s", len(ids), exc)
    Document.objects.filter(pk__in=ids, detection_state=State.QUEUED).update(
        detection_state=State.FAILED, detection_error=f"not queued for mention detection: {exc}"
    )


def mark_queued(documents: Q | Sequence[int]) -> list[int]:
    """Set the documents ``queued`` (their last error cleared) and queue them; returns their ids."""
    query = Document.objects.filter(documents if isinstance(documents, Q) else Q(pk__in=list(documents)))
    ids = list(query.values_list("pk", flat=True))
    Document.objects.filter(pk__in=ids).update(detection_state=State.QUEUED, detection_error="")
    queue_detection(ids)
    return ids


def requeue_after_activation(dictionary_id: int) -> list[int]:
    """Queue again the documents of the dictionary's collections that failed for want of an active index (called
    when an index of it is activated); returns their ids."""
    failed = Q(
        collection__dictionary_id=dictionary_id,
        detection_state=State.FAILED,
        detection_error__startswith=NO_INDEX_PREFIX,
    ) & ~Q(collection__detection=Collection.Detection.OFF)
    return mark_queued(failed)


# --- the detection kind of job ------------------------------------------------------------------------------------


def fail_lost_batch(job: Job, reason: str) -> bool:
    """A batch whose worker died: the job fails, and so do its documents not yet detected (the reason says how to
    detect them again)."""
    ids = job.arguments.get("documents") or []
    Document.objects.filter(pk__in=ids, detection_state__in=(State.QUEUED, State.RUNNING)).update(
        detection_state=State.FAILED, detection_error=f"{reason}; use Detect again")
    return lifecycle.fail(job.pk, reason)


def _subject(job: Job) -> str:
    collection = job.arguments.get("collection", "")
    if "documents" in job.arguments:
        count = len(job.arguments["documents"])
        return f"{count} document{'s' if count != 1 else ''} of {collection}"
    return f"{job.progress_total or 0:,} documents of {collection} in {job.arguments.get('chunks', 0)} chunks"


def _url(job: Job) -> str:
    collection = job.arguments.get("collection", "")
    return reverse("corpus:detail", args=[collection]) if collection else ""


def register_kind() -> None:
    register(JobKind(
        name=DETECTION, label="Mention detection", model=lambda: Job, task=DETECT_TASK,
        args=lambda job: (job.arguments.get("documents") or [], job.pk), subject=_subject, url=_url,
        lost_reason=lambda job: f"{WORKER_LOST} while detecting mentions", fail=fail_lost_batch,
    ))
