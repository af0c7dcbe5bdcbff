"""Curation tasks on the default queue: link a collection's open mentions with the active index."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(name="tasks.curation.suggest_links_task", acks_late=True, reject_on_worker_lost=True, **RETRY_OPTIONS)
def suggest_links_task(collection_id: int) -> int:
    """Store the top-k suggestions of every open mention of the collection; returns how many mentions changed."""
    from webapp.curation.services.suggestions import suggest_for_collection

    return suggest_for_collection(collection_id)
