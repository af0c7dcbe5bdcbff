"""The Jobs page in a browser, as an admin: every kind of job in one table, a running run's bar moving as its row
changes, a queued import cancelled with its button, and the page no longer polling once nothing is unfinished."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Collection
from webapp.imports.models import ImportJob
from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import new_build_job
from webapp.training.models import Evaluation, TrainingRun
from webapp.vocab.models import Dictionary, DictionaryVersion


@pytest.fixture
def jobs(transactional_db, alice, tmp_path):  # type: ignore[no-untyped-def]
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    now = timezone.now()
    d = Dictionary.objects.create(slug="medic", title="MEDIC")
    v = DictionaryVersion.objects.create(dictionary=d, release="2024-05", source_format="medic", checksum="m" * 64)
    active = IndexVersion.objects.create(dictionary=d, dictionary_version=v, state="ready", artifact_path=str(tmp_path),
                                         name_count=78405, build=new_build_job(alice))
    Job.objects.filter(pk=active.build_id).update(state="succeeded", started_at=now, finished_at=now,
                                                  result={"summary": "78,405 names indexed"})
    gold = Collection.objects.create(slug="ncbi-dev", title="NCBI dev", dictionary=d)
    Evaluation.objects.create(index_version=active, collection=gold, state="failed", finished_at=now,
                              error="the worker running it stopped (killed, out of memory, or its machine went down); "
                                    "no figures were recorded. Evaluate again.")
    run = TrainingRun.objects.create(dictionary=d, state="running", started_at=now, heartbeat_at=now, progress=30,
                                     progress_total=120, progress_note="biosyn epoch 1/4", created_by=alice)
    queued = ImportJob.objects.create(import_kind="documents", path="/data/NCBI-disease/NCBIdevelopset_corpus.txt",
                                      params={"collection_slug": "ncbi-dev"}, created_by=alice)
    return {"run": run, "queued": queued}


def test_every_kind_on_one_page_with_progress_and_cancel(live_server, browser, jobs, screenshots) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.click("nav.mainnav >> text=Jobs")
    run, queued = jobs["run"], jobs["queued"]
    assert page.locator(f"#job-{run.pk} progress").get_attribute("value") == "25"
    for kind in ("import", "training", "evaluation", "index-build"):
        assert page.locator(f"tr[data-kind={kind}]").count() == 1
    page.screenshot(path=str(screenshots / "jobs.png"), full_page=True)

    TrainingRun.objects.filter(pk=run.pk).update(progress=90, heartbeat_at=timezone.now())
    page.wait_for_function(f"document.querySelector('#job-{run.pk} progress').value === 75", timeout=10_000)

    page.click(f"#job-{queued.pk} >> text=Cancel")
    page.wait_for_selector(f"#job-{queued.pk}[data-state=cancelled]", timeout=10_000)
    assert f"Job {queued.pk} cancelled." in page.inner_text(".messages")

    TrainingRun.objects.filter(pk=run.pk).update(state="succeeded", finished_at=timezone.now())
    page.wait_for_selector(f"#job-{run.pk}[data-state=succeeded]", timeout=10_000)
    assert page.locator("#jobs").get_attribute("hx-trigger") is None  # nothing unfinished: no more polling
    page.screenshot(path=str(screenshots / "jobs-finished.png"), full_page=True)
