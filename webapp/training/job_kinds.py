"""The training app's kinds of job (webapp.jobs.kinds): training runs, evaluations, word-vector uploads and index
builds."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from webapp.artifacts.manifests import is_available
from webapp.core.uploads import discard_upload
from webapp.jobs.kinds import WORKER_LOST, JobKind, register
from webapp.jobs.models import Job
from webapp.jobs.services import record_cancel
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import INDEX_BUILD, fail_lost_build
from webapp.training.models import Evaluation, TrainingRun, WordVectorUpload


def _run_subject(run: Any) -> str:
    return f"{run.get_method_display().split(' (')[0]} on {run.dictionary.slug}"


def _evaluation_subject(evaluation: Any) -> str:
    return f"index {evaluation.index_version_id} on {evaluation.collection.slug}"


def _upload_gone(upload: Any) -> str:
    if is_available(upload.path):  # here, or published for a worker on another host
        return ""
    return f"{upload.file_name}: the uploaded file is gone ({upload.path}); upload it again"


def _index_of(job: Any) -> IndexVersion | None:
    return IndexVersion.objects.filter(build_id=job.pk).select_related("dictionary", "dictionary_version", "encoder").first()


def _build_subject(job: Any) -> str:
    index = _index_of(job)
    return f"index {index.pk}: {index.label}" if index is not None else "an index version since deleted"


def _build_args(job: Any) -> tuple[Any, ...]:
    # Queued again without "activate": the task reads the row's activate_when_built, which the admin's choice set.
    index = _index_of(job)
    return (index.pk if index is not None else 0, False)


def _build_lost(job: Any) -> str:
    index = _index_of(job)
    where = ""
    if index is not None and index.phase:
        where = f" while {IndexVersion.Phase(index.phase).label.lower()}" if index.phase in IndexVersion.Phase.values else ""
    return f"{WORKER_LOST}{where}; nothing of the build was kept. Build the index again."


def _cancel_run(run: Any, user: Any) -> None:
    from webapp.training.runs import cancel_run

    cancel_run(run.pk, user=user)  # records run.cancelled


def _cancel_build(job: Any, user: Any) -> None:
    from webapp.training.services import cancel_index_build

    index = _index_of(job)
    if index is not None:
        before = job.state
        cancel_index_build(index.pk)
        job.refresh_from_db()
        record_cancel(job, user, before)


def register_kinds() -> None:
    register(JobKind(
        name=TrainingRun.job_kind, label="Training run", model=lambda: TrainingRun, task="tasks.training.train_task",
        subject=_run_subject, url=lambda run: reverse("training:detail", args=[run.pk]),
        lost_reason=lambda run: run.lost_reason(), fail=lambda run, reason: run.fail(reason), stops_when_asked=True,
        cancel=_cancel_run, related=("dictionary",),
    ))
    register(JobKind(
        name=Evaluation.job_kind, label="Evaluation", model=lambda: Evaluation, task="tasks.training.evaluate_task",
        subject=_evaluation_subject, url=lambda ev: f"{reverse('training:models')}#index-versions",
        lost_reason=lambda ev: f"{WORKER_LOST}; no figures were recorded. Evaluate again.", related=("collection",),
    ))
    register(JobKind(
        name=WordVectorUpload.job_kind, label="Word-vector upload", model=lambda: WordVectorUpload,
        task="tasks.training.word_vectors_upload_task", queue="default",
        subject=lambda upload: f"{upload.file_name} → {upload.name}", url=lambda upload: reverse("training:models"),
        lost_reason=lambda upload: (f"{upload.file_name}: {WORKER_LOST} while checking the file; no word vectors were "
                                    "kept. Upload it again."),
        missing_input=_upload_gone, input_path=lambda upload: upload.path,
        ended=lambda upload: discard_upload(upload.path) and None,
    ))
    register(JobKind(
        name=INDEX_BUILD, label="Index build", model=lambda: Job, task="tasks.indexing.build_index_task",
        args=_build_args, subject=_build_subject, url=lambda job: f"{reverse('training:models')}#index-versions",
        lost_reason=_build_lost, fail=fail_lost_build, stops_when_asked=True, cancel=_cancel_build,
    ))
