"""The imports page in a browser: the bar of a running import moves as its row changes, and the page stops
polling once no import runs."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.imports.models import ImportJob
from webapp.jobs.lease import JobLease


@pytest.fixture
def jobs(transactional_db, alice):  # type: ignore[no-untyped-def]
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    now = timezone.now()
    ImportJob.objects.create(
        import_kind=ImportJob.Kind.DICTIONARY, path="/data/uploads/medic.tsv", params={"dictionary_slug": "medic"},
        state=ImportJob.State.FAILED, error="/data/uploads/medic.tsv:4: expected 9 tab-separated columns, found 2",
        started_at=now, finished_at=now, created_by=alice,
    )
    ImportJob.objects.create(
        import_kind=ImportJob.Kind.DICTIONARY, path="/data/CTD_diseases.tsv.gz", params={"dictionary_slug": "medic"},
        state=ImportJob.State.SUCCEEDED, progress=13298, progress_total=13298, started_at=now, finished_at=now,
        report={"message": "imported medic release '2024-05': 13298 concepts, 78405 names, 20102 edges in 9.8 s"},
        created_by=alice,
    )
    running = ImportJob.objects.create(
        import_kind=ImportJob.Kind.DOCUMENTS, path="/data/NCBI-disease/NCBItrainset_corpus.txt",
        params={"collection_slug": "ncbi-train"}, state=ImportJob.State.RUNNING, progress=120, progress_total=593,
        started_at=now, created_by=alice,
    )
    # Its lease held as a worker running it would: a test worker's sweep would otherwise fail it as abandoned.
    with JobLease(running.pk):
        yield running


def test_the_bar_moves_while_an_import_runs_and_polling_stops_after(live_server, browser, jobs, screenshots) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.click("nav.mainnav >> text=Imports")
    bar = page.locator(f"#import-job-{jobs.pk} progress")
    assert bar.get_attribute("value") == "20"  # 120 of 593
    page.screenshot(path=str(screenshots / "imports-running.png"), full_page=True)

    ImportJob.objects.filter(pk=jobs.pk).update(progress=450)
    page.wait_for_function(
        f"document.querySelector('#import-job-{jobs.pk} progress').value === 76", timeout=10_000
    )

    ImportJob.objects.filter(pk=jobs.pk).update(
        state=ImportJob.State.SUCCEEDED, progress=593, finished_at=timezone.now(),
        report={"message": "imported 593 documents (0 already there), 5145 mentions into ncbi-train in 4.1 s"},
    )
    page.wait_for_selector(f"#import-job-{jobs.pk}[data-state=succeeded]", timeout=10_000)
    assert page.locator("#import-jobs").get_attribute("hx-trigger") is None  # nothing runs: no more polling
    page.screenshot(path=str(screenshots / "imports-finished.png"), full_page=True)
