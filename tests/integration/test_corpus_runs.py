"""Corpus runs without a worker (the chunks' service called directly): a run detects and links every document,
chunk by chunk, its parent counting documents; doing a chunk or the whole run again doubles nothing; a whitelist of
concepts or a subtree restricts the links and drops the detected mentions best linked elsewhere; a run is
cancelled with its chunks; the API starts one (admins only) and every job shows its rate and time left."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from tests.integration.corpus_run_helpers import notes_world, written
from webapp.corpus.models import Collection, Link, Mention
from webapp.curation.corpus_runs.chunk import annotate, run_chunk
from webapp.curation.corpus_runs.jobs import cancel_run, start_run
from webapp.curation.corpus_runs.scope import RunScope, ScopeError, parse_scope, resolve
from webapp.curation.services.detection import detectors_for
from webapp.jobs.models import Job
from webapp.linking.registry import forget_all
from webapp.vocab.models import Concept, HierarchyEdge

pytestmark = pytest.mark.django_db

ASTHMA, HYPERTENSION, DIABETES = "MESH:D001249", "MESH:D006973", "MESH:D003920"


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    forget_all()
    yield
    forget_all()


@pytest.fixture
def collection(tmp_path: Path) -> Collection:
    return notes_world(tmp_path)


def _run_here(collection: Collection, scope: RunScope | None = None, chunk_size: int = 2) -> Job:
    run = start_run(collection, scope or RunScope(), chunk_size=chunk_size, send=False)
    for chunk in run.children.order_by("pk"):
        run_chunk(chunk.pk)
    run.refresh_from_db()
    return run


def test_a_run_detects_and_links_every_document_chunk_by_chunk(collection: Collection) -> None:
    run = _run_here(collection)
    assert (run.state, run.progress, run.progress_total, run.arguments["chunks"]) == ("succeeded", 6, 6, 3)
    assert run.progress_note == "3 of 3 chunks done"
    assert run.arguments["models"]["index"] and run.arguments["models"]["index_version"]
    mentions, links = written(collection)
    assert sorted({m[3].lower() for m in mentions}) == ["asthma", "bronchial asthma", "diabetes", "high blood pressure"]
    assert len(mentions) == 10 and all(m[4] == "detector" and m[7] == "suggested" for m in mentions)
    label = run.arguments["models"]["index"]
    assert all(link[6] == "model" and link[7] == label for link in links)  # which model wrote each link
    tops = {(m[0], m[1]): link[5] for m in mentions for link in links if (link[0], link[1]) == (m[0], m[1]) and link[4] == 1}
    assert len(tops) == len(mentions)
    chunk_results = [c.result for c in run.children.order_by("pk")]
    assert sum(r["documents"] for r in chunk_results) == 6 and sum(r["mentions"] for r in chunk_results) == 10


def test_a_chunk_or_a_run_done_again_doubles_nothing(collection: Collection) -> None:
    _run_here(collection)
    first = written(collection)
    ids = set(Mention.objects.values_list("pk", flat=True))
    detectors = detectors_for(collection)
    for document in collection.documents.all():  # what a chunk redone after its worker died does
        annotate(document.pk, detectors, RunScope())
    assert written(collection) == first
    _run_here(collection, chunk_size=4)  # and a second run
    assert written(collection) == first
    assert set(Mention.objects.values_list("pk", flat=True)) == ids  # the same rows, kept, not replaced


def test_a_whitelist_restricts_the_links_and_the_mentions_kept(collection: Collection) -> None:
    run = _run_here(collection, parse_scope({"concepts": [ASTHMA]}))
    mentions, links = written(collection)
    assert {m[3].lower() for m in mentions} == {"asthma", "bronchial asthma"}
    assert links and {link[5] for link in links} == {ASTHMA}
    assert run.arguments["scope"]["concepts"] == [ASTHMA]
    # Again with the same scope: the same rows.
    _run_here(collection, parse_scope({"concepts": [ASTHMA]}))
    assert written(collection) == (mentions, links)


def test_a_subtree_root_brings_its_descendants_into_scope(collection: Collection) -> None:
    version = collection.dictionary.latest_version()
    concepts = {c.concept_id: c for c in Concept.objects.filter(version=version)}
    HierarchyEdge.objects.create(version=version, parent=concepts[ASTHMA], child=concepts[DIABETES])
    scope = resolve(parse_scope({"roots": ASTHMA}), collection)
    assert scope.allowed == {ASTHMA, DIABETES}
    _run_here(collection, scope)
    mentions, links = written(collection)
    assert {m[3].lower() for m in mentions} == {"asthma", "bronchial asthma", "diabetes"}
    assert {link[5] for link in links} == {ASTHMA, DIABETES}


def test_a_scope_naming_what_the_dictionary_lacks_is_refused(collection: Collection) -> None:
    with pytest.raises(ScopeError, match="MESH:NOPE"):
        start_run(collection, parse_scope({"concepts": "MESH:NOPE"}), send=False)
    with pytest.raises(ScopeError, match="documents must be one of"):
        parse_scope({"documents": "some"})
    _run_here(collection)
    # Unannotated: the documents without any mention yet, here the one note nothing was found in.
    assert start_run(collection, RunScope("unannotated"), send=False).progress_total == 1
    collection.documents.filter(external_id="note-4").delete()
    with pytest.raises(ScopeError, match="no document to annotate"):
        start_run(collection, RunScope("unannotated"), send=False)


def test_a_cancelled_run_cancels_its_chunks_and_they_do_nothing(collection: Collection) -> None:
    run = start_run(collection, RunScope(), chunk_size=2, send=False)
    chunks = list(run.children.order_by("pk"))
    cancel_run(run)
    run.refresh_from_db()
    assert run.state == "cancelled" and run.cancel_requested
    assert {c.state for c in Job.objects.filter(parent=run)} == {"cancelled"}
    assert run_chunk(chunks[0].pk) == {"skipped": 1}
    assert not Mention.objects.exists()


def test_a_running_chunk_asked_to_stop_stops_before_its_next_document(collection: Collection) -> None:
    run = start_run(collection, RunScope(), chunk_size=3, send=False)
    first, second = run.children.order_by("pk")
    run_chunk(first.pk)
    Job.objects.filter(pk=second.pk).update(state="running")  # taken by a worker, as far as the page knows
    cancel_run(Job.objects.get(pk=run.pk))
    assert run_chunk(second.pk) == {}  # it stopped before its first document
    run.refresh_from_db()
    assert (run.state, run.progress) == ("cancelled", 3)
    assert Job.objects.get(pk=second.pk).state == "cancelled"


def test_the_api_starts_a_run_for_admins_only(collection: Collection, alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = "test-nobody-listens"
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post("/api/corpus-runs/", {"collection": "notes", "concepts": [ASTHMA], "chunk_size": 4}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["kind"], body["progress_total"], body["state"]) == ("corpus-run", 6, "queued")
    assert "rate" in body and "seconds_left" in body
    assert Job.objects.filter(parent_id=body["id"]).count() == 2
    listed = api.get("/api/corpus-runs/").json()
    assert [r["id"] for r in listed["results"]] == [body["id"]]
    bad = api.post("/api/corpus-runs/", {"collection": "notes", "concepts": ["MESH:NOPE"]}, format="json")
    assert bad.status_code == 400 and "MESH:NOPE" in bad.json()["detail"]
    assert api.post("/api/corpus-runs/", {"collection": "nope"}, format="json").status_code == 404
    cancelled = api.post(f"/api/jobs/{body['id']}/cancel/").json()
    assert cancelled["state"] == "cancelled"


def test_the_command_runs_here(collection: Collection, capsys) -> None:  # type: ignore[no-untyped-def]
    call_command("corpus_run", "notes", "--here", "--chunk-size", "5", "--concepts", ASTHMA)
    out = capsys.readouterr().out
    assert "6 documents in 2 chunks" in out and "succeeded, 6 of 6 documents" in out
    assert set(Link.objects.values_list("concept_ref", flat=True)) == {ASTHMA}


def test_every_job_with_a_pace_shows_its_time_left() -> None:
    job = Job.objects.create(kind="detection", state="running", progress=5, progress_total=10,
                             started_at=timezone.now() - timedelta(seconds=20))
    assert job.rate == pytest.approx(0.25, rel=0.05)
    assert job.seconds_left == pytest.approx(20, rel=0.05) and job.eta == "about 20 s left"
    assert Job(kind="detection", state="queued", progress_total=10).eta == ""


def test_the_collection_page_starts_a_run_and_the_jobs_page_follows_it(collection: Collection, alice_client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = "test-nobody-listens"
    page = alice_client.get("/collections/notes/")
    assert page.status_code == 200 and b'id="corpus-run"' in page.content
    response = alice_client.post("/curate/notes/corpus-run/", {"documents": "all", "concepts": ASTHMA, "chunk_size": "4"})
    run = Job.objects.get(kind="corpus-run", parent__isnull=True)
    assert response.status_code == 302 and response.url == f"/jobs/?parent={run.pk}"
    assert run.created_by is not None and run.created_by.username == "alice"
    refused = alice_client.post("/curate/notes/corpus-run/", {"concepts": "MESH:NOPE"}, follow=True)
    assert "The corpus run was not started" in refused.content.decode() and "MESH:NOPE" in refused.content.decode()
    # A chunk running at a steady pace: the Jobs page says how long is left, for this kind as for every other.
    chunk = run.children.order_by("pk").first()
    Job.objects.filter(pk=chunk.pk).update(state="running", progress=2, started_at=timezone.now() - timedelta(seconds=20))
    listed = alice_client.get(f"/jobs/?parent={run.pk}").content.decode()
    assert "Corpus run" in listed and "about 20 s left" in listed
