"""The comparison pages and the collection linking note keep a project's collection from curators who are not its
members (issue 41, item 1): the collection is not a column of the matrix, and its cell, its changed mentions and its
linking note are refused (403, as its collection page); a project over some documents only hides those documents'
mentions from the changed list and nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.integration.project_fixtures import make_user
from tests.integration.test_run_comparison import compared, world  # noqa: F401 (fixtures)
from webapp.corpus.models import Collection, Mention
from webapp.projects.models import Member
from webapp.projects.services.membership import add_member, create_project
from webapp.training.comparison import gold_collections

pytestmark = pytest.mark.django_db

SLUG, TITLE = "secret-gold", "Secret gold standard"


@pytest.fixture
def private(compared, alice) -> dict[str, Any]:  # type: ignore[no-untyped-def]  # noqa: F811
    """Project "vault" over all of the dev collection (renamed so that its name is unmistakable in a page); dave is
    its annotator; bob is a curator outside it."""
    dictionary, dev, train, active, older, run, candidate = compared
    Collection.objects.filter(pk=dev.pk).update(slug=SLUG, title=TITLE)
    dev.refresh_from_db()
    project = create_project(by=alice, slug="vault", title="Vault", collection=dev)
    dave = make_user("dave")
    add_member(project, dave, Member.Role.ANNOTATOR, alice)
    return {"dictionary": dictionary, "dev": dev, "train": train, "candidate": candidate, "dave": dave}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _urls(candidate_pk: int) -> dict[str, str]:
    cell = f"/training/compare/indexes/{candidate_pk}/collections/{SLUG}/"
    return {"cell": cell, "changes": cell + "changes/", "linking": f"/training/collections/{SLUG}/linking/"}


def test_a_non_member_does_not_see_the_private_collection_as_a_column(private, bob) -> None:  # type: ignore[no-untyped-def]
    page = _client(bob).get("/training/compare/?dictionary=mini")
    assert page.status_code == 200
    body = page.content.decode()
    assert SLUG not in body and TITLE not in body
    assert '<th scope="col">train</th>' in body  # the collections no project holds are still compared
    assert [c.slug for c in gold_collections(private["dictionary"], bob)] == ["train"]


@pytest.mark.parametrize("page", ["cell", "changes", "linking"])
def test_a_non_member_is_refused_the_cell_its_changes_and_its_linking_note(private, bob, page: str) -> None:  # type: ignore[no-untyped-def]
    url = _urls(private["candidate"].pk)[page]
    response = _client(bob).get(url, headers={"HX-Request": "true"} if page != "changes" else {})
    # The same answer as the collection's own page.
    assert response.status_code == _client(bob).get(f"/collections/{SLUG}/").status_code == 403
    body = response.content.decode()
    assert "Vault" in body and "not a member" in body and "alice" in body  # the project, and whom to ask
    assert "Acc@1" not in body and "melanoma" not in body


def test_members_and_admins_still_compare_the_private_collection(private, alice) -> None:  # type: ignore[no-untyped-def]
    for user in (private["dave"], alice):
        client = _client(user)
        assert SLUG in client.get("/training/compare/?dictionary=mini").content.decode()
        changes = client.get(_urls(private["candidate"].pk)["changes"])
        assert changes.status_code == 200 and "melanoma" in changes.content.decode()
    assert [c.slug for c in gold_collections(private["dictionary"], private["dave"])] == [SLUG, "train"]


def test_a_project_over_some_documents_hides_only_their_changed_mentions(compared, alice, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    dictionary, dev, train, active, older, run, candidate = compared
    create_project(by=alice, slug="pair", title="Pair", collection=dev, document_ids=["202"])
    client = _client(bob)
    assert '<th scope="col">dev</th>' in client.get("/training/compare/?dictionary=mini").content.decode()
    changes = client.get(f"/training/compare/indexes/{candidate.pk}/collections/dev/changes/")
    assert changes.status_code == 200
    body = changes.content.decode()
    # 202 holds melanoma, breast neoplasms and Diabetes mellitus (all changed); 203's Neoplasms is still listed.
    assert "melanoma" not in body and "breast neoplasms" not in body and "Diabetes mellitus" not in body
    neoplasms = Mention.objects.get(text="Neoplasms")
    assert f"?m={neoplasms.pk}" in body
    assert "3 more changed mentions are in documents curated in a project you are not a member of" in body
    assert "melanoma" in _client(alice).get(f"/training/compare/indexes/{candidate.pk}/collections/dev/changes/").content.decode()
