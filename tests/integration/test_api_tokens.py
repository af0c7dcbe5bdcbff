"""Named API tokens: the key is shown once and stored hashed; expired or revoked keys get 401, a read-only token
403 on writes, a project-scoped token sees only its project; issuing and revoking leave audit events."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.conftest import PASSWORD
from tests.integration.test_api_permissions import (  # noqa: F401 (fixtures)
    World,
    _test_settings,
    index_folder,
    world,
)
from webapp.api.authentication import READ_ONLY_REFUSAL
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Collection, Document, Mention
from webapp.people.models import ApiToken
from webapp.people.tokens import TokenError, hash_key, issue_token, revoke_token
from webapp.projects.services.membership import create_project

pytestmark = pytest.mark.django_db


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_the_key_is_shown_once_and_only_its_hash_is_kept(bob) -> None:  # type: ignore[no-untyped-def]
    issued = issue_token(bob, "nightly import")
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert issued.key.startswith("elw_") and len(issued.key) > 40
    assert token.key_hash == hash_key(issued.key) and issued.key not in {token.key_hash, token.prefix}
    assert issued.key.startswith(token.prefix) and len(token.prefix) == 12
    assert token.expires_at is not None and timedelta(days=89) < token.expires_at - timezone.now() <= timedelta(days=90)


def test_the_default_expiry_is_a_setting(bob, settings) -> None:  # type: ignore[no-untyped-def]
    settings.API_TOKEN_DAYS = 0
    assert issue_token(bob, "forever").token.expires_at is None
    settings.API_TOKEN_DAYS = 7
    assert issue_token(bob, "a week").token.expires_at < timezone.now() + timedelta(days=7, seconds=5)


def test_a_token_reads_and_records_when_it_was_last_used(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    issued = issue_token(bob, "pipeline")
    assert _client(issued.key).get("/api/mentions/").status_code == 200
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at is not None


def test_an_expired_token_gets_401(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    issued = issue_token(bob, "old")
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _client(issued.key).get("/api/mentions/")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_a_revoked_token_gets_401_and_the_revocation_is_audited(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    issued = issue_token(bob, "leaked")
    assert _client(issued.key).get("/api/mentions/").status_code == 200
    revoke_token(issued.token, by=bob)
    response = _client(issued.key).get("/api/mentions/")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    with pytest.raises(TokenError, match="revoked already"):
        revoke_token(issued.token, by=bob)
    event = AuditEvent.objects.get(action="token.revoked")
    assert event.actor == bob and event.object_id == str(issued.token.pk) and event.after["state"] == "revoked"


def test_creating_a_token_is_audited_without_its_key(bob) -> None:  # type: ignore[no-untyped-def]
    issued = issue_token(bob, "export job", read_only=True)
    event = AuditEvent.objects.get(action="token.created")
    assert event.actor == bob and event.object_type == "apitoken" and event.object_id == str(issued.token.pk)
    assert event.after["name"] == "export job" and event.after["read_only"] is True
    assert issued.key not in str(event.after) and issued.key not in event.object_label


def test_only_the_owner_or_an_admin_revokes(bob, charlie, alice) -> None:  # type: ignore[no-untyped-def]
    issued = issue_token(bob, "mine")
    with pytest.raises(TokenError, match="owner or an admin"):
        revoke_token(issued.token, by=charlie)
    assert revoke_token(issued.token, by=alice).revoked_by == alice


def test_a_deactivated_users_token_gets_401(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    issued = issue_token(bob, "pipeline")
    bob.is_active = False
    bob.save()
    assert _client(issued.key).get("/api/mentions/").status_code == 401


def test_a_read_only_token_reads_but_every_write_is_403(world: World, alice) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    client = _client(issue_token(alice, "dashboard", read_only=True).key)
    assert client.get("/api/mentions/").status_code == 200
    assert client.get(f"/api/documents/{world.document.pk}/").status_code == 200
    decision = client.post(f"/api/mentions/{world.mention.pk}/decision/", {"action": "accept"}, format="json")
    assert decision.status_code == 403 and decision.json()["detail"] == READ_ONLY_REFUSAL
    created = client.post("/api/documents/", {"collection": "c", "external_id": "n", "text": "x"}, format="json")
    assert created.status_code == 403
    assert client.put(f"/api/documents/{world.document.pk}/", {}, format="json").status_code == 403
    assert client.patch(f"/api/documents/{world.document.pk}/", {}, format="json").status_code == 403
    assert client.delete(f"/api/documents/{world.document.pk}/").status_code == 403
    assert not Document.objects.filter(external_id="n").exists()
    world.mention.refresh_from_db()
    assert world.mention.status == Mention.Status.SUGGESTED


def test_a_project_scoped_token_sees_only_its_project(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    other = Collection.objects.create(slug="other", title="Other", dictionary=world.document.collection.dictionary)
    outside = Document.objects.create(collection=other, external_id="o1", text="Asthma elsewhere.")
    outside_mention = Mention.objects.create(document=outside, start=0, end=6, text="Asthma")
    project = create_project(by=bob, slug="p", title="P", collection=world.document.collection)
    scoped = _client(issue_token(bob, "project p", project=project).key)
    everything = _client(issue_token(bob, "everything").key)

    assert everything.get("/api/collections/other/").status_code == 200
    assert scoped.get("/api/collections/other/").status_code == 404
    assert scoped.get(f"/api/documents/{outside.pk}/").status_code == 404
    assert scoped.get(f"/api/mentions/{outside_mention.pk}/").status_code == 404
    assert scoped.get("/api/collections/c/").status_code == 200
    assert scoped.get(f"/api/documents/{world.document.pk}/").status_code == 200
    assert [c["slug"] for c in scoped.get("/api/collections/").json()["results"]] == ["c"]
    assert {d["id"] for d in scoped.get("/api/documents/").json()["results"]} == {world.document.pk}
    assert {m["id"] for m in scoped.get("/api/mentions/").json()["results"]} == {world.mention.pk}


def test_a_project_scoped_tokens_export_of_a_collection_holds_only_the_projects_documents(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    collection = world.document.collection
    other = Document.objects.create(collection=collection, external_id="not-in-p", text="Asthma elsewhere.")
    project = create_project(by=bob, slug="p", title="P", collection=collection, document_ids=[world.document.external_id])
    scoped = _client(issue_token(bob, "project p", project=project).key)
    everything = _client(issue_token(bob, "everything").key)

    def exported(client: APIClient) -> str:
        response = client.get(f"/api/collections/{collection.slug}/export/", {"as": "pubtator"})
        assert response.status_code == 200, response.getvalue()[:300]
        return response.getvalue().decode()

    assert other.external_id in exported(everything)
    assert other.external_id not in exported(scoped) and world.document.external_id in exported(scoped)


def test_a_token_is_scoped_only_to_a_project_of_its_user(world: World, bob, charlie) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    project = create_project(by=bob, slug="p", title="P", collection=world.document.collection)
    with pytest.raises(TokenError, match="not a member"):
        issue_token(charlie, "sneaky", project=project)


def test_post_api_auth_token_issues_a_named_token(bob) -> None:  # type: ignore[no-untyped-def]
    response = APIClient().post("/api/auth/token/", {"username": "bob", "password": PASSWORD, "name": "ci"}, format="json")
    assert response.status_code == 200
    body = response.json()
    token = ApiToken.objects.get(key_hash=hash_key(body["token"]))
    assert token.user == bob and token.name == "ci" and body["name"] == "ci" and body["expires_at"]
    again = APIClient().post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json").json()
    assert again["token"] != body["token"] and again["name"] == "POST /api/auth/token/"
    assert AuditEvent.objects.filter(action="token.created", actor=bob).count() == 2


def test_keys_of_drf_tokens_from_before_keep_working(world: World, bob) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from django.apps import apps
    from rest_framework.authtoken.models import Token

    old = Token.objects.create(user=bob)
    importlib.import_module("webapp.people.migrations.0002_move_drf_tokens").move_keys(apps, None)
    assert not Token.objects.exists()  # the plain key is gone from the database
    moved = ApiToken.objects.get(user=bob)
    assert moved.expires_at is None and not moved.read_only and moved.prefix == old.key[:12]
    assert _client(old.key).get("/api/mentions/").status_code == 200


def test_a_project_scoped_token_reaches_no_endpoint_outside_projects(world: World, alice) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    project = create_project(by=alice, slug="p", title="P", collection=world.document.collection)
    scoped = _client(issue_token(alice, "project p", project=project).key)
    assert scoped.get("/api/imports/").status_code == 403
    assert scoped.get("/api/jobs/").status_code == 403
    refused = scoped.post("/api/collections/", {"slug": "new", "title": "New", "dictionary": "mini"}, format="json")
    assert refused.status_code == 403 and "kept to project" in refused.json()["detail"]
    assert not Collection.objects.filter(slug="new").exists()
    assert scoped.get("/api/dictionaries/").status_code == 200
    decision = scoped.post(f"/api/mentions/{world.mention.pk}/decision/",
                           {"action": "reject", "updated_at": world.mention.updated_at.isoformat()}, format="json")
    assert 200 <= decision.status_code < 300, decision.content
