"""Every kind of write records exactly one audit event, in its own transaction, with who did it, what it changed
(the object's kind and id) and a short before/after (webapp.audit; docs/audit.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tasks.imports import run_import
from tests.conftest import PASSWORD
from tests.integration.project_fixtures import make_user
from tests.integration.test_promotion_gate import _candidate, _evaluated, _gate, _setup
from tests.integration.test_training_runs import TINY, _collection, _dictionary
from webapp.audit import actions
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Collection, Mention
from webapp.curation import services
from webapp.curation.models import Decision
from webapp.curation.services.auto_accept import set_threshold
from webapp.imports.models import ImportJob
from webapp.linking.models import IndexVersion
from webapp.projects.models import Member
from webapp.projects.services.membership import add_member, create_project, remove_member, update_settings
from webapp.training.loop import save_gate, save_policy
from webapp.training.runs import cancel_run, start_run

pytestmark = pytest.mark.django_db

PUBTATOR = "7|t|Asthma in children.\n7|a|Asthma is common.\n7\t0\t6\tAsthma\tDisease\tD001249\n\n"


def only(action: str, **fields: Any) -> AuditEvent:
    """The one event of ``action`` (of ``object_type`` when given: the test fails if there are none or several),
    checked against ``fields``."""
    found = list(AuditEvent.objects.filter(action=action, **{k: v for k, v in fields.items() if k == "object_type"}))
    assert len(found) == 1, f"{len(found)} {action} events: {found}"
    event = found[0]
    for name, value in fields.items():
        assert getattr(event, name) == value, f"{action}.{name}: {getattr(event, name)!r}, expected {value!r}"
    return event


# --- curation -------------------------------------------------------------------------------------------------


def test_a_decision_and_its_undo_each_record_one_event_linking_to_the_mention(demo, bob) -> None:  # type: ignore[no-untyped-def]
    mention = Mention.objects.filter(document__collection=demo).order_by("pk").first()
    assert mention is not None
    outcome = services.decide(user=bob, mention_id=mention.pk, action=Decision.Action.NIL,
                              seen_updated_at=mention.updated_at)
    link = f"/curate/demo/documents/{mention.document_id}/#mention-{mention.pk}"
    made = only(actions.DECISION_MADE, actor=bob, actor_name="bob", object_type="decision",
                object_id=str(outcome.decision.pk), link=link)
    assert made.before == {"status": mention.status} and made.after["action"] == "nil"

    services.undo(user=bob, decision_id=outcome.decision.pk)
    undone = only(actions.DECISION_UNDONE, actor=bob, object_type="decision", object_id=str(outcome.decision.pk),
                  link=link)
    assert undone.after == {"status": mention.status, "undone": 1}
    assert AuditEvent.objects.filter(action__startswith="decision.").count() == 2


def test_adding_a_mention_is_a_decision_made(demo, bob) -> None:  # type: ignore[no-untyped-def]
    document = demo.documents.order_by("pk").first()
    decision = services.add_mention(user=bob, document_id=document.pk, start=0, end=4)
    event = only(actions.DECISION_MADE, actor=bob, object_id=str(decision.pk))
    assert event.after["action"] == "add_mention"


def test_a_refused_decision_records_nothing(demo, bob) -> None:  # type: ignore[no-untyped-def]
    mention = Mention.objects.filter(document__collection=demo).order_by("pk").first()
    with pytest.raises(services.CurationError):
        services.decide(user=bob, mention_id=mention.pk, action=Decision.Action.RELINK,
                        seen_updated_at=mention.updated_at)
    assert not AuditEvent.objects.filter(action__startswith="decision.").exists()


# --- imports --------------------------------------------------------------------------------------------------


def _queued_import(alice, settings, tmp_path, capture, text: str) -> ImportJob:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    client = Client()
    client.force_login(alice)
    with capture(execute=False):  # the worker's part is run by the test
        response = client.post("/imports/documents/", {"file": SimpleUploadedFile("train.txt", text.encode()),
                                                       "new_slug": "ncbi"})
    assert response.status_code == 302, response.content
    return ImportJob.objects.get()


def test_an_import_records_its_start_and_its_end(alice, settings, tmp_path, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    job = _queued_import(alice, settings, tmp_path, django_capture_on_commit_callbacks, PUBTATOR)
    started = only(actions.IMPORT_STARTED, actor=alice, object_type="importjob", object_id=str(job.pk))
    assert started.after["file"] == "train.txt" and started.link == f"/imports/?job={job.pk}"
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    finished = only(actions.IMPORT_FINISHED, actor=alice, object_type="importjob", object_id=str(job.pk))
    assert finished.after["documents"] == 1
    assert not AuditEvent.objects.filter(action=actions.IMPORT_FAILED).exists()


def test_a_failed_import_records_why(alice, settings, tmp_path, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    job = _queued_import(alice, settings, tmp_path, django_capture_on_commit_callbacks,
                         PUBTATOR.replace("\t0\t6\t", "\t0\t99\t"))
    assert run_import(job.pk) == ImportJob.State.FAILED
    failed = only(actions.IMPORT_FAILED, actor=alice, object_id=str(job.pk))
    assert "span 0-99 outside" in failed.after["error"]
    assert not AuditEvent.objects.filter(action=actions.IMPORT_FINISHED).exists()


def test_an_import_whose_worker_was_lost_records_its_failure(alice) -> None:  # type: ignore[no-untyped-def]
    from webapp.jobs.sweep import fail_lost_jobs

    job = ImportJob.objects.create(import_kind="documents", path="/nowhere/x.txt", params={}, created_by=alice,
                                   state=ImportJob.State.RUNNING)
    assert fail_lost_jobs()  # no lease held: the sweep fails it, through the import kind's fail
    failed = only(actions.IMPORT_FAILED, actor=alice, object_id=str(job.pk))
    assert "the worker running it stopped" in failed.after["error"]


# --- training, promotion, serving -----------------------------------------------------------------------------


def test_a_run_records_its_start_and_its_cancellation(alice) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    run = start_run(dictionary, [_collection(dictionary)], TINY, user=alice, send=False)
    started = only(actions.RUN_STARTED, actor=alice, object_type="trainingrun", object_id=str(run.pk),
                   link=f"/training/runs/{run.pk}/")
    assert started.after["collections"] == ["gold"] and started.after["dictionary"] == "mini"
    cancel_run(run.pk, user=alice)
    cancelled = only(actions.RUN_CANCELLED, actor=alice, object_id=str(run.pk))
    assert cancelled.before["state"] == "queued" and cancelled.after["state"] == "cancelled"
    cancel_run(run.pk, user=alice)  # an ended run: nothing changed, nothing recorded
    assert AuditEvent.objects.filter(action=actions.RUN_CANCELLED).count() == 1


def test_a_promotion_through_the_gate_records_the_promotion_and_the_activation(alice_client, alice) -> None:  # type: ignore[no-untyped-def]
    d, dev, _, active = _setup()
    _gate(d, dev)
    candidate, _ = _candidate(d)
    _evaluated(active, dev, 0.80)
    _evaluated(candidate, dev, 0.82)
    alice_client.post(f"/training/indexes/{candidate.pk}/promote/")
    assert IndexVersion.objects.get(pk=candidate.pk).state == IndexVersion.State.ACTIVE
    promoted = only(actions.MODEL_PROMOTED, actor=alice, object_type="indexversion", object_id=str(candidate.pk))
    assert promoted.before == {"active_index": active.pk} and promoted.after["gate"] == "passed"
    activated = only(actions.INDEX_ACTIVATED, actor=alice, object_type="indexversion", object_id=str(candidate.pk))
    assert activated.before == {"state": "ready", "active_index": active.pk}


def test_a_refused_promotion_records_nothing(alice_client) -> None:  # type: ignore[no-untyped-def]
    d, dev, _, active = _setup()
    _gate(d, dev)
    candidate, _ = _candidate(d)
    _evaluated(active, dev, 0.885)
    _evaluated(candidate, dev, 0.872)
    alice_client.post(f"/training/indexes/{candidate.pk}/promote/")
    assert not AuditEvent.objects.filter(action__in=[actions.MODEL_PROMOTED, actions.INDEX_ACTIVATED]).exists()


# --- projects and settings ------------------------------------------------------------------------------------


def test_members_added_their_roles_changed_and_removed(alice) -> None:  # type: ignore[no-untyped-def]
    collection = Collection.objects.create(slug="c", title="C")
    project = create_project(by=alice, slug="p", title="P", collection=collection)
    only(actions.PROJECT_CREATED, actor=alice, object_type="project", object_id=str(project.pk))
    bob = make_user("bob")
    annotator = add_member(project, bob, Member.Role.ANNOTATOR, alice)
    added = only(actions.MEMBER_ADDED, actor=alice, object_type="member", object_id=str(annotator.pk))
    assert added.before is None and added.after == {"roles": ["annotator"]}
    adjudicator = add_member(project, bob, Member.Role.ADJUDICATOR, alice)
    changed = only(actions.MEMBER_ROLE_CHANGED, actor=alice, object_id=str(adjudicator.pk))
    assert changed.before == {"roles": ["annotator"]} and changed.after == {"roles": ["adjudicator", "annotator"]}
    remove_member(annotator, by=alice)
    remove_member(adjudicator, by=alice)
    assert AuditEvent.objects.filter(action=actions.MEMBER_ROLE_CHANGED).count() == 2
    removed = only(actions.MEMBER_REMOVED, actor=alice, object_id=str(adjudicator.pk))
    assert removed.before == {"roles": ["adjudicator"]} and removed.after is None


def test_project_settings_and_its_concept_filter(alice) -> None:  # type: ignore[no-untyped-def]
    project = create_project(by=alice, slug="p", title="P", collection=Collection.objects.create(slug="c", title="C"))
    update_settings(project, title="P2", description="", annotators_per_document=3, concept_types=[],
                    concept_roots=[], by=alice)
    event = only(actions.SETTINGS_CHANGED, actor=alice, object_type="project", object_id=str(project.pk))
    assert (event.before["title"], event.after["title"]) == ("P", "P2")
    assert (event.before["annotators_per_document"], event.after["annotators_per_document"]) == (2, 3)
    update_settings(project, title="P2", description="", annotators_per_document=3, concept_types=[],
                    concept_roots=[], by=alice)  # nothing changed: nothing recorded
    assert AuditEvent.objects.filter(action=actions.SETTINGS_CHANGED).count() == 1


def test_the_gate_the_retrain_policy_and_auto_accept(alice) -> None:  # type: ignore[no-untyped-def]
    d, dev, train, _ = _setup()
    gate = save_gate(d, dev, 0.005, None, 20, False, user=alice)
    event = only(actions.SETTINGS_CHANGED, actor=alice, object_type="promotiongate", object_id=str(gate.pk))
    assert event.before is None and event.after["collection"] == "ncbi-dev"
    policy = save_policy(d, enabled=True, every_decisions=5, nightly=False, method="biosyn", params={},
                         collections=[train], user=alice)
    event = only(actions.SETTINGS_CHANGED, object_type="retrainpolicy", object_id=str(policy.pk), actor=alice)
    assert event.after["every_decisions"] == 5 and event.after["collections"] == ["ncbi-train"]
    set_threshold(train.pk, "0.9", user=alice)
    event = only(actions.SETTINGS_CHANGED, object_type="collection", object_id=str(train.pk), actor=alice)
    assert event.before == {"auto_accept_threshold": None} and event.after == {"auto_accept_threshold": 0.9}


# --- logins ---------------------------------------------------------------------------------------------------


def test_a_login_a_failed_login_and_a_logout(bob, client: Client) -> None:  # type: ignore[no-untyped-def]
    client.post("/accounts/login/", {"username": "bob", "password": "wrong"}, REMOTE_ADDR="10.0.0.7")
    failed = only(actions.LOGIN_FAILED, actor=None, actor_name="", address="10.0.0.7")
    assert failed.after == {"username": "bob"} and "wrong" not in str(failed.after)
    client.post("/accounts/login/", {"username": "bob", "password": PASSWORD}, REMOTE_ADDR="10.0.0.7")
    only(actions.LOGIN_SUCCEEDED, actor=bob, object_type="user", object_id=str(bob.pk), address="10.0.0.7")
    client.post("/accounts/logout/")
    only(actions.LOGOUT, actor=bob, object_id=str(bob.pk))
