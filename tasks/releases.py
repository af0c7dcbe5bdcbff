"""After a new dictionary release is imported: carry curator synonyms over, then queue an index for it."""

from __future__ import annotations

import logging

from celery import shared_task

from tasks import RETRY_OPTIONS, TRANSIENT_ERRORS

logger = logging.getLogger(__name__)


@shared_task(name="tasks.releases.carry_over_task", acks_late=True, reject_on_worker_lost=True, **RETRY_OPTIONS)
def carry_over_task(version_id: int) -> str:
    """Carry the curator synonyms of the previous release over to release ``version_id`` (idempotent: a task
    delivered twice copies nothing twice), then, when the dictionary has an active index, queue a build of an
    index over the new release with the same encoder, not activated when built. The outcome is on the release's
    ReleaseCarryOver row."""
    from django.utils import timezone

    from webapp.core.queue import QueueUnavailable
    from webapp.training.releases import carry_over, queue_release_index
    from webapp.vocab.models import ReleaseCarryOver

    try:
        record = carry_over(version_id)
    except TRANSIENT_ERRORS:
        raise  # retried
    except Exception as exc:
        ReleaseCarryOver.objects.update_or_create(version_id=version_id, defaults={
            "state": ReleaseCarryOver.State.FAILED, "error": f"{type(exc).__name__}: {exc}", "finished_at": timezone.now()})
        logger.exception("carry-over to release %s failed", version_id)
        return ReleaseCarryOver.State.FAILED
    try:
        message = queue_release_index(record.version)
    except QueueUnavailable as exc:
        message = f"the index build could not be queued: {exc}"
    except ValueError as exc:  # IndexBuildError: the active index's encoder no longer fits (its folder gone)
        message = f"no index was queued: {exc}"
    ReleaseCarryOver.objects.filter(pk=record.pk).update(index_message=message)
    logger.info("release %s: %s synonyms carried, %s to review; %s", version_id, record.synonyms_carried,
                record.synonyms_to_review, message)
    return record.state
