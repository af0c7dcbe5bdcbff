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
def detect_mentions(document_ids: list[int]) -> dict[str, int]:
    """Detect, write and link the mentions of the queued documents among ``document_ids``; how many ended how."""
    from webapp.curation.services.detection import detect_documents

    return detect_documents(document_ids)
