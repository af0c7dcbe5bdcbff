"""Curator statistics from the decision log: pace with the idle cut-off, time on task, top-1 acceptance, per
curator and per project; and who may see which rows.

The project "trial": bob and frank annotate (bob two documents, one done; frank one), erin adjudicates, dave
manages; gina is a curator outside the project. Decisions are written with hand-set times (``created_at`` is
auto_now_add), so every figure below is computed by hand in the comments.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from webapp.corpus.models import Collection, Document
from webapp.curation.models import Decision
from webapp.curation.services.auto_accept import linker_user
from webapp.projects.models import Assignment, Member, Project, Workspace
from webapp.teamwork.stats import curator_stats, project_stats

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
Action = Decision.Action
Via = Decision.Via


def _decide(document: Document, user: Any, seconds: float, action: str = Action.ACCEPT, *, via: str = Via.CANDIDATE,
            rank: int | None = None, model: str = "", ms: int | None = None, undone: bool = False) -> Decision:
    decision = Decision.objects.create(document=document, mention_text="aspirin", action=action, via=via, rank=rank,
                                       model_version=model, time_on_task_ms=ms, user=user)
    when = T0 + timedelta(seconds=seconds)
    Decision.objects.filter(pk=decision.pk).update(
        created_at=when, undone_at=when + timedelta(seconds=1) if undone else None, undone_by=user if undone else None,
    )
    return decision


def _copy(project: Project, document: Document, annotator: Any, done: bool = False) -> Document:
    workspace = Workspace.objects.filter(project=project, annotator=annotator).first()
    if workspace is None:
        collection = Collection.objects.create(slug=f"{project.slug}-{annotator.username}", title=f"{annotator}'s copies", is_workspace=True)
        workspace = Workspace.objects.create(project=project, annotator=annotator, collection=collection)
    copy = Document.objects.create(collection=workspace.collection, external_id=document.external_id, text=document.text)
    Assignment.objects.create(project=project, document=document, annotator=annotator, copy=copy,
                              state=Assignment.State.DONE if done else Assignment.State.ASSIGNED, done_at=T0 if done else None)
    return copy


@pytest.fixture
def team(db, bob, django_user_model) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    curators = Group.objects.get_or_create(name="curator")[0]
    people = {"bob": bob}
    for name in ("dave", "erin", "frank", "gina"):
        people[name] = django_user_model.objects.create_user(username=name, email=f"{name}@example.org")
        people[name].groups.add(curators)
    collection = Collection.objects.create(slug="trial-docs", title="Trial documents")
    first = Document.objects.create(collection=collection, external_id="PMID1", text="Aspirin helps.")
    second = Document.objects.create(collection=collection, external_id="PMID2", text="Aspirin again.")
    project = Project.objects.create(slug="trial", title="Trial", collection=collection)
    for name, role in (("bob", "annotator"), ("frank", "annotator"), ("erin", "adjudicator"), ("dave", "manager")):
        Member.objects.create(project=project, user=people[name], role=role)
    bob_copy = _copy(project, first, bob, done=True)
    _copy(project, second, bob)
    frank_copy = _copy(project, first, people["frank"])

    # bob: judgements at 0, 30, 90 s, then a break of 58.5 min, then 3600, 3660, 3700 s.
    _decide(bob_copy, bob, 0, rank=1, model="v1", ms=4000)  # first of a session: its own 4 s
    _decide(bob_copy, bob, 30, rank=1, model="v1", ms=6000)  # + 30 s
    _decide(bob_copy, bob, 90, Action.RELINK, rank=3, model="v1", ms=10000)  # + 60 s
    _decide(bob_copy, bob, 90, via=Via.PROPAGATED, rank=1, model="v1")  # not a judgement
    _decide(bob_copy, bob, 3600, Action.NIL, model="v1", ms=20000)  # after a break: its own 20 s
    _decide(bob_copy, bob, 3660, rank=None, model="")  # + 60 s; accepted gold, no model suggestion: not in top-1
    _decide(bob_copy, bob, 3700, Action.REJECT, ms=2000)  # + 40 s
    _decide(bob_copy, bob, 3710, Action.RELINK, rank=2, model="v1", ms=1000, undone=True)  # undone: not counted
    _decide(bob_copy, linker_user(), 3720, via=Via.AUTO, rank=1, model="v1")  # the linker's auto-accept
    # frank: two accepts of the second suggestion, five minutes apart, no time on task recorded.
    _decide(frank_copy, people["frank"], 0, rank=2, model="v1")
    _decide(frank_copy, people["frank"], 300, rank=2, model="v1")
    # erin adjudicates on the project's own document: one decision of 8 s.
    _decide(first, people["erin"], 7200, via=Via.ADJUDICATION, rank=1, model="v1", ms=8000)
    # Outside the project: bob in a plain collection 100 s after his last, and an "adjudication" in another collection.
    elsewhere = Collection.objects.create(slug="elsewhere", title="Elsewhere")
    other = Document.objects.create(collection=elsewhere, external_id="PMID9", text="Aspirin.")
    _decide(other, bob, 3800, Action.RELINK)
    _decide(other, people["erin"], 7300, via=Via.ADJUDICATION, rank=1, model="v1", ms=3000)
    return {"project": project, **people}


def _rows(stats: Any) -> dict[str, Any]:
    return {row.username: row for row in stats.rows}


def test_a_curators_pace_counts_gaps_up_to_the_idle_cut_off_and_the_first_decision_of_a_session(team) -> None:  # type: ignore[no-untyped-def]
    bob = _rows(project_stats(team["project"]))["bob"].figures

    assert bob.decisions == 6  # the propagated, the undone and the linker's decisions are not bob's judgements
    assert bob.propagated == 1
    assert bob.active_seconds == pytest.approx(4 + 30 + 60 + 20 + 60 + 40)  # 214 s; the 58.5 min break counts nothing
    assert bob.per_hour == pytest.approx(6 / (214 / 3600))
    assert bob.per_hour_text == "100.9 / h"
    assert bob.active_text == "3 min"
    assert bob.actions == {"accept": 3, "relink": 1, "nil": 1, "reject": 1}
    assert (bob.first_at, bob.last_at) == (T0, T0 + timedelta(seconds=3700))


def test_time_on_task_median_and_p90_over_the_recorded_times(team) -> None:  # type: ignore[no-untyped-def]
    rows = _rows(project_stats(team["project"]))

    bob = rows["bob"].figures  # 2, 4, 6, 10, 20 s
    assert (bob.timed, bob.median_seconds, bob.p90_seconds) == (5, 6.0, 20.0)
    assert (bob.median_text, bob.p90_text) == ("6.0 s", "20.0 s")
    frank = rows["frank"].figures
    assert (frank.median_seconds, frank.median_text) == (None, "—")


def test_top1_acceptance_counts_link_decisions_on_suggestions_only(team) -> None:  # type: ignore[no-untyped-def]
    rows = _rows(project_stats(team["project"]))

    # accept r1, accept r1, relink r3, NIL: 2 of 4; the gold accept without suggestion, the reject, the
    # propagated and auto-accepted decisions are left out.
    assert (rows["bob"].figures.top1, rows["bob"].figures.top1_of, rows["bob"].figures.top1_text) == (2, 4, "50 %")
    assert (rows["frank"].figures.top1, rows["frank"].figures.top1_of, rows["frank"].figures.top1_text) == (0, 2, "0 %")


def test_under_a_minute_of_active_time_gives_no_pace(team) -> None:  # type: ignore[no-untyped-def]
    erin = _rows(project_stats(team["project"]))["erin"].figures

    assert (erin.decisions, erin.active_seconds, erin.per_hour, erin.per_hour_text) == (1, 8.0, None, "—")


def test_the_project_table_has_every_member_their_progress_and_a_total(team) -> None:  # type: ignore[no-untyped-def]
    stats = project_stats(team["project"])
    rows = _rows(stats)

    assert list(rows) == ["bob", "dave", "erin", "frank"]  # not the linker, not gina, not alice
    assert rows["dave"].roles == ("Manager",) and rows["dave"].figures.decisions == 0
    assert (rows["bob"].assigned, rows["bob"].done, rows["bob"].percent_done) == (2, 1, 50)
    assert (rows["frank"].assigned, rows["frank"].done) == (1, 0)
    assert (stats.assigned, stats.done) == (3, 1)
    assert rows["frank"].figures.per_hour_text == "24.0 / h"  # 2 decisions in 300 s
    total = stats.total
    assert total is not None
    assert (total.decisions, total.propagated, total.auto) == (9, 1, 1)  # erin's decision elsewhere is not the project's
    assert total.active_seconds == pytest.approx(214 + 300 + 8)  # person-time: each curator's own gaps
    assert total.per_hour_text == "62.1 / h"
    assert (total.top1, total.top1_of, total.top1_text) == (3, 7, "43 %")
    assert (total.median_seconds, total.p90_seconds) == (7.0, 20.0)  # 2, 4, 6, 8, 10, 20 s


def test_one_curators_row_alone_has_no_total(team) -> None:  # type: ignore[no-untyped-def]
    stats = project_stats(team["project"], only_user_id=team["frank"].pk)

    assert [row.username for row in stats.rows] == ["frank"]
    assert stats.total is None
    assert (stats.assigned, stats.done) == (1, 0)


def test_the_workbench_wide_figures_cover_every_decision_and_break_down_by_project(team) -> None:  # type: ignore[no-untyped-def]
    stats = curator_stats()
    curators = {row.username: row for row in stats.curators}

    assert list(curators) == ["bob", "erin", "frank"]  # the linker's account only auto-accepted
    bob = curators["bob"]
    assert bob.figures.decisions == 7  # his six in the project and one elsewhere, 100 s after his last
    assert bob.figures.active_seconds == pytest.approx(214 + 100)
    assert bob.figures.per_hour_text == "80.3 / h"
    assert bob.projects == 1
    assert stats.total.auto == 1
    assert [(row.project.slug, row.username, row.figures.decisions) for row in stats.breakdown] == [
        ("trial", "bob", 6), ("trial", "erin", 1), ("trial", "frank", 2),
    ]


def test_an_adjudication_counts_for_the_project_whose_document_subset_holds_it(team) -> None:  # type: ignore[no-untyped-def]
    project = team["project"]
    project.documents.set(Document.objects.filter(collection=project.collection, external_id="PMID2"))

    assert _rows(project_stats(project))["erin"].figures.decisions == 0
    assert [row.username for row in curator_stats().breakdown] == ["bob", "frank"]


# --- the pages ---------------------------------------------------------------------------------------------------


def _get(client: Any, user: Any, url: str) -> Any:
    client.force_login(user)
    return client.get(url)


@pytest.mark.parametrize("viewer", ["alice", "dave", "erin"])
def test_admins_managers_and_adjudicators_see_every_row(team, alice, client, viewer) -> None:  # type: ignore[no-untyped-def]
    user = alice if viewer == "alice" else team[viewer]

    response = _get(client, user, reverse("projects:stats", args=["trial"]))

    assert response.status_code == 200
    assert [row.username for row in response.context["stats"].rows] == ["bob", "dave", "erin", "frank"]
    body = response.content.decode()
    assert "100.9 / h" in body and "62.1 / h" in body and "43 %" in body
    assert "How these are computed" in body


def test_an_annotator_sees_only_their_own_row(team, client) -> None:  # type: ignore[no-untyped-def]
    response = _get(client, team["frank"], reverse("projects:stats", args=["trial"]))

    assert response.status_code == 200
    assert [row.username for row in response.context["stats"].rows] == ["frank"]
    body = response.content.decode()
    assert "24.0 / h" in body
    assert "100.9 / h" not in body and "62.1 / h" not in body  # neither bob's row nor the total


@pytest.mark.parametrize("viewer", ["gina", "charlie"])
def test_anybody_else_is_refused_the_project_page(team, charlie, client, viewer) -> None:  # type: ignore[no-untyped-def]
    user = charlie if viewer == "charlie" else team[viewer]

    assert _get(client, user, reverse("projects:stats", args=["trial"])).status_code == 403


def test_the_project_page_says_what_to_do_before_any_decision(db, alice, client) -> None:  # type: ignore[no-untyped-def]
    Project.objects.create(slug="empty", title="Empty", collection=Collection.objects.create(slug="empty-docs", title="Empty"))

    response = _get(client, alice, reverse("projects:stats", args=["empty"]))

    assert response.status_code == 200
    assert "No decisions yet" in response.content.decode()


def test_the_workbench_page_is_for_admins(team, alice, client) -> None:  # type: ignore[no-untyped-def]
    url = reverse("projects:curator-stats")

    response = _get(client, alice, url)
    assert response.status_code == 200
    body = response.content.decode()
    assert "80.3 / h" in body and "Trial" in body
    assert _get(client, team["dave"], url).status_code == 403  # a project's manager is no workbench admin
    assert _get(client, team["bob"], url).status_code == 403


def test_the_figures_take_a_fixed_number_of_queries(team, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    project = Project.objects.get(slug="trial")

    with django_assert_max_num_queries(4):  # the document subset, members, assignments, decisions
        project_stats(project)
    with django_assert_max_num_queries(3):  # decisions, projects, their document subsets
        curator_stats()
