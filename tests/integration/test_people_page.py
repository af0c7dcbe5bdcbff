"""The users page: admins list accounts with role, state, last login and activity; create and invite users, set
roles, deactivate (no login, no session, no token) and reactivate; project managers add members. Every write
leaves its audit event."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from rest_framework.test import APIClient

from tests.conftest import PASSWORD, _user
from webapp.audit.models import AuditEvent
from webapp.core.roles import role_of
from webapp.corpus.models import Collection
from webapp.people.tokens import issue_token
from webapp.projects.models import Member
from webapp.projects.services.membership import create_project

pytestmark = pytest.mark.django_db


def _logs_in(client, username: str, password: str) -> bool:  # type: ignore[no-untyped-def]
    """Through the login page, as a person does (django-axes wants the request)."""
    client.post("/accounts/login/", {"username": username, "password": password})
    return "_auth_user_id" in client.session


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_only_admins_and_project_managers_open_the_page(client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    refused = client.get("/people/")
    assert refused.status_code == 403 and "admin role" in refused.content.decode()
    client.force_login(alice)
    page = client.get("/people/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="user-table"' in body and "bob" in body and 'data-role="curator"' in body


def test_the_list_shows_role_state_last_login_and_decisions(client, alice, bob, charlie) -> None:  # type: ignore[no-untyped-def]
    from webapp.people.services import user_rows

    assert _logs_in(client, "bob", PASSWORD)
    rows = {r.user.username: r for r in user_rows()}
    assert rows["alice"].role == "admin" and rows["bob"].role == "curator" and rows["charlie"].role == ""
    assert rows["bob"].user.last_login is not None and rows["charlie"].user.last_login is None
    assert rows["bob"].decisions == 0 and rows["bob"].last_decision is None
    assert [r.user.username for r in user_rows("BO")] == ["bob"]
    assert [r.user.username for r in user_rows("alice@example")] == ["alice"]


def test_activity_counts_decisions_and_the_last_ones_time(alice, bob) -> None:  # type: ignore[no-untyped-def]
    from webapp.corpus.models import Document
    from webapp.curation.models import Decision
    from webapp.people.services import user_rows

    document = Document.objects.create(collection=Collection.objects.create(slug="c", title="C"), external_id="1", text="x")
    made = [Decision.objects.create(document=document, mention_text="x", action="nil", user=bob) for _ in range(3)]
    rows = {r.user.username: r for r in user_rows()}
    assert rows["bob"].decisions == 3 and rows["bob"].last_decision == max(d.created_at for d in made)
    assert rows["alice"].decisions == 0


def test_an_admin_creates_a_user_and_the_invitation_sets_a_password(client, alice) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    response = client.post("/people/new/", {"username": "dana", "email": "dana@example.org", "role": "viewer", "invite": "on"})
    assert response.status_code == 302
    dana = get_user_model().objects.get(username="dana")
    assert role_of(dana) == "viewer" and not dana.has_usable_password()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["dana@example.org"]
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body)
    assert link is not None
    assert set(AuditEvent.objects.filter(object_id=str(dana.pk)).values_list("action", flat=True)) == {"user.created", "user.invited"}

    client.logout()
    form = client.get(link.group(1), follow=True)  # Django swaps the token for a session key, then shows the form
    assert form.status_code == 200
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"})
    assert done.status_code == 302
    assert _logs_in(type(client)(), "dana", "a-new-long-passphrase")


def test_a_user_name_is_not_taken_twice(client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    response = client.post("/people/new/", {"username": "BOB", "email": "", "role": "curator"}, follow=True)
    assert "exists already" in response.content.decode()


def test_an_admin_sets_roles_and_the_change_is_audited(client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    assert client.post(f"/people/{bob.pk}/role/", {"role": "viewer"}).status_code == 302
    bob.refresh_from_db()
    assert role_of(get_user_model().objects.get(pk=bob.pk)) == "viewer"
    event = AuditEvent.objects.get(action="user.role_changed")
    assert event.actor == alice and event.before == {"role": "curator"} and event.after == {"role": "viewer"}
    refused = client.post(f"/people/{alice.pk}/role/", {"role": "curator"}, follow=True)
    assert "last active admin" in refused.content.decode()
    assert role_of(get_user_model().objects.get(pk=alice.pk)) == "admin"


def test_a_curator_cannot_change_roles(client, bob, charlie) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    assert client.post(f"/people/{charlie.pk}/role/", {"role": "admin"}).status_code == 403
    assert client.post(f"/people/{charlie.pk}/active/", {"active": "0"}).status_code == 403
    assert role_of(get_user_model().objects.get(pk=charlie.pk)) == ""


def test_a_deactivated_user_loses_login_session_and_tokens(client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    bobs = type(client)()
    assert _logs_in(bobs, "bob", PASSWORD)
    assert bobs.get("/collections/").status_code == 200
    key = issue_token(bob, "pipeline").key
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/dictionaries/").status_code == 200

    client.force_login(alice)
    assert client.post(f"/people/{bob.pk}/active/", {"active": "0"}).status_code == 302
    assert bobs.get("/collections/").status_code == 302  # the session no longer authenticates: to the login page
    assert not _logs_in(type(client)(), "bob", PASSWORD)
    assert api.get("/api/dictionaries/").status_code == 401
    assert AuditEvent.objects.filter(action="user.deactivated", object_id=str(bob.pk), actor=alice).exists()

    assert client.post(f"/people/{bob.pk}/active/", {"active": "1"}).status_code == 302
    assert _logs_in(type(client)(), "bob", PASSWORD)
    assert api.get("/api/dictionaries/").status_code == 200
    assert AuditEvent.objects.filter(action="user.reactivated", object_id=str(bob.pk)).exists()


def test_an_admin_cannot_deactivate_themselves(client, alice) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    response = client.post(f"/people/{alice.pk}/active/", {"active": "0"}, follow=True)
    assert "cannot deactivate your own account" in response.content.decode()
    alice.refresh_from_db()
    assert alice.is_active


def test_a_project_manager_adds_members_to_their_project_only(client, alice, bob, django_user_model) -> None:  # type: ignore[no-untyped-def]
    erin = _user(django_user_model, "erin", "curator")
    collection = Collection.objects.create(slug="c", title="C")
    mine = create_project(by=bob, slug="mine", title="Mine", collection=collection)
    theirs = create_project(by=alice, slug="theirs", title="Theirs", collection=Collection.objects.create(slug="d", title="D"))
    client.force_login(bob)
    page = client.get("/people/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="add-member"' in body and 'id="user-table"' not in body and 'value="mine"' in body and 'value="theirs"' not in body
    assert client.post("/people/members/", {"username": "erin", "project": "mine", "role": "annotator"}).status_code == 302
    assert Member.objects.filter(project=mine, user=erin, role="annotator").exists()
    client.post("/people/members/", {"username": "erin", "project": "theirs", "role": "annotator"})
    assert not Member.objects.filter(project=theirs, user=erin).exists()
    assert AuditEvent.objects.filter(action="member.added", actor=bob).exists()


def test_the_tokens_page_shows_the_key_once_and_revokes(client, alice, bob) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    created = client.post("/people/tokens/", {"name": "nightly", "read_only": "on"})
    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    key = re.search(r'id="issued-key" value="(elw_[^"]+)"', created.content.decode())
    assert key is not None
    listed = client.get("/people/tokens/").content.decode()
    assert "nightly" in listed and key.group(1) not in listed and key.group(1)[:12] in listed
    token = bob.api_tokens.get()
    assert token.read_only
    issue_token(alice, "alice's")
    assert "alice&#x27;s" not in listed
    assert "alice&#x27;s" not in client.get("/people/tokens/").content.decode()  # a user sees their own tokens
    alices = alice.api_tokens.get()
    assert client.post(f"/people/tokens/{alices.pk}/revoke/").status_code == 403
    assert client.post(f"/people/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    client.force_login(alice)
    everyone = client.get("/people/tokens/").content.decode()
    assert "nightly" in everyone and "alice&#x27;s" in everyone  # an admin sees every user's tokens


def test_create_api_token_prints_a_working_key(bob) -> None:  # type: ignore[no-untyped-def]
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", "bob", "--name", "cron", "--days", "0", "--read-only", stdout=out)
    key = out.getvalue().strip()
    token = bob.api_tokens.get()
    assert key.startswith(token.prefix) and token.name == "cron" and token.expires_at is None and token.read_only
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/dictionaries/").status_code == 200
