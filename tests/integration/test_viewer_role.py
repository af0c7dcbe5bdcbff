"""The read-only viewer role: a viewer reads what a curator reads, and every write is refused with 403 and a
message naming the curator role (pages and API alike)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.conftest import _user
from tests.integration.test_api_permissions import (  # noqa: F401 (fixtures)
    ADMIN,
    ENDPOINTS,
    READ,
    World,
    _call,
    _test_settings,
    index_folder,
    world,
)
from webapp.core.roles import VIEWER_WRITE_REFUSAL, can_read, is_curator, role_of
from webapp.corpus.models import Mention

pytestmark = pytest.mark.django_db


@pytest.fixture
def victor(db, django_user_model):  # type: ignore[no-untyped-def]
    """A viewer: reads, never writes."""
    return _user(django_user_model, "victor", "viewer")


def test_the_viewer_group_exists_after_migrating(db) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Group

    viewer = Group.objects.get(name="viewer")
    codenames = set(viewer.permissions.values_list("codename", flat=True))
    assert "view_document" in codenames and not any(c.startswith(("add_", "change_", "delete_")) for c in codenames)


def test_a_viewer_reads_but_is_no_curator(victor) -> None:  # type: ignore[no-untyped-def]
    assert can_read(victor) and not is_curator(victor) and role_of(victor) == "viewer"


@pytest.mark.parametrize("name", ENDPOINTS)
def test_a_viewer_reads_the_api_and_every_write_is_refused(world: World, victor, name: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    client = APIClient()
    client.force_authenticate(victor)
    endpoint = ENDPOINTS[name]
    code = _call(client, endpoint, world)
    if endpoint.method == "get" and endpoint.needs == READ:
        assert code == 200
    else:
        assert code == 403


def test_the_api_refusal_names_the_curator_role(world: World, victor) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    client = APIClient()
    client.force_authenticate(victor)
    response = client.post(f"/api/mentions/{world.mention.pk}/decision/", {"action": "accept"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == VIEWER_WRITE_REFUSAL
    response = client.post("/api/documents/", {"collection": "c", "external_id": "n", "text": "x"}, format="json")
    assert response.status_code == 403 and "curator role" in response.json()["detail"]
    assert [n for n, e in ENDPOINTS.items() if e.needs == ADMIN]  # the table still has admin endpoints to refuse


def test_a_viewer_browses_curation_pages_but_cannot_decide_or_undo(demo, client, victor, bob) -> None:  # type: ignore[no-untyped-def]
    from webapp.curation import services

    client.force_login(victor)
    mention = Mention.objects.filter(document__collection=demo).order_by("pk").first()
    assert mention is not None
    for url in ("/", "/collections/", f"/collections/{demo.slug}/", "/curate/", f"/curate/{demo.slug}/",
                f"/curate/{demo.slug}/documents/{mention.document_id}/", f"/curate/mentions/{mention.pk}/panel/",
                "/dictionaries/"):
        assert client.get(url).status_code == 200, url
    refused = client.post(f"/curate/mentions/{mention.pk}/decide/", {"action": "reject"})
    assert refused.status_code == 403
    assert VIEWER_WRITE_REFUSAL in refused.content.decode()
    decision = services.decide(user=bob, mention_id=mention.pk, action="reject", seen_updated_at=mention.updated_at).decision
    assert client.post(f"/curate/decisions/{decision.pk}/undo/").status_code == 403
    assert client.post(f"/curate/documents/{mention.document_id}/undo/").status_code == 403
    assert client.post(f"/curate/documents/{mention.document_id}/mentions/", {"start": 0, "end": 4}).status_code == 403
    mention.refresh_from_db()
    assert mention.status == Mention.Status.REJECTED  # bob's decision stands


def test_a_viewer_cannot_import_or_train(db, client, victor) -> None:  # type: ignore[no-untyped-def]
    client.force_login(victor)
    for url in ("/imports/", "/imports/text/", "/training/runs/new/", "/jobs/"):
        assert client.get(url).status_code == 403, url
    assert client.post("/imports/text/", {"collection": "x", "text": "y"}).status_code == 403
    assert client.post("/training/runs/new/", {}).status_code == 403
