"""A PubMed import commits per batch and records on its job how far it got: after a file cut short (a download
that stopped mid-article), importing the whole file again continues after the committed batches instead of
starting over (issue #45)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tasks.imports import run_import
from webapp.corpus.models import Document
from webapp.imports.models import ImportJob

pytestmark = pytest.mark.django_db(transaction=True)

BASELINE = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed" / "baseline.xml"


def _job(path: Path) -> ImportJob:
    params = {"collection_slug": "pm", "format": "pubmed-xml", "title": None, "dictionary_slug": None}
    return ImportJob.objects.create(import_kind="documents", path=str(path), params=params)


def test_a_file_cut_short_then_whole_continues_from_the_last_batch(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("webapp.corpus.pubmed_import.BATCH_ITEMS", 2)
    whole = BASELINE.read_bytes()
    cut = whole[: whole.index(b"<PMID Version=\"1\">10000004")]  # stops inside the fourth article
    path = tmp_path / "pubmed24n0001.xml.gz"
    path.write_bytes(gzip.compress(cut))

    first = _job(path)
    assert run_import(first.pk) == ImportJob.State.FAILED
    first.refresh_from_db()
    assert "cut short" in first.error
    assert first.result["resume"] == {"file": path.name, "collection": "pm", "position": 2, "done": False}
    assert sorted(Document.objects.values_list("external_id", flat=True)) == ["10000001", "10000002"]

    path.write_bytes(gzip.compress(whole))  # the download done again
    second = _job(path)
    assert run_import(second.pk) == ImportJob.State.SUCCEEDED
    second.refresh_from_db()
    report = second.report
    # Read past the two committed articles: had it started over they would be counted unchanged.
    assert (report["resumed_at"], report["new"], report["unchanged"]) == (2, 3, 0)
    assert "continued after item 2" in report["message"]
    assert second.result["resume"]["done"] is True
    assert Document.objects.count() == 5

    third = _job(path)  # the file again after it finished: read from the start, everything unchanged
    assert run_import(third.pk) == ImportJob.State.SUCCEEDED
    third.refresh_from_db()
    assert (third.report["resumed_at"], third.report["unchanged"]) == (0, 5)


def test_a_lost_worker_says_what_stays_committed() -> None:
    from webapp.imports.jobs import _lost_reason

    job = ImportJob(import_kind="documents", path="pubmed24n0001.xml.gz", progress=1500, progress_total=30000,
                    result={"resume": {"file": "pubmed24n0001.xml.gz", "collection": "pm", "position": 1500, "done": False}})
    reason = _lost_reason(job)
    assert "its first 1,500 items are committed" in reason and "continues from there" in reason
    assert "nothing of this import was written" in _lost_reason(ImportJob(import_kind="documents", path="a.txt"))


def test_a_worker_killed_mid_file_is_continued_by_the_next_import(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL (the OOM killer) while a PubMed file is read: the committed batches stay, the sweep says so, and
    importing the file again continues after them, every article once."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from django.db import connection

    from tests.integration.conftest import database_url
    from tests.unit.test_pubmed_streaming import _write
    from webapp.jobs.sweep import fail_lost_jobs

    articles = 6_000
    path = tmp_path / "pubmed24n0002.xml.gz"
    _write(path, articles)
    job = _job(path)
    env = os.environ | {"DATABASE_URL": database_url(connection.settings_dict), "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    script = f"import django\ndjango.setup()\nfrom tasks.imports import run_import\nrun_import({job.pk})\n"
    process = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (ImportJob.objects.get(pk=job.pk).result or {}).get("resume"):
            assert process.poll() is None and time.monotonic() < deadline, "the import ended before a batch committed"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 30
    while ImportJob.objects.get(pk=job.pk).state == ImportJob.State.RUNNING:  # its lease goes with its connection
        assert time.monotonic() < deadline, "still running 30 s after its process was killed"
        fail_lost_jobs()
        time.sleep(0.2)
    job.refresh_from_db()
    committed = job.result["resume"]["position"]
    assert job.state == ImportJob.State.FAILED and f"its first {committed:,} items are committed" in job.error
    assert 0 < committed < articles and Document.objects.count() == committed

    again = _job(path)
    assert run_import(again.pk) == ImportJob.State.SUCCEEDED
    again.refresh_from_db()
    assert (again.report["resumed_at"], again.report["new"], again.report["unchanged"]) == (committed, articles - committed, 0)
    assert again.report["deleted"] == 2  # the file's DeleteCitation of PMIDs 7 and 8
    assert Document.objects.count() == articles - 2
