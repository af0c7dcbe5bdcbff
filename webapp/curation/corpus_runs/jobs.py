"""A corpus run as jobs: one parent per run, a chunk job per ``chunk_size`` documents (webapp.jobs' parent/chunk
shape, the one an import's detection uses), each chunk a Celery task (``tasks.corpus_runs.run_chunk``).

The parent has no runner: :func:`webapp.jobs.lifecycle.roll_up` sums its chunks' documents, runs it while one runs
and ends it with the last. The parent records what the run used (``arguments["models"]``: the index version, its
label, the tagger) and each mention and link it wrote carries the same labels (``Mention.model_version``,
``Link.model_version``). A chunk whose worker died is not failed but queued again (``JobKind.fail`` of this kind,
called by the one sweep): chunks are idempotent (webapp.curation.corpus_runs.chunk), so redoing one doubles
nothing; after :data:`MAX_ATTEMPTS` tries it fails. Cancelling the run cancels its queued chunks and asks the
running ones to stop after their current document.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import QueueUnavailable, job_task_id, send_now, sent_to
from webapp.corpus.models import Collection, Document
from webapp.curation.corpus_runs.scope import RunScope, ScopeError, documents_of, resolve
from webapp.jobs import lifecycle
from webapp.jobs.kinds import WORKER_LOST, JobKind, register
from webapp.jobs.models import Job
from webapp.jobs.services import record_cancel

if TYPE_CHECKING:  # the detectors load serving's registry: not while the apps load
    from webapp.curation.services.detection import Detectors

logger = logging.getLogger(__name__)

CORPUS_RUN = "corpus-run"  # the job kind, of the parent and of its chunks
RUN_CHUNK_TASK = "tasks.corpus_runs.run_chunk"
CHUNK_DOCUMENTS = 200
MAX_ATTEMPTS = 3  # a chunk whose worker died this many times fails (a document that kills its worker, say)


def models_used(detectors: Detectors) -> dict[str, Any]:
    """What the run detects and links with, recorded on the parent and checked by every chunk."""
    linker, tagger = detectors.linker, detectors.tagger
    return {"index_version": linker.index_version_id if linker else None, "index": linker.label if linker else "",
            "tagger_version": tagger.detector_version_id if tagger else None, "tagger": tagger.label if tagger else "",
            "matcher": detectors.use_matcher, "detection": detectors.label}


def start_run(collection: Collection, scope: RunScope, user: Any = None, chunk_size: int = CHUNK_DOCUMENTS,
              send: bool = True) -> Job:
    """Plan the run and queue its chunks once the transaction commits (``send=False``: the caller runs them, as
    ``manage.py corpus_run --here`` does); :class:`ScopeError` (no documents, an
    unknown concept) or ``DetectionUnavailable`` (no index, no tagger: webapp.curation.services.detection) says why it cannot start."""
    from webapp.curation.services.detection import detectors_for

    if chunk_size < 1:
        raise ScopeError("the chunk size must be at least 1 document")
    detectors = detectors_for(collection)
    scope = resolve(scope, collection)
    ids = list(documents_of(collection, scope).values_list("pk", flat=True))
    if not ids:
        raise ScopeError(f"collection {collection.slug} has no document to annotate ({scope.describe()})")
    batches = [ids[i : i + chunk_size] for i in range(0, len(ids), chunk_size)]
    with transaction.atomic():
        parent = Job.objects.create(
            kind=CORPUS_RUN, progress_total=len(ids), created_by=user if getattr(user, "pk", None) else None,
            arguments={"collection": collection.slug, "chunks": len(batches), "chunk_size": chunk_size,
                       "scope": scope.as_arguments(), "models": models_used(detectors)})
        chunks = [Job.objects.create(kind=CORPUS_RUN, parent=parent, progress_total=len(batch), created_by=parent.created_by,
                                     arguments={"collection": collection.slug, "run": parent.pk, "documents": batch,
                                                "queue": sent_to()})
                  for batch in batches]
        record(actions.CORPUS_RUN_STARTED, actor=user, obj=parent, label=f"corpus run {parent.pk} of {collection.slug}",
               after={"documents": len(ids), "chunks": len(batches), "scope": scope.describe(),
                      "detection": detectors.label}, link=f"{reverse('jobs:list')}?parent={parent.pk}")
        if send:
            transaction.on_commit(lambda: _send(chunks))
    return parent


def _send(chunks: list[Job]) -> None:
    for at, chunk in enumerate(chunks):
        try:
            send_now(RUN_CHUNK_TASK, chunk.pk, task_id=job_task_id(chunk))
        except QueueUnavailable as exc:
            for left in chunks[at:]:  # the rest would wait as long for the same answer
                lifecycle.fail(left.pk, f"not queued: {exc}")
            return


def requeue_lost_chunk(chunk: Job, reason: str) -> bool:
    """The sweep found the chunk's worker gone: queue it again (its redo doubles nothing), or fail it after
    :data:`MAX_ATTEMPTS` tries or when its run is being cancelled. True when it was failed."""
    parent_cancelled = Job.objects.filter(pk=chunk.parent_id, cancel_requested=True).exists()
    if chunk.parent_id is None or parent_cancelled or chunk.attempts >= MAX_ATTEMPTS:
        why = reason if chunk.attempts < MAX_ATTEMPTS else f"{reason} ({chunk.attempts} tries)"
        Document.objects.filter(pk__in=chunk.arguments.get("documents") or [],
                                detection_state=Document.DetectionState.RUNNING).update(
            detection_state=Document.DetectionState.FAILED, detection_error=f"{why}; start a corpus run again")
        return lifecycle.fail(chunk.pk, why)
    note = f"queued again after try {chunk.attempts}: {reason}"
    if not Job.objects.filter(pk=chunk.pk, state=Job.State.RUNNING).update(state=Job.State.QUEUED, note=note[:1000]):
        return False
    logger.warning("corpus run %s: chunk %s %s", chunk.parent_id, chunk.pk, note)

    def publish() -> None:
        try:
            send_now(RUN_CHUNK_TASK, chunk.pk, task_id=job_task_id(chunk), queue=chunk.arguments.get("queue") or None,
                     same_queue=True)  # where it was first sent, whichever process's sweep found it lost
        except QueueUnavailable as exc:  # it stays queued: the sweep sends it again once the broker is back
            logger.warning("corpus run chunk %s not queued again: %s", chunk.pk, exc)

    transaction.on_commit(publish)
    return False


def cancel_run(job: Job, user: Any = None) -> None:
    """Cancel a run (its queued chunks at once, its running ones after their current document) or one chunk."""
    before = job.state
    parent_id = job.parent_id or job.pk
    if job.parent_id is None:
        Job.objects.filter(pk=job.pk).update(cancel_requested=True)
        targets = list(Job.objects.filter(parent_id=job.pk, state__in=Job.UNFINISHED_STATES).values_list("pk", flat=True))
    else:
        targets = [job.pk]
    for pk in targets:
        lifecycle.request_cancel(pk)
    lifecycle.roll_up(parent_id)
    job.refresh_from_db()
    record_cancel(job, user, before)


def _subject(job: Job) -> str:
    collection = job.arguments.get("collection", "")
    if "documents" in job.arguments:
        count = len(job.arguments["documents"])
        return f"{count} document{'s' if count != 1 else ''} of {collection}"
    scope = job.arguments.get("scope") or {}
    said = RunScope(scope.get("documents", "all"), tuple(scope.get("concepts") or ()), tuple(scope.get("roots") or ()),
                    tuple(scope.get("mention_types") or ())).describe()
    return f"{job.progress_total or 0:,} documents of {collection} in {job.arguments.get('chunks', 0)} chunks ({said})"


def _url(job: Job) -> str:
    return f"{reverse('jobs:list')}?parent={job.parent_id or job.pk}"


def register_kind() -> None:
    register(JobKind(
        name=CORPUS_RUN, label="Corpus run", model=lambda: Job, task=RUN_CHUNK_TASK, subject=_subject, url=_url,
        lost_reason=lambda job: f"{WORKER_LOST} while annotating its documents", fail=requeue_lost_chunk,
        stops_when_asked=True, cancel=cancel_run,
    ))


__all__ = ["CORPUS_RUN", "CHUNK_DOCUMENTS", "ScopeError", "cancel_run", "register_kind",
           "requeue_lost_chunk", "start_run"]
