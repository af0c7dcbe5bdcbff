"""The Celery app: queues ``interactive`` (work someone is waiting on: evaluations, a pasted text's import and its
mention detection, the learning loop's checks, housekeeping), ``default`` (imports, linking a collection, release
carry-over) and ``gpu`` (training, index builds). Short work has its own queue and its own worker (the launcher's
``interactive`` worker, compose's ``worker-interactive``), so that it never waits behind an hour of training or an
index build.

Tasks live in the top-level ``tasks`` package, take ids, and call service functions. The beat schedule
(run by exactly one process: the launcher's worker with ``-B``, the ``beat`` service in docker/compose.yml)
queues the periodic housekeeping: the one job sweep (webapp.jobs.sweep), which fails the jobs whose worker died and
queues again the jobs whose task message the broker lost.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.schedules import crontab
from celery.signals import worker_process_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

# The beat's sweep: the slow path behind the workers' own 5 s thread (webapp.jobs.sweeper), and the only one that
# queues again the jobs whose message was lost (webapp.jobs.sweep).
SWEEP_EVERY_S = 60.0
# When the nightly retrain runs (UTC, the settings' TIME_ZONE): after a working day's decisions.
NIGHTLY_RETRAIN_HOUR = 2
# When the audit log's old events are removed (UTC): a quiet hour, apart from the nightly retrain.
AUDIT_RETENTION_HOUR = 3

app = Celery("workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
DEFAULT_QUEUE, GPU_QUEUE, INTERACTIVE_QUEUE = "default", "gpu", "interactive"
app.conf.task_queues = (Queue(DEFAULT_QUEUE), Queue(GPU_QUEUE), Queue(INTERACTIVE_QUEUE))
# Exact names win over patterns: the sweeps and evaluations must not wait behind a long run on the gpu queue.
# Mention detection is routed per call (webapp.corpus.detection.queue_detection): a handful of documents (a pasted
# text, an API post) is interactive, an import's thousands stay on default; so is a pasted text's import
# (webapp.imports.queueing.queue_text).
app.conf.task_routes = {
    "tasks.training.evaluate_task": {"queue": INTERACTIVE_QUEUE},
    "tasks.health.*": {"queue": INTERACTIVE_QUEUE},
    "tasks.jobs.*": {"queue": INTERACTIVE_QUEUE},
    "tasks.audit.*": {"queue": INTERACTIVE_QUEUE},
    "tasks.loop.*": {"queue": INTERACTIVE_QUEUE},
    "tasks.training.*": {"queue": GPU_QUEUE},
    "tasks.indexing.*": {"queue": GPU_QUEUE},
}
app.conf.beat_schedule = {
    "sweep-jobs": {
        "task": "tasks.jobs.sweep_jobs",
        "schedule": SWEEP_EVERY_S,
        # A sweep nobody ran within its minute is superseded by the next one.
        "options": {"queue": INTERACTIVE_QUEUE, "expires": SWEEP_EVERY_S},
    },
    # The learning loop (webapp.training.loop): retrain policies with nightly runs, and the promotion gate's
    # checks whose message was lost.
    "nightly-retrain": {
        "task": "tasks.loop.nightly_retrain_task",
        "schedule": crontab(hour=NIGHTLY_RETRAIN_HOUR, minute=0),
        "options": {"queue": INTERACTIVE_QUEUE, "expires": 3600},
    },
    "recheck-promotion-gates": {
        "task": "tasks.loop.recheck_gates_task",
        "schedule": 5 * SWEEP_EVERY_S,
        "options": {"queue": INTERACTIVE_QUEUE, "expires": 5 * SWEEP_EVERY_S},
    },
    # The audit log's retention (webapp.audit.retention): events older than AUDIT_RETENTION_DAYS go, once a day.
    "audit-retention": {
        "task": "tasks.audit.sweep_audit_log",
        "schedule": crontab(hour=AUDIT_RETENTION_HOUR, minute=30),
        "options": {"queue": INTERACTIVE_QUEUE, "expires": 3600},
    },
    # The artifact store (webapp.artifacts): manifests no row names, blobs no manifest lists, once a day.
    "collect-artifacts": {
        "task": "tasks.artifacts.collect_artifacts_task",
        "schedule": crontab(hour=AUDIT_RETENTION_HOUR, minute=45),
        "options": {"queue": INTERACTIVE_QUEUE, "expires": 3600},
    },
}
# Explicit task modules: the tasks package sits outside the Django apps, so autodiscovery would miss it.
app.conf.include = ["tasks.artifacts", "tasks.audit", "tasks.health", "tasks.imports", "tasks.indexing", "tasks.corpus_runs", "tasks.curation", "tasks.detection",
                    "tasks.training",
                    "tasks.jobs", "tasks.loop", "tasks.releases"]


@worker_process_init.connect
def _compute_threads(**_: object) -> None:
    """Each worker process computes on WORKER_THREADS threads (torch, BLAS, faiss, ONNX Runtime) when set: several
    worker processes on one machine would otherwise each start a thread per core and stall one another."""
    from django.conf import settings

    if settings.WORKER_THREADS:
        from linker.device import limit_threads

        limit_threads(settings.WORKER_THREADS)
