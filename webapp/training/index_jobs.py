"""An index version's build is a job (webapp.jobs, kind ``index-build``): queued with the version, taken by the one
process that builds it, ended with the build. The version keeps what is its own (its phase and names counted, its
artifact, whether it serves); the job carries the life every kind of job shares, so the jobs page, ``/api/jobs/``
and the one sweep see builds as they see imports and runs.

Whoever builds an index (a worker, ``manage.py build_index`` in a shell) holds its build job's lease for the whole
build (:func:`index_build_lock`): a second build of the same index waits, then finds it built; the sweep fails a
build whose builder died (webapp.jobs.sweep), and a cancel knows whether a builder has taken it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from webapp.jobs import lifecycle
from webapp.jobs.lease import JobLease, try_take_over
from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion

INDEX_BUILD = "index-build"
# A second builder of the same index waits this long for the first (a build takes minutes to hours).
WAIT_FOR_BUILDER_S = 7 * 24 * 3600.0


def new_build_job(user: Any = None) -> Job:
    return Job.objects.create(kind=INDEX_BUILD, created_by=user if getattr(user, "pk", None) else None)


def build_job_id(index: IndexVersion) -> int:
    """The id of the index's build job, made for a version that has none (one made before builds were jobs, or
    by hand), in its state."""
    if index.build_id is None:
        with transaction.atomic():
            locked = IndexVersion.objects.select_for_update().get(pk=index.pk)
            if locked.build_id is None:
                job = new_build_job(locked.created_by)
                if locked.state != IndexVersion.State.BUILDING:
                    ended = {IndexVersion.State.FAILED: Job.State.FAILED, IndexVersion.State.CANCELLED: Job.State.CANCELLED}
                    Job.objects.filter(pk=job.pk).update(state=ended.get(locked.state, Job.State.SUCCEEDED),
                                                         error=locked.error, finished_at=locked.finished_at)
                IndexVersion.objects.filter(pk=locked.pk).update(build=job)
                locked.build_id = job.pk
        index.build_id = locked.build_id
    return int(index.build_id)


@contextmanager
def index_build_lock(index: IndexVersion) -> Iterator[None]:
    """Hold the lease of the index's build job, waiting for another builder to let go of it."""
    with JobLease(build_job_id(index), wait_s=WAIT_FOR_BUILDER_S):
        yield


def index_being_built(index: IndexVersion) -> bool:
    """Whether a builder holds the build's lease. Inside a transaction: the lease is taken for the transaction when
    free, which keeps a build from starting until it ends."""
    return not try_take_over(build_job_id(index))


def build_started(index: IndexVersion) -> None:
    lifecycle.take(build_job_id(index))


def build_ended(index: IndexVersion) -> None:
    """The job ends as the version did (ready, failed or cancelled), with its reason."""
    index.refresh_from_db(fields=["state", "error", "name_count"])
    job_id = build_job_id(index)
    if index.state == IndexVersion.State.CANCELLED:
        lifecycle.stop_cancelled(job_id, index.error)
    elif index.state == IndexVersion.State.FAILED:
        lifecycle.fail(job_id, index.error or "the build failed")
    elif index.state != IndexVersion.State.BUILDING:
        lifecycle.succeed(job_id, {"summary": f"{index.name_count:,} names indexed"})


def fail_lost_build(job: Any, reason: str) -> bool:
    """The sweep's ending of a build whose builder died: the version is failed with the job."""
    index = IndexVersion.objects.filter(build_id=job.pk).first()
    if index is not None:
        IndexVersion.objects.filter(pk=index.pk, state=IndexVersion.State.BUILDING).update(
            state=IndexVersion.State.FAILED, error=reason)
    return lifecycle.fail(job.pk, reason)
