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
