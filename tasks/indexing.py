"""Index builds on the gpu queue (CPU where there is no GPU)."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(name="tasks.indexing.build_index_task", acks_late=True, reject_on_worker_lost=True, **RETRY_OPTIONS)
def build_index_task(index_id: int, activate: bool = False) -> str:
    from webapp.training.models import IndexVersion
    from webapp.training.services import build_index, promote_index

    index = IndexVersion.objects.select_related("dictionary", "dictionary_version", "encoder", "first_stage").get(pk=index_id)
    if index.state == IndexVersion.State.BUILDING:
        index = build_index(index)
    if activate and index.state == IndexVersion.State.READY:
        index = promote_index(index.pk)
    return index.state
