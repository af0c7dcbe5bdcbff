"""Team curation end to end on the demo collection: permissions, assignment, blind copies, done, agreement,
adjudication onto the project's documents, and the refusals that keep work from being lost."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.integration import project_fixtures
from tests.integration.project_fixtures import annotate, copy_of, make_user
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.projects.models import Adjudication, Assignment, Member, Project
from webapp.projects.services import ProjectError
from webapp.projects.services.membership import add_member, create_project, remove_member
from webapp.teamwork.agreement import project_agreement
from webapp.teamwork.services.adjudication import apply_agreed, document_units, open_disagreements, resolve
from webapp.teamwork.services.assignment import Mode, assign, mark_done, unassign
from webapp.vocab.models import Name

pytestmark = pytest.mark.django_db(transaction=True)
demo_collection = project_fixtures.demo_collection
team = project_fixtures.team


def client_for(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def assign_all(t: dict) -> list[Assignment]:  # type: ignore[type-arg]
    return assign(t["project"], mode=Mode.PER_DOCUMENT, annotators=[t["bob"], t["dave"]], by=t["alice"])


# --- assignment ---------------------------------------------------------------------------------------------


def test_n_per_document_gives_every_document_two_annotators_each_on_a_blind_copy(team) -> None:  # type: ignore[no-untyped-def]
    created = assign_all(team)
    documents = Document.objects.filter(collection=team["collection"]).count()
    assert len(created) == 2 * documents
    bob_copy = copy_of(team["project"], "demo-1", team["bob"]).copy
    source = Document.objects.get(collection=team["collection"], external_id="demo-1")
    assert bob_copy.collection.is_workspace and bob_copy.text == source.text
    assert [(m.start, m.end) for m in bob_copy.mentions.order_by("start")] == [(m.start, m.end) for m in source.mentions.order_by("start")]
    # The copy holds the model's suggestions but no gold link and no decision: each annotator starts alike.
    assert not Link.objects.filter(mention__document=bob_copy).exclude(origin=Link.Origin.MODEL).exists()
    assert set(bob_copy.mentions.values_list("status", flat=True)) <= {Mention.Status.SUGGESTED, Mention.Status.PENDING}
    # Topping up again finds nothing to do.
    with pytest.raises(ProjectError, match="already has its annotators"):
        assign_all(team)


def test_assigning_a_document_twice_to_the_same_annotator_is_refused_and_nothing_is_written(team) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(collection=team["collection"], external_id="demo-1")
    other = Document.objects.get(collection=team["collection"], external_id="demo-2")
    assign(team["project"], mode=Mode.MANUAL, annotators=[team["bob"]], documents=[doc], by=team["alice"])
    with pytest.raises(ProjectError, match="already assigned: demo-1 to bob"):
        assign(team["project"], mode=Mode.MANUAL, annotators=[team["bob"]], documents=[other, doc], by=team["alice"])
    assert Assignment.objects.filter(project=team["project"]).count() == 1  # demo-2 was not assigned either


def test_round_robin_deals_each_unassigned_document_to_the_next_annotator(team) -> None:  # type: ignore[no-untyped-def]
    created = assign(team["project"], mode=Mode.ROUND_ROBIN, annotators=[team["bob"], team["dave"]], by=team["alice"])
    owners = [a.annotator.username for a in sorted(created, key=lambda a: a.document_id)]
    assert owners == ["bob", "dave"] * (len(owners) // 2) + ["bob"] * (len(owners) % 2)


def test_only_annotators_of_the_project_can_be_assigned(team) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProjectError, match="frank is not an annotator"):
        assign(team["project"], mode=Mode.ROUND_ROBIN, annotators=[team["frank"]], by=team["alice"])


# --- refusals that keep work ------------------------------------------------------------------------------


def test_removing_an_annotator_with_open_work_is_refused_with_the_documents(team) -> None:  # type: ignore[no-untyped-def]
    assign_all(team)
    member = Member.objects.get(project=team["project"], user=team["bob"], role=Member.Role.ANNOTATOR)
    with pytest.raises(ProjectError, match=r"bob has 6 documents not done .*demo-1"):
        remove_member(member)
    assert Member.objects.filter(pk=member.pk).exists()


def test_unassigning_a_copy_that_holds_decisions_is_refused(team) -> None:  # type: ignore[no-untyped-def]
    assign_all(team)
    assignment = copy_of(team["project"], "demo-1", team["bob"])
    mention = assignment.copy.mentions.order_by("start").first()
    from webapp.curation import services

    services.decide(user=team["bob"], mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at, part=None)
    with pytest.raises(ProjectError, match="bob has made 1 decision on demo-1"):
        unassign(assignment)
    unassign(copy_of(team["project"], "demo-2", team["bob"]))  # no decision yet: goes, with its copy
    assert not Assignment.objects.filter(project=team["project"], annotator=team["bob"], document__external_id="demo-2").exists()


def test_marking_done_with_open_mentions_is_refused(team) -> None:  # type: ignore[no-untyped-def]
    assign_all(team)
    assignment = copy_of(team["project"], "demo-1", team["bob"])
    with pytest.raises(ProjectError, match="9 mentions are still open"):
        mark_done(assignment, team["bob"])
    with pytest.raises(ProjectError, match="only bob can mark"):
        mark_done(assignment, team["dave"])


def test_a_concept_filter_that_matches_nothing_is_refused(demo_collection, alice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProjectError):
        create_project(by=alice, slug="empty", title="Empty", collection=demo_collection, concept_roots=["MESH:NOPE"])
    assert not Project.objects.filter(slug="empty").exists()


def test_adding_a_member_twice_or_without_a_role_is_refused(team) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProjectError, match="bob is an annotator of Duo already"):
        add_member(team["project"], team["bob"], Member.Role.ANNOTATOR, team["alice"])
    nobody = make_user("nobody", None)
    with pytest.raises(ProjectError, match="no curator role"):
        add_member(team["project"], nobody, Member.Role.ANNOTATOR, team["alice"])


# --- annotation stays private -------------------------------------------------------------------------------


def test_an_annotators_decisions_teach_the_dictionary_nothing_before_adjudication(team) -> None:  # type: ignore[no-untyped-def]
    assign_all(team)
    names = Name.objects.count()
    annotate(copy_of(team["project"], "demo-1", team["bob"]), team["bob"], {"NIDDM": "MESH:D006973"})
    assert Name.objects.count() == names  # no curator synonym, so dave's panel cannot show bob's choice


# --- agreement and adjudication -----------------------------------------------------------------------------


def test_agreement_then_adjudication_writes_the_chosen_decision_to_the_project_document(team) -> None:  # type: ignore[no-untyped-def]
    project, bob, dave, erin = team["project"], team["bob"], team["dave"], team["erin"]
    doc = Document.objects.get(collection=team["collection"], external_id="demo-1")
    assign(project, mode=Mode.MANUAL, annotators=[bob, dave], documents=[doc], by=team["alice"])
    annotate(copy_of(project, "demo-1", bob), bob)
    annotate(copy_of(project, "demo-1", dave), dave, {"NIDDM": "MESH:D006973", "obese": "REJECT"})
    with pytest.raises(ProjectError, match="waiting for dave"):
        mark_done(copy_of(project, "demo-1", bob), bob)
        resolve(project, doc, start=105, end=110, user=erin, annotator="bob")
    mark_done(copy_of(project, "demo-1", dave), dave)

    _, units = document_units(project, doc)
    disputed = [u for u in units if not u.agreed]
    assert [u.text for u in disputed] == ["NIDDM", "obese"]
    figures = project_agreement(project)
    pair = figures.report.pairs[0]
    assert pair.spans.exact == 8 and pair.spans.spans_a == 9 and pair.spans.spans_b == 8
    assert pair.links.items == 8 and pair.links.agreed == 7
    assert figures.open_disagreements == 2

    niddm = next(u for u in disputed if u.text == "NIDDM")
    adjudication = resolve(project, doc, start=niddm.start, end=niddm.end, user=erin, annotator="bob")
    assert adjudication.state == Adjudication.State.ADJUDICATED and adjudication.chosen_annotator == bob
    assert adjudication.annotator_labels == {"bob": niddm.labels["bob"], "dave": "MESH:D006973"}
    source = Mention.objects.get(document=doc, start=niddm.start, end=niddm.end)
    link = Link.objects.filter(mention=source, origin=Link.Origin.CURATOR).latest("created_at")
    assert link.concept.concept_id == niddm.labels["bob"] and link.created_by == erin
    decision = Decision.objects.get(pk=adjudication.decision_id)
    assert decision.via == Decision.Via.ADJUDICATION and decision.user == erin

    assert open_disagreements(project, doc) == 1
    assert project_agreement(project).open_disagreements == 1
    rates = {w.annotator: w.rate for w in project_agreement(project).with_adjudicated}
    assert rates == {"bob": 1.0, "dave": 0.0}

    written = apply_agreed(project, doc, erin)
    assert written == 7
    assert Adjudication.objects.filter(project=project, document=doc, state=Adjudication.State.AGREED).count() == 7
    assert apply_agreed(project, doc, erin) == 0  # nothing twice
    obese = next(u for u in disputed if u.text == "obese")
    resolve(project, doc, start=obese.start, end=obese.end, user=erin, label="REJECT")
    assert Mention.objects.get(document=doc, start=obese.start, end=obese.end).status == Mention.Status.REJECTED
    assert open_disagreements(project, doc) == 0


def test_single_annotation_writes_the_annotators_decisions_when_they_finish(demo_collection, alice) -> None:  # type: ignore[no-untyped-def]
    bob = make_user("bob")
    project = create_project(by=alice, slug="solo", title="Solo", collection=demo_collection, annotators_per_document=1)
    add_member(project, bob, Member.Role.ANNOTATOR, alice)
    doc = Document.objects.get(collection=demo_collection, external_id="demo-1")
    assign(project, mode=Mode.MANUAL, annotators=[bob], documents=[doc], by=alice)
    annotate(copy_of(project, "demo-1", bob), bob)
    mark_done(copy_of(project, "demo-1", bob), bob)
    assert Adjudication.objects.filter(project=project, document=doc).count() == doc.mentions.count()
    assert not doc.mentions.filter(status__in=[Mention.Status.PENDING, Mention.Status.SUGGESTED]).exists()


# --- permissions ---------------------------------------------------------------------------------------------


def test_permissions_matrix(team, charlie) -> None:  # type: ignore[no-untyped-def]
    project, alice, bob, dave, erin, frank = (team[k] for k in ("project", "alice", "bob", "dave", "erin", "frank"))
    assign_all(team)
    other_collection = Collection.objects.create(slug="other", title="Other", dictionary=team["collection"].dictionary)
    Document.objects.create(collection=other_collection, external_id="o-1", text="Asthma in children.")
    other = create_project(by=alice, slug="other-project", title="Other project", collection=other_collection, annotators_per_document=1)
    add_member(other, frank, Member.Role.ANNOTATOR, alice)

    bob_copy = copy_of(project, "demo-1", bob).copy
    copy_url = f"/curate/{bob_copy.collection.slug}/documents/{bob_copy.pk}/"
    pages = {
        "project": "/projects/duo/", "other": "/projects/other-project/", "queue": "/projects/duo/queue/",
        "agreement": "/projects/duo/agreement/", "adjudication": "/projects/duo/adjudicate/",
        "collection": "/collections/demo/", "curate": "/curate/demo/", "bob_copy": copy_url,
    }
    expected = {
        # annotator: own project, own queue and copy; not the other project, not agreement/adjudication, not dave's view
        bob: {"project": 200, "other": 403, "queue": 200, "agreement": 403, "adjudication": 403, "collection": 200, "curate": 200, "bob_copy": 200},
        dave: {"bob_copy": 403, "adjudication": 403},
        erin: {"project": 200, "agreement": 200, "adjudication": 200, "bob_copy": 200, "other": 403},
        frank: {"project": 403, "collection": 403, "curate": 403, "bob_copy": 403, "other": 200},
        alice: {"project": 200, "other": 200, "agreement": 200, "adjudication": 200, "bob_copy": 200},
        charlie: {"project": 403, "collection": 403},
    }
    for user, codes in expected.items():
        client = client_for(user)
        for page, code in codes.items():
            assert client.get(pages[page]).status_code == code, (user.username, page)

    # Only the manager assigns; only the annotator decides on their copy; only adjudicators resolve.
    doc = Document.objects.get(collection=team["collection"], external_id="demo-1")
    assert client_for(bob).post("/projects/duo/assign/", {"mode": "round_robin", "annotators": ["bob"]}).status_code == 403
    assert client_for(alice).post("/projects/duo/assign/", {"mode": "round_robin", "annotators": ["bob"]}).status_code == 302
    mention = bob_copy.mentions.order_by("start").first()
    body = {"action": "nil", "seen": mention.updated_at.isoformat(), "part": ""}
    assert client_for(dave).post(f"/curate/mentions/{mention.pk}/decide/", body).status_code == 403
    assert client_for(erin).post(f"/curate/mentions/{mention.pk}/decide/", body).status_code == 403
    # Annotators decide on their copies, not on the project's documents themselves.
    source_mention = doc.mentions.order_by("start").first()
    body = {"action": "nil", "seen": source_mention.updated_at.isoformat(), "part": ""}
    assert client_for(bob).post(f"/curate/mentions/{source_mention.pk}/decide/", body).status_code == 403
    assert client_for(bob).post(f"/projects/duo/adjudicate/{doc.pk}/resolve/", {"start": 0, "end": 15, "label": "NIL"}).status_code == 403
    # Lists: frank does not see the project's collection, nobody sees workspaces.
    listed = client_for(frank).get("/collections/").content.decode()
    assert "/collections/demo/" not in listed and "/collections/other/" in listed
    assert bob_copy.collection.slug not in client_for(alice).get("/collections/").content.decode()
    # The API agrees.
    api = client_for(frank)
    assert api.get("/api/collections/demo/").status_code == 404
    assert api.get(f"/api/documents/{doc.pk}/").status_code == 404
    assert client_for(bob).get(f"/api/documents/{doc.pk}/").status_code == 200




# --- the pages say what went wrong ------------------------------------------------------------------------------


def test_the_pages_say_why_a_filter_or_an_assignment_was_refused(team) -> None:  # type: ignore[no-untyped-def]
    manager = client_for(team["alice"])
    answer = manager.post("/projects/new/", {"title": "X", "slug": "x", "collection": "demo", "annotators_per_document": 2,
                                              "concept_roots": "MESH:NOPE"})
    assert answer.status_code == 400 and "MESH:NOPE" in answer.content.decode()
    assert not Project.objects.filter(slug="x").exists()

    body = {"mode": "manual", "annotators": ["bob"], "documents": "demo-1"}
    manager.post("/projects/duo/assign/", body)
    page = manager.post("/projects/duo/assign/", body, follow=True).content.decode()
    assert "Nothing assigned: already assigned: demo-1 to bob" in page
    assert Assignment.objects.filter(project=team["project"]).count() == 1

    member = Member.objects.get(project=team["project"], user=team["bob"], role=Member.Role.ANNOTATOR)
    page = manager.post(f"/projects/duo/members/{member.pk}/remove/", follow=True).content.decode()
    assert "bob has 1 document not done in Duo (demo-1)" in page
    assert Member.objects.filter(pk=member.pk).exists()
