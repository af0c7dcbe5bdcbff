"""API parity with the browser for annotators' workspaces (issue 43): an annotator decides on their own copies
through ``POST /api/mentions/{id}/decision/`` with the same service and rules as the curation screen; admins (and
the project's adjudicators) read the workspaces in the API's lists and details; another annotator of the project
and a curator outside it do not, and may not decide there.

Project "duo" over the demo collection (tests.integration.project_fixtures.team): bob and dave annotate, erin
adjudicates, alice (admin) manages, frank is a curator outside the project.
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.integration.project_fixtures import copy_of, demo_collection, team  # noqa: F401 (fixtures)
from webapp.corpus.models import Document, Link, Mention
from webapp.curation.models import Decision
from webapp.projects.models import Assignment
from webapp.teamwork.services.assignment import Mode, assign

pytestmark = pytest.mark.django_db


@pytest.fixture
def copies(team: dict[str, Any]) -> dict[str, Any]:  # noqa: F811
    """One document assigned to bob and dave: each has their copy in their workspace."""
    project = team["project"]
    document = Document.objects.filter(collection=team["collection"]).order_by("pk").first()
    assert document is not None
    assign(project, mode=Mode.MANUAL, annotators=[team["bob"], team["dave"]], by=team["alice"], documents=[document])
    bob_copy: Assignment = copy_of(project, document.external_id, team["bob"])
    mention = Mention.objects.filter(document=bob_copy.copy, links__origin=Link.Origin.MODEL).order_by("start").first()
    assert mention is not None
    return {**team, "copy": bob_copy.copy, "workspace": bob_copy.copy.collection, "mention": mention}


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _decide(user: Any, mention: Mention) -> Any:
    mention.refresh_from_db()
    return _api(user).post(f"/api/mentions/{mention.pk}/decision/",
                           {"action": "accept", "updated_at": mention.updated_at.isoformat()}, format="json")


def test_an_annotator_decides_on_their_copy_through_the_api(copies: dict[str, Any]) -> None:
    mention = copies["mention"]
    response = _decide(copies["bob"], mention)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "accepted"
    decision = Decision.objects.get(mention=mention, undone_at__isnull=True)
    # The curation screen's service: the same row, the API as its channel, kept in the copy's document.
    assert (decision.user, decision.via, decision.document_id) == (copies["bob"], Decision.Via.API, copies["copy"].pk)


def test_the_annotator_reads_their_workspace_in_the_api(copies: dict[str, Any]) -> None:
    client = _api(copies["bob"])
    workspace, copy = copies["workspace"], copies["copy"]
    assert client.get(f"/api/collections/{workspace.slug}/").status_code == 200
    assert client.get(f"/api/documents/{copy.pk}/").status_code == 200
    assert client.get(f"/api/mentions/{copies['mention'].pk}/").status_code == 200
    assert copy.pk in {d["id"] for d in client.get(f"/api/documents/?collection={workspace.slug}").json()["results"]}


@pytest.mark.parametrize("who", ["dave", "erin", "frank"])
def test_no_one_else_decides_on_an_annotators_copy(copies: dict[str, Any], who: str) -> None:
    """Double annotation is blind (dave), the adjudicator looks but does not decide (erin), and frank is outside
    the project: as on the curation screen."""
    response = _decide(copies[who], copies["mention"])
    assert response.status_code in (403, 404), response.content
    assert not Decision.objects.filter(mention=copies["mention"]).exists()
    browser = _browser(copies[who]).post(f"/curate/mentions/{copies['mention'].pk}/decide/", {"action": "accept"})
    assert browser.status_code == 403  # the browser refuses the same people


def _browser(user: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("who", ["alice", "erin"])
def test_admins_and_the_projects_adjudicators_see_workspaces_in_the_api(copies: dict[str, Any], who: str) -> None:
    client = _api(copies[who])
    workspace, copy = copies["workspace"], copies["copy"]
    listed = {c["slug"] for c in client.get("/api/collections/?page_size=500").json()["results"]}
    assert workspace.slug in listed
    assert client.get(f"/api/collections/{workspace.slug}/").status_code == 200
    assert client.get(f"/api/documents/{copy.pk}/").status_code == 200
    assert client.get(f"/api/mentions/{copies['mention'].pk}/").status_code == 200
    mentions = client.get(f"/api/mentions/?document={copy.pk}").json()["results"]
    assert copies["mention"].pk in {m["id"] for m in mentions}


@pytest.mark.parametrize("who", ["dave", "frank"])
def test_other_annotators_and_outsiders_do_not_see_the_workspace(copies: dict[str, Any], who: str) -> None:
    client = _api(copies[who])
    workspace, copy = copies["workspace"], copies["copy"]
    listed = {c["slug"] for c in client.get("/api/collections/?page_size=500").json()["results"]}
    assert workspace.slug not in listed
    assert client.get(f"/api/collections/{workspace.slug}/").status_code == 404
    assert client.get(f"/api/collections/{workspace.slug}/export/").status_code == 404
    assert client.get(f"/api/documents/{copy.pk}/").status_code == 404
    assert client.get(f"/api/mentions/{copies['mention'].pk}/").status_code == 404
    documents = client.get("/api/documents/?page_size=500").json()["results"]
    assert copy.pk not in {d["id"] for d in documents}
    links = client.get(f"/api/links/?page_size=500&mention={copies['mention'].pk}").json()
    assert not links.get("results")
