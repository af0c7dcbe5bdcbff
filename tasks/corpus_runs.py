"""Corpus runs on the default queue: one task per chunk of a run (webapp.curation.corpus_runs)."""

from __future__ import annotations

from celery import shared_task

from tasks import RETRY_OPTIONS


@shared_task(
    name="tasks.corpus_runs.run_chunk",
    acks_late=True,
    reject_on_worker_lost=True,
    **RETRY_OPTIONS,  # a database restart: each document's writes rolled back whole, and the retry redoes it the same
)
def run_chunk(job_id: int) -> dict[str, int]:
    """Detect and link the documents of one chunk job; how many documents, mentions and links it came to."""
    from webapp.curation.corpus_runs.chunk import run_chunk as run

    return run(job_id)
