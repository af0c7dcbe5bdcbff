"""The run command's two workers (webapp.launcher.worker_argvs, real Celery processes on the test database): while
the long-work worker is held by a long import, a pasted text is imported and its mention detection runs on the
interactive worker, instead of waiting its turn behind it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import database_url
from webapp.celery import app
from webapp.core.queue import job_task_id, send_now
from webapp.corpus.detection import NO_INDEX_PREFIX
from webapp.corpus.models import Document
from webapp.imports.jobs import RUN_IMPORT
from webapp.imports.models import ImportJob
from webapp.jobs.lease import leased
from webapp.launcher import worker_argvs
from webapp.supervision import Child
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = [pytest.mark.slow, pytest.mark.worker]

HANG_GUARD_S = 180  # only against a hang: each wait below ends in seconds


def _until(what: str, done, log: Path) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + HANG_GUARD_S
    while not done():
        assert time.monotonic() < deadline, f"{what} never happened; the workers logged:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


def test_a_pasted_text_is_imported_and_detected_while_the_long_work_worker_is_busy(  # type: ignore[no-untyped-def]
    transactional_db, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection

    from webapp.imports.queueing import queue_text

    settings.TASK_QUEUE_OVERRIDE = ""  # the real routes
    for name, value in {"DATABASE_URL": database_url(connection.settings_dict), "DB_CONN_MAX_AGE": "0",
                        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "TASK_QUEUE_OVERRIDE": "",
                        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND}.items():
        monkeypatch.setenv(name, value)  # what the workers get
    log = tmp_path / "workers.log"
    host = os.uname().nodename
    workers = [Child(name, argv, log=log, own_group=True) for name, argv in worker_argvs(sys.executable, tmp_path).items()]
    for worker in workers:
        worker.start(time.monotonic())
    try:
        _until("both workers answering",
               lambda: len(app.control.ping(destination=[f"worker@{host}", f"interactive@{host}"], timeout=1.0)) == 2, log)
        app.control.purge()  # nothing of an earlier run left in the queues

        # A long job holds the long-work worker: an import whose row this test keeps locked.
        long = ImportJob.objects.create(import_kind="documents", path=str(tmp_path / "big.txt"), params={"format": "pubtator"})
        with psycopg.connect(database_url(connection.settings_dict)) as holder:
            holder.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [long.pk])
            send_now(RUN_IMPORT, long.pk, task_id=job_task_id(long))
            _until("the long import taken by the worker", lambda: leased([long.pk]) == {long.pk}, log)

            tiny = Dictionary.objects.create(slug="tiny", title="Tiny")  # a release, and no index yet
            DictionaryVersion.objects.create(dictionary=tiny, release="1", source_format="medic", checksum="c" * 64)
            pasted = queue_text("Asthma at night and high blood pressure.", collection_slug="notes", dictionary_slug="tiny")
            _until("the pasted text's import", lambda: not ImportJob.objects.get(pk=pasted.pk).is_active, log)
            pasted.refresh_from_db()
            assert pasted.state == ImportJob.State.SUCCEEDED, pasted.message
            doc = Document.objects.get(collection__slug="notes")
            # Its detection ran too (and says why it found nothing: no index yet), all while the long job waited.
            _until("the pasted text's detection", lambda: Document.objects.get(pk=doc.pk).detection_state
                   not in (Document.DetectionState.QUEUED, Document.DetectionState.RUNNING), log)
            assert ImportJob.objects.get(pk=long.pk).state == ImportJob.State.QUEUED
            assert Document.objects.get(pk=doc.pk).detection_error.startswith(NO_INDEX_PREFIX)
            holder.rollback()
        # Let go: the long-work worker was the one waiting on it, and it goes on (its file does not exist).
        _until("the long import ended", lambda: ImportJob.objects.get(pk=long.pk).state == ImportJob.State.FAILED, log)
    finally:
        for worker in workers:
            worker.stop()
