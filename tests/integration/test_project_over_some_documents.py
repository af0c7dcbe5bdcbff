"""A project over some documents of a collection restricts those documents, not the rest of the collection (issue 41,
item 12): a curator outside the project keeps every other document in Collections, Curate and the API, may still
decide on them, and reaches a covered document only to be told which project holds it and whom to ask; the project
form says what it will hide before saving."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.integration.project_fixtures import demo_collection, make_user  # noqa: F401 (fixture)
from webapp.corpus.models import Collection, Document, Mention
from webapp.projects.models import Member
from webapp.projects.services.membership import add_member, create_project

pytestmark = pytest.mark.django_db

COVERED = ["demo-1", "demo-2"]


@pytest.fixture
def pair(demo_collection: Collection, alice: Any, bob: Any) -> dict[str, Any]:  # noqa: F811
    """Project "Pair" over demo-1 and demo-2 only, alice managing, dave annotating; bob is a curator outside it."""
    project = create_project(by=alice, slug="pair", title="Pair", collection=demo_collection, document_ids=COVERED)
    dave = make_user("dave")
    add_member(project, dave, Member.Role.ANNOTATOR, alice)
    documents = {d.external_id: d for d in Document.objects.filter(collection=demo_collection)}
    return {"project": project, "dave": dave, "bob": bob, "alice": alice, "documents": documents}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _open(pair: dict[str, Any]) -> list[Document]:
    return sorted((d for e, d in pair["documents"].items() if e not in COVERED), key=lambda d: d.pk)


def test_the_rest_of_the_collection_stays_listed_for_a_non_member(pair) -> None:  # type: ignore[no-untyped-def]
    bob = _client(pair["bob"])
    curate = bob.get("/curate/")
    assert curate.status_code == 200 and "/curate/demo/" in curate.content.decode()
    for url in ("/curate/demo/", "/collections/demo/"):
        page = bob.get(url)
        assert page.status_code == 200, url
        body = page.content.decode()
        for document in _open(pair):
            assert f"/documents/{document.pk}/" in body, (url, document.external_id)
        for external_id in COVERED:
            assert f"/documents/{pair['documents'][external_id].pk}/" not in body, (url, external_id)
        # The page says what is hidden, by which project, and whom to ask.
        assert "2 documents of" in body and "“Pair”" in body and "(alice)" in body, url
    # The review queue never leads into a covered document.
    queue = bob.get("/curate/demo/queue/next/")
    assert queue.status_code == 302
    assert not any(f"/documents/{pair['documents'][e].pk}/" in queue["Location"] for e in COVERED)


def test_a_covered_document_explains_who_holds_it_instead_of_a_bare_403(pair) -> None:  # type: ignore[no-untyped-def]
    bob = _client(pair["bob"])
    covered = pair["documents"]["demo-1"]
    for url in (f"/curate/demo/documents/{covered.pk}/", f"/collections/demo/documents/{covered.pk}/"):
        page = bob.get(url)
        assert page.status_code == 403, url
        body = page.content.decode()
        assert "<h1>403 Forbidden</h1>" not in body and "You may not see this page" in body
        assert "demo-1" in body and "“Pair”" in body and "not a member" in body and "Ask a manager of the project (alice)" in body
        assert covered.text[:40] not in body
    # A document outside the project opens as before, and its neighbours skip the covered ones.
    first_open = _open(pair)[0]
    page = bob.get(f"/curate/demo/documents/{first_open.pk}/")
    assert page.status_code == 200
    assert not any(f"/documents/{pair['documents'][e].pk}/" in page.content.decode() for e in COVERED)
    # Members and admins see the covered document.
    for user in (pair["dave"], pair["alice"]):
        assert _client(user).get(f"/curate/demo/documents/{covered.pk}/").status_code == 200


def test_the_api_hides_only_the_covered_documents(pair) -> None:  # type: ignore[no-untyped-def]
    bob = _client(pair["bob"])
    covered = pair["documents"]["demo-1"]
    collection = bob.get("/api/collections/demo/")
    assert collection.status_code == 200 and collection.json()["document_count"] == 4
    listed = {d["external_id"] for d in bob.get("/api/documents/?collection=demo").json()["results"]}
    assert listed == {d.external_id for d in _open(pair)}
    assert bob.get(f"/api/documents/{covered.pk}/").status_code == 404
    mentions = bob.get("/api/mentions/?page_size=100").json()["results"]
    assert mentions and covered.pk not in {m["document"] for m in mentions}
    exported = bob.get("/api/collections/demo/export/?format=jsonl").getvalue().decode()
    assert "demo-3" in exported and "demo-1" not in exported and "demo-2" not in exported
    assert _client(pair["dave"]).get(f"/api/documents/{covered.pk}/").status_code == 200


def test_a_non_member_decides_outside_the_project_and_the_decision_does_not_spread_into_it(pair) -> None:  # type: ignore[no-untyped-def]
    bob = _client(pair["bob"])
    target = Mention.objects.filter(document=_open(pair)[0]).order_by("start").first()
    # An identical mention in a document the project covers: a collection-wide decision must leave it to the project.
    covered = Document.objects.create(collection=target.document.collection, external_id="demo-extra", text=f"{target.text} again.")
    pair["project"].documents.add(covered)
    twin = Mention.objects.create(document=covered, start=0, end=len(target.text), text=target.text,
                                  mention_type=target.mention_type)
    body = {"action": "nil", "seen": target.updated_at.isoformat(), "part": "", "scope": "collection"}
    response = bob.post(f"/curate/mentions/{target.pk}/decide/", body)
    assert response.status_code == 200, response.content.decode()[:500]
    target.refresh_from_db()
    twin.refresh_from_db()
    assert target.status == "nil" and twin.status == "pending"
    # On the covered document itself: refused, with the project named.
    refused = bob.post(f"/curate/mentions/{twin.pk}/decide/", {**body, "seen": twin.updated_at.isoformat()})
    assert refused.status_code == 403 and "“Pair”" in refused.content.decode()


def test_the_project_form_says_what_it_will_hide_before_saving(demo_collection, alice) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    client = _client(alice)
    form = client.get("/projects/new/").content.decode()
    assert 'id="project-scope-note"' in form and "every document of the collection" in form
    assert "only those documents are hidden from non-members" in form
    created = client.post("/projects/new/", {"title": "Pair", "slug": "pair", "collection": "demo", "documents": "demo-1 demo-2",
                                             "annotators_per_document": 2}, follow=True)
    assert "2 of the 6 documents of" in created.content.decode() and "the other 4 stay open to every curator" in created.content.decode()


def test_a_projects_concept_filter_narrows_only_the_documents_it_covers(demo_collection, alice) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from webapp.curation.selectors import search_within
    from webapp.projects.concept_filter import filter_for_document

    create_project(by=alice, slug="onco", title="Oncology pair", collection=demo_collection, document_ids=COVERED,
                   concept_roots=["MESH:D009369"])
    covered = Document.objects.select_related("collection").get(collection=demo_collection, external_id="demo-2")
    other = Document.objects.select_related("collection").get(collection=demo_collection, external_id="demo-3")
    narrowed = filter_for_document(covered)
    assert narrowed is not None and "MESH:D009369" in narrowed.concept_ids
    assert filter_for_document(other) is None and search_within(other) is None
    assert search_within(covered) == narrowed.concept_ids
