"""A project's dashboard (/projects/<slug>/dashboard/) with real rows: figures computed by hand in the comments.

Project "lead" over collection "gold" of four documents, double annotation. bob and erin annotate, dave manages,
frank is a curator outside it. PMID1: both done on day 1, agreeing on two spans (C1, C2). PMID2: both done on day 3,
agreeing on the first span (C1) and not on the second (bob C2, erin C3): contested. PMID3: bob's, not done. PMID4:
nobody's. One succeeded evaluation of an index on "gold" (Acc@1 0.812) and a failed one, which is no figure.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.linking.models import IndexVersion
from webapp.projects.models import Assignment, Member, Project, Workspace
from webapp.training.models import Evaluation
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
TEXT = "Aspirin and ibuprofen."
SPANS = ((0, 7), (12, 21))


def _user(django_user_model: Any, name: str, group: str | None = "curator") -> Any:
    user = django_user_model.objects.create_user(username=name, email=f"{name}@example.org")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _copy(project: Project, document: Document, annotator: Any, labels: tuple[str, ...] = (), done_day: int | None = None) -> Document:
    """The annotator's copy of the document, with a curator link per span (``labels``), done on ``done_day``."""
    workspace = Workspace.objects.filter(project=project, annotator=annotator).first()
    if workspace is None:
        collection = Collection.objects.create(slug=f"{project.slug}-{annotator.username}", title=f"{annotator}'s copies",
                                               is_workspace=True)
        workspace = Workspace.objects.create(project=project, annotator=annotator, collection=collection)
    copy = Document.objects.create(collection=workspace.collection, external_id=document.external_id, text=document.text)
    for (start, end), label in zip(SPANS, labels, strict=False):
        mention = Mention.objects.create(document=copy, start=start, end=end, text=TEXT[start:end],
                                         status=Mention.Status.ACCEPTED)
        Link.objects.create(mention=mention, concept_ref=label, origin=Link.Origin.CURATOR, created_by=annotator)
    done = done_day is not None
    Assignment.objects.create(project=project, document=document, annotator=annotator, copy=copy,
                              state=Assignment.State.DONE if done else Assignment.State.ASSIGNED,
                              done_at=T0 + timedelta(days=done_day) if done_day is not None else None)
    return copy


def _decide(document: Document, user: Any, seconds: float) -> None:
    decision = Decision.objects.create(document=document, mention_text="aspirin", action=Decision.Action.ACCEPT,
                                       via=Decision.Via.CANDIDATE, user=user)
    Decision.objects.filter(pk=decision.pk).update(created_at=T0 + timedelta(seconds=seconds))


@pytest.fixture
def lead(db, django_user_model) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    people = {name: _user(django_user_model, name) for name in ("bob", "erin", "dave", "frank")}
    people["charlie"] = _user(django_user_model, "charlie", group=None)
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    release = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="demo", checksum="d" * 64)
    collection = Collection.objects.create(slug="gold", title="Gold abstracts", dictionary=dictionary)
    docs = [Document.objects.create(collection=collection, external_id=f"PMID{n}", text=TEXT) for n in range(1, 5)]
    project = Project.objects.create(slug="lead", title="Lead trial", collection=collection, annotators_per_document=2)
    for name, role in (("bob", "annotator"), ("erin", "annotator"), ("dave", "manager")):
        Member.objects.create(project=project, user=people[name], role=role)
    bob, erin = people["bob"], people["erin"]
    bob_first = _copy(project, docs[0], bob, ("C1", "C2"), done_day=0)
    erin_first = _copy(project, docs[0], erin, ("C1", "C2"), done_day=0)
    _copy(project, docs[1], bob, ("C1", "C2"), done_day=2)
    _copy(project, docs[1], erin, ("C1", "C3"), done_day=2)
    _copy(project, docs[2], bob)
    # bob: 0, 60, 120 s: 120 s active, 3 decisions -> 90.0 / h.
    for seconds in (0, 60, 120):
        _decide(bob_first, bob, seconds)
    # erin: 0, 30, then an hour's break, 3600, 3630: 60 s active, 4 decisions -> 240.0 / h.
    for seconds in (0, 30, 3600, 3630):
        _decide(erin_first, erin, seconds)
    index = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=release, state="active")
    Evaluation.objects.create(index_version=index, collection=collection, state=Evaluation.State.SUCCEEDED,
                              metrics={"acc@1": 0.812, "acc@5": 0.93, "mentions": 40}, finished_at=T0 + timedelta(days=1))
    Evaluation.objects.create(index_version=index, collection=collection, state=Evaluation.State.FAILED,
                              metrics={"acc@1": 0.1})
    return {"project": project, "index": index, **people}


