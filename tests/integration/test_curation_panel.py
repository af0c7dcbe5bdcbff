"""The candidate panel: one service links the mention live (reading only), a POST stores what it shows; the selector only reads."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.corpus.models import Link, Mention
from webapp.curation import selectors
from webapp.curation.services import decide, panel_ranking, store_ranking

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE")



def _mention(text: str) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").filter(text=text).order_by("pk").first()  # type: ignore[return-value]


def test_the_ranking_shown_is_stored_once_with_the_ranks_shown(demo) -> None:  # type: ignore[no-untyped-def]
    m = _mention("Type 2 diabetes")
    Link.objects.filter(mention=m, origin=Link.Origin.MODEL).delete()
    Mention.objects.filter(pk=m.pk).update(status=Mention.Status.PENDING)
    m.refresh_from_db()
    ranking = panel_ranking(m)
    assert ranking is not None
    assert not m.links.filter(origin=Link.Origin.MODEL).exists() and m.status == Mention.Status.PENDING  # it only read
    assert store_ranking(m, ranking)  # what a POST on the mention does before it decides
    assert m.status == Mention.Status.SUGGESTED  # updated in place: the panel's data-status and its "seen" version
    shown = [(row.part, row.rank, row.concept_id) for row in selectors.panel(m, ranking).candidates]
    stored = list(m.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank").values_list("part", "rank", "concept_ref"))
    assert shown == stored
    again = panel_ranking(m)
    assert again is not None and not store_ranking(m, again)


def test_the_panel_selector_writes_nothing(demo) -> None:  # type: ignore[no-untyped-def]
    m = _mention("hypertension")
    ranking = panel_ranking(m)
    store_ranking(m, ranking)
    with CaptureQueriesContext(connection) as queries:
        live = selectors.panel(m, ranking)
        stored_only = selectors.panel(m, None)
    sql = [q["sql"].upper() for q in queries.captured_queries]
    assert not [s for s in sql if s.startswith(WRITES) or "FOR UPDATE" in s]
    assert live.live and not stored_only.live
    assert [r.concept_id for r in stored_only.candidates] == [r.concept_id for r in live.candidates]


def test_a_decided_mention_keeps_the_suggestions_it_was_decided_on(bob, demo) -> None:  # type: ignore[no-untyped-def]
    m = _mention("hypertension")
    store_ranking(m, panel_ranking(m))
    decide(user=bob, mention_id=m.pk, action="nil", seen_updated_at=m.updated_at)
    m.refresh_from_db()
    Link.objects.filter(mention=m, origin=Link.Origin.MODEL).update(score=0.5)
    ranking = panel_ranking(m)
    assert ranking is not None and not store_ranking(m, ranking)
    assert set(m.links.filter(origin=Link.Origin.MODEL).values_list("score", flat=True)) == {0.5}


def test_the_panel_names_ids_one_way_lists_alternative_ids_and_says_when_there_is_no_hierarchy(demo, bob) -> None:  # type: ignore[no-untyped-def]
    from django.test import Client

    from webapp.curation.lineage import ANCESTRY
    from webapp.vocab.models import Concept, HierarchyEdge

    Concept.objects.filter(concept_id="MESH:D003924").update(alt_ids=["DO:DOID:9352", "OMIM:125853"])
    m = _mention("Type 2 diabetes")
    client = Client()
    client.force_login(bob)
    body = client.get(f"/curate/mentions/{m.pk}/panel/").content.decode()
    assert 'class="mono cand-id">MESH:D003924<' in body and "DO:DOID:9352, OMIM:125853" in body
    assert "a root of the hierarchy" not in body.split('data-number="1"')[1].split('data-number="2"')[0]

    HierarchyEdge.objects.all().delete()  # a dictionary without a hierarchy says so, not "a root" everywhere
    ANCESTRY.clear()  # a release's edges never change in the product: the per-process cache would keep them
    body = client.get(f"/curate/mentions/{m.pk}/panel/").content.decode()
    assert "no hierarchy in this dictionary" in body and "a root of the hierarchy" not in body
