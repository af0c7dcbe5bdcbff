"""The artifact store's collector, once a day on the beat schedule (webapp.celery): manifests no row names, blobs no
manifest lists, and the cache of the worker that runs it (webapp.ops.artifact_gc)."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(name="tasks.artifacts.collect_artifacts_task", ignore_result=True, **RETRY_OPTIONS)
def collect_artifacts_task() -> int:
    """Collect; how many manifests and blobs went."""
    from webapp.ops.artifact_gc import collect_artifacts

    done = collect_artifacts()
    return len(done.manifests) + done.blobs