def _get(user: Any, slug: str = "lead") -> Any:
    client = Client()
    client.force_login(user)
    return client.get(f"/projects/{slug}/dashboard/")


def _cell(html: str, row: str, figure: str) -> str:
    """The text of the cell ``data-figure=figure`` in the row whose data attribute is ``row``."""
    start = html.index(row)
    cell = html.index(f'data-figure="{figure}"', start)
    return html[html.index(">", cell) + 1:html.index("</td>", cell)]


def test_the_manager_sees_each_collection_where_it_stands(lead) -> None:  # type: ignore[no-untyped-def]
    html = _get(lead["dave"]).content.decode()
    row = 'data-collection="gold"'
    # PMID1 done (agreed everywhere), PMID2 contested (one open span), PMID3 and PMID4 waiting (PMID4 unassigned).
    assert _cell(html, row, "done") == "1"
    assert ">1</a>" in _cell(html, row, "contested") and "1 open span" in _cell(html, row, "contested")
    assert _cell(html, row, "waiting").startswith("2") and "(1 not assigned)" in _cell(html, row, "waiting")
    assert 'aria-label="1 done, 1 contested, 2 waiting of 4"' in html


def test_the_manager_sees_each_curators_pace_and_agreement(lead) -> None:  # type: ignore[no-untyped-def]
    html = _get(lead["dave"]).content.decode()
    assert _cell(html, 'data-curator="bob"', "decisions") == "3"
    assert _cell(html, 'data-curator="bob"', "pace") == "90.0 / h"
    assert _cell(html, 'data-curator="erin"', "decisions") == "4"
    assert _cell(html, 'data-curator="erin"', "pace") == "240.0 / h"
    # Cohen's kappa over the four spans both linked: observed 3/4; chance .5*.5 (C1) + .5*.25 (C2) = .375;
    # (0.75 - 0.375) / 0.625 = 0.60, the same for both (one pair).
    assert _cell(html, 'data-curator="bob"', "kappa") == "0.60"
    assert _cell(html, 'data-curator="erin"', "kappa") == "0.60"
    assert "—" in _cell(html, 'data-curator="bob"', "kept")  # nothing adjudicated yet


def test_the_chart_plots_agreement_per_day_and_the_gold_evaluation(lead) -> None:  # type: ignore[no-untyped-def]
    html = _get(lead["dave"]).content.decode()
    # Day 1 (PMID1 alone): every label agreed, alpha 1. Day 3 (PMID2 alone): coincidences C1-C1 x2, C2-C3 x2 of
    # n = 4; observed disagreement 2/4, expected 10/12; alpha = 1 - 0.5 / (10/12) = 0.40.
    assert "Krippendorff&#x27;s α 1.00 on 2 spans of 1 document finished in the day 2025-03-03" in html
    assert "Krippendorff&#x27;s α 0.40 on 2 spans of 1 document finished in the day 2025-03-05" in html
    assert f"Acc@1 0.812 of {lead['index'].label} on 40 mentions, 2025-03-04 09:00" in html
    assert "Acc@1 0.100" not in html  # the failed evaluation is no figure
    assert html.count('<circle class="dot"') == 3


def test_an_annotator_sees_their_own_row_and_no_agreement(lead) -> None:  # type: ignore[no-untyped-def]
    response = _get(lead["bob"])
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-curator="bob"' in html and 'data-curator="erin"' not in html
    assert "Kappa with others" not in html and "Krippendorff" not in html
    assert "Acc@1 0.812" in html  # the model's figures are no colleague's


@pytest.mark.parametrize("name", ["frank", "charlie"])
def test_outsiders_are_refused(lead, name: str) -> None:  # type: ignore[no-untyped-def]
    assert _get(lead[name]).status_code == 403


def test_an_admin_may_open_it_and_the_anonymous_are_sent_to_log_in(lead, alice) -> None:  # type: ignore[no-untyped-def]
    assert _get(alice).status_code == 200
    response = Client().get("/projects/lead/dashboard/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_new_project_reads_well_empty(lead) -> None:  # type: ignore[no-untyped-def]
    collection = Collection.objects.create(slug="fresh", title="Fresh abstracts")
    Document.objects.create(collection=collection, external_id="N1", text=TEXT)
    project = Project.objects.create(slug="fresh", title="Fresh", collection=collection)
    Member.objects.create(project=project, user=lead["dave"], role="manager")
    html = _get(lead["dave"], "fresh").content.decode()
    assert 'id="no-decisions"' in html and "No decisions yet" in html
    assert 'id="no-trend"' in html and "Nothing to plot yet" in html
    assert 'aria-label="0 done, 0 contested, 1 waiting of 1"' in html
