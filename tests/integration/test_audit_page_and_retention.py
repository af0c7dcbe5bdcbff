"""The audit log itself: append-only in the database (the trigger), the admins' page with its filters, the JSON
Lines export and its round trip, and the retention sweep (webapp.audit; docs/audit.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, transaction
from django.test import Client
from django.utils import timezone

from webapp.audit import actions
from webapp.audit.events import record
from webapp.audit.export import FIELDS, read_jsonl
from webapp.audit.models import AuditEvent
from webapp.audit.retention import sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(alice, bob) -> list[AuditEvent]:  # type: ignore[no-untyped-def]
    """Four events: bob's decision, alice's import, a failed login (the system's) and alice's change of settings."""
    return [
        record(actions.DECISION_MADE, actor=bob, object_type="decision", object_id=7, label="nil “asthma”",
               before={"status": "suggested"}, after={"action": "nil", "concept": None}, link="/curate/demo/documents/1/#mention-3"),
        record(actions.IMPORT_STARTED, actor=alice, object_type="importjob", object_id=12, label="train.txt → ncbi",
               after={"kind": "documents", "file": "train.txt"}),
        record(actions.LOGIN_FAILED, object_type="user", label="mallory", after={"username": "mallory"}),
        record(actions.SETTINGS_CHANGED, actor=alice, object_type="project", object_id=1, before={"title": "P"},
               after={"title": "Ünïcode ✓"}),
    ]


def _at(event: AuditEvent, when) -> AuditEvent:  # type: ignore[no-untyped-def]
    """A copy of ``event`` made at ``when`` (events cannot be changed after they are written)."""
    fields = {name: getattr(event, name) for name in FIELDS if name not in ("id", "at")}
    return AuditEvent.objects.create(at=when, **fields)


# --- append-only -------------------------------------------------------------------------------------------------


def test_the_database_refuses_to_change_or_delete_an_event(log) -> None:  # type: ignore[no-untyped-def]
    event = log[0]
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(action="decision.undone")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        event.after = {"action": "accept"}
        event.save()
    assert AuditEvent.objects.get(pk=event.pk).action == actions.DECISION_MADE


def test_an_actor_deleted_leaves_their_events_by_name(django_user_model) -> None:  # type: ignore[no-untyped-def]
    gone = django_user_model.objects.create_user(username="gone", password="x")
    event = record(actions.LOGIN_SUCCEEDED, actor=gone, obj=gone)
    gone.delete()  # the one UPDATE the trigger lets through: the actor set to NULL, nothing else
    event = AuditEvent.objects.get(pk=event.pk)
    assert (event.actor_id, event.actor_name, event.action) == (None, "gone", actions.LOGIN_SUCCEEDED)


# --- the page --------------------------------------------------------------------------------------------------


def _ids(response) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(part.split('"', 1)[0]) for part in response.content.decode().split('<tr id="audit-')[1:]]


def test_the_page_is_the_admins_only(log, bob_client: Client, charlie) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    response = client.get("/audit/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.get("/audit/export.jsonl").status_code == 302
    assert bob_client.get("/audit/").status_code == 403  # a curator
    assert bob_client.get("/audit/export.jsonl").status_code == 403
    client.force_login(charlie)
    assert client.get("/audit/").status_code == 403


def test_the_page_lists_newest_first_and_filters(log, alice_client: Client) -> None:  # type: ignore[no-untyped-def]
    decision, started, failed, changed = log
    copy = _at(decision, timezone.now() - timedelta(days=3))
    response = alice_client.get("/audit/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/audit/"' in page and ">Audit</a>" in page  # the nav link, admins'
    # Newest first: the test client's login (an event too), the four, then the copy made three days ago.
    login = AuditEvent.objects.get(action=actions.LOGIN_SUCCEEDED)
    assert _ids(response) == [login.pk, changed.pk, failed.pk, started.pk, decision.pk, copy.pk]
    assert "/curate/demo/documents/1/#mention-3" in page and "&quot;status&quot;: &quot;suggested&quot;" in page
    assert _ids(alice_client.get("/audit/?actor=bob")) == [decision.pk, copy.pk]
    assert _ids(alice_client.get("/audit/?actor=system")) == [failed.pk]
    assert _ids(alice_client.get("/audit/?action=import.started")) == [started.pk]
    assert _ids(alice_client.get("/audit/?action=settings")) == [changed.pk]  # a kind of action
    assert _ids(alice_client.get("/audit/?object_type=importjob&object_id=12")) == [started.pk]
    today = timezone.localdate()
    assert len(_ids(alice_client.get(f"/audit/?date_from={today}&date_to={today}"))) == 5
    assert _ids(alice_client.get(f"/audit/?date_to={today - timedelta(days=2)}")) == [copy.pk]
    assert _ids(alice_client.get("/audit/?action=login.succeeded&actor=ALICE")) == [login.pk]
    bad = alice_client.get(f"/audit/?date_from={today}&date_to={today - timedelta(days=1)}")
    assert bad.status_code == 400 and "is after the date to" in bad.content.decode()


def test_the_page_is_paginated(alice, alice_client: Client) -> None:  # type: ignore[no-untyped-def]
    for i in range(55):
        record(actions.LOGOUT, actor=alice, object_type="user", object_id=i)
    first, second = alice_client.get("/audit/?action=logout"), alice_client.get("/audit/?action=logout&page=2")
    assert len(_ids(first)) == 50 and len(_ids(second)) == 5
    assert "action=logout&amp;page=2" in first.content.decode()
    assert min(_ids(first)) > max(_ids(second))


# --- the export ----------------------------------------------------------------------------------------------


def _from_db(pks: list[int]) -> list[dict]:  # type: ignore[type-arg]
    return [{name: getattr(e, name) for name in FIELDS} for e in AuditEvent.objects.filter(pk__in=pks).order_by("at", "pk")]


def test_the_export_gives_back_every_field_of_every_event(log, alice_client: Client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.get("/audit/export.jsonl")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = b"".join(response.streaming_content).decode().splitlines()
    pks = list(AuditEvent.objects.values_list("pk", flat=True))  # the four and the test client's login
    assert len(pks) == 5
    assert list(read_jsonl(lines)) == _from_db(pks)
    assert [json.loads(line)["after"] for line in lines if f'"id": {log[3].pk},' in line] == [{"title": "Ünïcode ✓"}]

    out = tmp_path / "audit.jsonl"
    call_command("audit_export", output=str(out))
    assert list(read_jsonl(out.read_text(encoding="utf-8").splitlines())) == _from_db(pks)


def test_the_export_takes_the_page_filters(log, alice_client: Client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    query = "/audit/export.jsonl?actor=alice&object_type=importjob"
    lines = b"".join(alice_client.get(query).streaming_content).decode().splitlines()
    assert [e["id"] for e in read_jsonl(lines)] == [log[1].pk]
    out = tmp_path / "audit.jsonl"
    call_command("audit_export", output=str(out), action="decision")
    assert [e["id"] for e in read_jsonl(out.read_text().splitlines())] == [log[0].pk]
    assert alice_client.get("/audit/export.jsonl?date_from=not-a-date").status_code == 400


# --- retention -----------------------------------------------------------------------------------------------


def test_retention_removes_only_what_is_older_and_says_so(log, settings) -> None:  # type: ignore[no-untyped-def]
    old = [_at(log[0], timezone.now() - timedelta(days=400)), _at(log[1], timezone.now() - timedelta(days=366))]
    kept = _at(log[2], timezone.now() - timedelta(days=364))
    settings.AUDIT_RETENTION_DAYS = 0
    assert sweep() == 0  # 0 keeps every event
    settings.AUDIT_RETENTION_DAYS = 365
    assert sweep(batch=1) == 2  # in batches, each its own transaction
    assert not AuditEvent.objects.filter(pk__in=[e.pk for e in old]).exists()
    assert AuditEvent.objects.filter(pk__in=[e.pk for e in log] + [kept.pk]).count() == 5
    pruned = AuditEvent.objects.get(action=actions.AUDIT_PRUNED)
    assert pruned.actor is None and pruned.after["removed"] == 2 and pruned.after["retention_days"] == 365
    assert sweep() == 0


def test_the_sweep_is_on_the_beat_schedule() -> None:
    from tasks.audit import sweep_audit_log
    from webapp.celery import app

    entry = app.conf.beat_schedule["audit-retention"]
    assert entry["task"] == sweep_audit_log.name == "tasks.audit.sweep_audit_log"
    assert "tasks.audit" in app.conf.include


# --- the API -------------------------------------------------------------------------------------------------


def test_the_api_lists_the_log_for_admins_with_the_page_filters(log, alice, bob) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    api = APIClient()
    assert api.get("/api/audit/").status_code == 401
    api.force_authenticate(bob)
    assert api.get("/api/audit/").status_code == 403  # a curator
    api.force_authenticate(alice)
    body = api.get("/api/audit/").json()
    assert [e["id"] for e in body["results"]] == [e.pk for e in reversed(log)]
    assert set(body["results"][0]) == set(FIELDS)
    assert [e["id"] for e in api.get("/api/audit/?actor=system").json()["results"]] == [log[2].pk]
    assert [e["id"] for e in api.get("/api/audit/?action=decision").json()["results"]] == [log[0].pk]
    today = timezone.localdate()
    assert api.get(f"/api/audit/?date_to={today - timedelta(days=1)}").json()["results"] == []
    assert api.get("/api/audit/?date_from=not-a-date").status_code == 400
    event = api.get(f"/api/audit/{log[0].pk}/").json()
    assert event["before"] == {"status": "suggested"} and event["actor_name"] == "bob"
    assert api.post("/api/audit/", {}).status_code == 405  # nothing writes the log through the API
