"""Mention detection on the default queue: the documents an import wrote without mentions, in batches of ids."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(
    name="tasks.detection.detect_mentions",
    acks_late=True,
    reject_on_worker_lost=True,
    **RETRY_OPTIONS,  # a database restart: each document's write rolled back whole, and a retry claims it again
)
def detect_mentions(document_ids: list[int], job_id: int | None = None) -> dict[str, int]:
    """Detect, write and link the mentions of the queued documents among ``document_ids`` (the batch job
    ``job_id``: a message sent before batches were jobs has none); how many ended how."""
    from webapp.curation.services.detection import detect_batch, detect_documents

    if job_id is None:
        return detect_documents(document_ids)
    return detect_batch(job_id, document_ids)
