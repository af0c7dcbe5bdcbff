"""Index builds on the gpu queue (CPU where there is no GPU)."""

from __future__ import annotations

import logging

from celery import shared_task

from tasks import RETRY_OPTIONS

logger = logging.getLogger(__name__)


@shared_task(name="tasks.indexing.build_index_task", acks_late=True, reject_on_worker_lost=True, **RETRY_OPTIONS)
def build_index_task(index_id: int, activate: bool = False) -> str:
    """Build an index version (its progress on its row), then, when asked (``activate``, or the row's
    ``activate_when_built``: a build queued again by the sweep keeps it), activate it and re-link the open mentions
    of its dictionary's collections. A build cancelled, failed, or whose cancel came too late to stop it is not
    activated."""
    from webapp.linking.models import IndexVersion
    from webapp.training.services import build_index, promote_index

    index = IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder", "first_stage").get(pk=index_id)
    if index.state == IndexVersion.State.BUILDING:
        index = build_index(index, progress=lambda message: logger.info("index %s: %s", index_id, message))
    if (activate or index.activate_when_built) and index.state == IndexVersion.State.READY and not index.cancel_requested:
        index = promote_index(index.pk)
    return index.state
