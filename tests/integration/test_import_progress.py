"""Import progress is written outside the import's transaction: another connection reads it while the
import is still running (real PostgreSQL, real commits), and writes are rate-limited."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from linker.data import iter_pubtator
from tasks.imports import run_import
from webapp.corpus import importers
from webapp.corpus.models import Document
from webapp.imports.models import ImportJob
from webapp.jobs.lease import JobLease
from webapp.jobs.progress import ProgressRecorder

pytestmark = pytest.mark.django_db(transaction=True)

PUBTATOR = "".join(
    f"{pmid}|t|Asthma in children {pmid}.\n{pmid}|a|Wheezing was common.\n{pmid}\t0\t6\tAsthma\tDisease\tD001249\n\n"
    for pmid in ("101", "102", "103")
)


def _job(tmp_path: Path) -> ImportJob:
    path = tmp_path / "corpus.txt"
    path.write_text(PUBTATOR, encoding="utf-8")
    return ImportJob.objects.create(import_kind=ImportJob.Kind.DOCUMENTS, path=str(path), params={"collection_slug": "kids"})


def test_progress_is_visible_to_another_connection_while_the_import_runs(tmp_path, monkeypatch) -> None:
    job = _job(tmp_path)
    reached_second = threading.Event()
    release = threading.Event()

    def paused_reader(path: Any) -> Iterator[Any]:
        # Hands the importer its first document, then holds the import (transaction open, one document
        # written and reported) until the test has read the job row.
        for n, doc in enumerate(iter_pubtator(path)):
            if n == 1:
                reached_second.set()
                assert release.wait(30), "the test never released the import"
            yield doc

    monkeypatch.setattr(importers, "iter_pubtator", paused_reader)
    monkeypatch.setattr(importers, "DOCUMENT_BATCH", 1)
    outcome: list[Any] = []

    def worker() -> None:
        try:
            outcome.append(run_import(job.pk))
        except BaseException as exc:  # shown by the assertion below
            outcome.append(exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert reached_second.wait(30), f"the import never reached its second document: {outcome}"
        seen = ImportJob.objects.get(pk=job.pk)  # this test's connection, not the import's
        documents_seen = Document.objects.count()
    finally:
        release.set()
        thread.join(30)

    assert (seen.state, seen.progress, seen.progress_total) == (ImportJob.State.RUNNING, 1, 3)
    assert documents_seen == 0  # the import's transaction was still open: its documents not yet visible
    assert outcome == [ImportJob.State.SUCCEEDED]
    done = ImportJob.objects.get(pk=job.pk)
    assert (done.state, done.progress, done.progress_total, done.percent) == (ImportJob.State.SUCCEEDED, 3, 3, 100)
    assert Document.objects.filter(collection__slug="kids").count() == 3


def test_progress_is_written_at_most_once_a_second(tmp_path) -> None:
    job = _job(tmp_path)
    lease = JobLease(job.pk)  # as its worker would (a test worker's sweep fails a running job without)
    assert lease.acquire()
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJob.State.RUNNING)
    now = [100.0]

    def stored() -> tuple[int, int | None]:
        row = ImportJob.objects.get(pk=job.pk)
        return row.progress, row.progress_total

    with ProgressRecorder(job.pk, clock=lambda: now[0]) as progress:
        progress(10, 50)
        assert (stored(), progress.writes) == ((10, 50), 1)  # the first report at once
        for done, t in ((20, 100.3), (30, 100.9)):
            now[0] = t
            progress(done, 50)
        assert (stored(), progress.writes) == ((10, 50), 1)  # within the second: not written
        now[0] = 101.0
        progress(40, 60)
        assert (stored(), progress.writes) == ((40, 60), 2)
        now[0] = 101.2
        progress(60, 60)
        progress.flush()  # the last report, whatever the clock says
        assert (stored(), progress.writes) == ((60, 60), 3)
        progress.flush()
        assert progress.writes == 3  # nothing new to write
    lease.release()


def test_a_finished_job_keeps_its_final_progress(tmp_path) -> None:
    job = _job(tmp_path)
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJob.State.FAILED, progress=2)
    with ProgressRecorder(job.pk) as progress:
        progress(3, 3)  # a late report of a job already marked failed changes nothing
    assert ImportJob.objects.get(pk=job.pk).progress == 2


def test_a_refused_file_fails_the_job_with_its_line(tmp_path) -> None:
    job = _job(tmp_path)
    Path(job.path).write_text(PUBTATOR + "103\tx\t6\tAsthma\tDisease\tD001249\n", encoding="utf-8")
    assert run_import(job.pk) == ImportJob.State.FAILED
    job.refresh_from_db()
    assert job.message.startswith(f"{Path(job.path).name}:13: ")
    assert job.finished_at is not None
    assert not Document.objects.exists()
