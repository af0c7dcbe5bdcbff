"""Every kind of background work on one Jobs page and at /api/jobs/: listed with what it works on and its progress,
filtered by kind and state, cancelled where it can be (a queued job at once, a running training run or index build
at its next report), refused with the reason where it cannot; admins only."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from pytest_django.asserts import assertContains, assertNotContains

from webapp.audit.models import AuditEvent
from webapp.core.uploads import new_upload_folder
from webapp.corpus.models import Collection
from webapp.imports.models import ImportJob
from webapp.jobs.kinds import row_of
from webapp.jobs.models import Job
from webapp.linking.models import IndexVersion
from webapp.training.index_jobs import new_build_job
from webapp.training.models import Evaluation, TrainingRun, WordVectorUpload
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db

URL = reverse("jobs:list")


@pytest.fixture
def every_kind(alice, settings, tmp_path: Path) -> dict[str, Job]:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path
    d = Dictionary.objects.create(slug="medic", title="MEDIC")
    v = DictionaryVersion.objects.create(dictionary=d, release="2024", source_format="medic", checksum="m" * 64)
    active = IndexVersion.objects.create(dictionary=d, dictionary_version=v, state="active", artifact_path=str(tmp_path))
    gold = Collection.objects.create(slug="ncbi-dev", title="NCBI dev", dictionary=d)
    upload = new_upload_folder() / "ncbi.txt"
    upload.write_text("1|t|Gout\n\n")
    return {
        "import": ImportJob.objects.create(import_kind="documents", path=str(upload), created_by=alice,
                                           params={"collection_slug": "ncbi-dev", "format": "pubtator"}),
        "training": TrainingRun.objects.create(dictionary=d, state="running", started_at=timezone.now(),
                                               progress=30, progress_total=120, progress_note="biosyn epoch 1/4"),
        "evaluation": Evaluation.objects.create(index_version=active, collection=gold, state="failed",
                                                error="ValueError: no gold mentions"),
        "word-vectors": WordVectorUpload.objects.create(name="bio", file_name="bio.vec", path="/x/bio.vec",
                                                        state="succeeded"),
        "index-build": IndexVersion.objects.create(dictionary=d, dictionary_version=v, build=new_build_job(alice)).build,
    }


def test_every_kind_is_listed_with_what_it_works_on(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get(URL)
    for kind, job in every_kind.items():
        assertContains(response, f'id="job-{job.pk}"')
        assertContains(response, f'data-kind="{kind}"')
    for said in ("Import", "Training run", "Evaluation", "Word-vector upload", "Index build", "documents ncbi.txt → ncbi-dev",
                 "BioSyn on medic", "bio.vec → bio", "ValueError: no gold mentions", "biosyn epoch 1/4",
                 '<progress max="100" value="25"'):
        assertContains(response, said)
    assertContains(response, 'hx-trigger="every 2s"')  # queued and running jobs: it refreshes itself


def test_filters_by_kind_and_state(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get(URL, {"kind": "training"})
    assertContains(response, f'id="job-{every_kind["training"].pk}"')
    assertNotContains(response, f'id="job-{every_kind["import"].pk}"')
    response = alice_client.get(URL, {"state": "failed"})
    assertContains(response, f'id="job-{every_kind["evaluation"].pk}"')
    assertNotContains(response, f'id="job-{every_kind["training"].pk}"')
    assertNotContains(response, 'hx-trigger="every 2s"')  # nothing unfinished shown: no polling


def test_only_admins_see_jobs(bob_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    assert bob_client.get(URL).status_code == 403
    assert bob_client.get("/api/jobs/").status_code == 403
    assert bob_client.post(reverse("jobs:cancel", args=[every_kind["import"].pk])).status_code == 403
    assert ImportJob.objects.get(pk=every_kind["import"].pk).state == Job.State.QUEUED


def test_cancelling_a_queued_import_removes_its_upload(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    job = every_kind["import"]
    response = alice_client.post(reverse("jobs:cancel", args=[job.pk]), follow=True)
    assertContains(response, f"Job {job.pk} cancelled.")
    job.refresh_from_db()
    assert job.state == Job.State.CANCELLED and job.error == "cancelled before it started"
    assert not Path(job.path).parent.exists()
    (event,) = AuditEvent.objects.filter(action="job.cancelled", object_id=str(job.pk))
    assert event.actor_name == "alice" and (event.before, event.after["state"]) == ({"state": "queued"}, "cancelled")


def test_cancelling_a_queued_index_build_cancels_the_index_version(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    build = every_kind["index-build"]
    alice_client.post(reverse("jobs:cancel", args=[build.pk]))
    index = IndexVersion.objects.get(build=build)
    assert index.state == IndexVersion.State.CANCELLED
    assert Job.objects.get(pk=build.pk).state == Job.State.CANCELLED
    assert AuditEvent.objects.get(action="job.cancelled", object_id=str(build.pk)).actor_name == "alice"


def test_a_running_run_is_asked_to_stop_and_a_finished_job_cannot_be_cancelled(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    run = every_kind["training"]
    response = alice_client.post(f"/api/jobs/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["cancel_requested"] is True
    assert TrainingRun.objects.get(pk=run.pk).state == Job.State.RUNNING  # stops at its next progress report
    assert AuditEvent.objects.get(action="run.cancelled", object_id=str(run.pk)).actor_name == "alice"
    assert not AuditEvent.objects.filter(action="job.cancelled").exists()  # the run's own event, not a second one
    done = every_kind["word-vectors"]
    response = alice_client.post(f"/api/jobs/{done.pk}/cancel/")
    assert response.status_code == 409 and "has ended (succeeded)" in response.json()["detail"]


def test_a_running_import_cannot_stop_midway(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    job = every_kind["import"]
    Job.objects.filter(pk=job.pk).update(state="running")
    response = alice_client.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 409 and "cannot stop midway" in response.json()["detail"]


def test_the_api_lists_every_kind_and_filters(alice_client, every_kind) -> None:  # type: ignore[no-untyped-def]
    body = alice_client.get("/api/jobs/").json()
    assert {row["kind"] for row in body["results"]} == set(every_kind)
    run = next(row for row in body["results"] if row["kind"] == "training")
    assert (run["label"], run["percent"], run["url"]) == ("Training run", 25, f"/training/runs/{every_kind['training'].pk}/")
    assert [row["id"] for row in alice_client.get("/api/jobs/", {"kind": "evaluation"}).json()["results"]] == [
        every_kind["evaluation"].pk]
    refused = alice_client.get("/api/jobs/", {"kind": "nonsense"})
    assert refused.status_code == 400 and "kind" in refused.json()
    assert alice_client.get(f"/api/jobs/{every_kind['import'].pk}/").json()["state"] == "queued"


def test_a_job_is_the_row_of_its_kind() -> None:
    d = Dictionary.objects.create(slug="d", title="D")
    run = TrainingRun.objects.create(dictionary=d)
    job = Job.objects.get(pk=run.pk)
    assert job.kind == "training" and isinstance(row_of(job), TrainingRun)
    assert TrainingRun.objects.filter(state="queued").get() == run


def test_a_parent_job_says_what_its_chunks_do() -> None:
    from webapp.jobs import lifecycle

    parent = Job.objects.create(kind="detection", progress_total=100)
    first, second = (Job.objects.create(kind="detection", parent=parent, progress_total=50) for _ in range(2))
    assert lifecycle.take(first.pk)
    parent.refresh_from_db()
    assert parent.state == Job.State.RUNNING and parent.started_at is not None
    Job.objects.filter(pk=first.pk).update(progress=50)
    assert lifecycle.succeed(first.pk)
    parent.refresh_from_db()
    assert (parent.state, parent.progress, parent.progress_note) == (Job.State.RUNNING, 50, "1 of 2 chunks done")
    assert lifecycle.take(second.pk) and lifecycle.fail(second.pk, "the worker running it stopped")
    parent.refresh_from_db()
    assert parent.state == Job.State.FAILED and parent.finished_at is not None
    assert parent.error == "1 of 2 chunks failed; the first: the worker running it stopped"
