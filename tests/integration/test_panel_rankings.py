"""The panel's rankings: kept while the index is unchanged, the rest of a document prefetched, never served stale."""

from __future__ import annotations

from dataclasses import replace

import pytest

from webapp.corpus.models import Mention
from webapp.curation.models import OPEN_STATUSES
from webapp.curation.services import panel_ranking, prefetch_rest_of_document
from webapp.curation.services.rankings import RANKINGS, link_now, wait_for_prefetch
from webapp.linking.registry import add_curator_synonym, get_active_linker

pytestmark = pytest.mark.django_db


def _mention(text: str) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").filter(text=text).order_by("pk").first()  # type: ignore[return-value]


def _others(m: Mention) -> list[Mention]:
    return list(Mention.objects.select_related("document__collection__dictionary")
                .filter(document=m.document, status__in=OPEN_STATUSES).exclude(pk=m.pk).order_by("start"))


def _ranked(ranking) -> list[tuple[int, str, float]]:  # type: ignore[no-untyped-def]
    return [(c.part, c.concept_id, round(float(c.score), 5)) for c in ranking.candidates]


def test_a_panel_prefetches_the_rest_of_its_document_and_those_panels_read_it(demo) -> None:  # type: ignore[no-untyped-def]
    first = _mention("Type 2 diabetes")
    others = _others(first)
    assert others, "the demo abstract has more than one mention"
    prefetch_rest_of_document(first, panel_ranking(first))  # as the view does once the panel is rendered
    wait_for_prefetch()
    active = get_active_linker("medic-demo")
    assert active is not None
    for other in others:
        hits = RANKINGS.hits
        ranking = panel_ranking(other)
        assert ranking is not None
        assert RANKINGS.hits == hits + 1, f"{other.text!r} was linked again"
        # Linked with the document's other mentions in one batch, it is the ranking the mention gets on its own.
        (alone,) = link_now(active, [other], other.document.text, 10)
        assert _ranked(ranking) == _ranked(alone.linked)


def test_a_new_synonym_makes_the_next_panel_link_live(demo) -> None:  # type: ignore[no-untyped-def]
    first = _mention("Type 2 diabetes")
    other = _mention("hypertension")
    assert other.document_id == first.document_id
    prefetch_rest_of_document(first, panel_ranking(first))
    wait_for_prefetch()
    before = panel_ranking(other)
    assert before is not None and before.candidates[0].concept_id != "MESH:D003924"
    # Another concept now owns this mention's exact text: a ranking kept from before would not know it.
    add_curator_synonym("medic-demo", "hypertension", "MESH:D003924")
    misses = RANKINGS.misses
    after = panel_ranking(other)
    assert after is not None
    assert RANKINGS.misses == misses + 1
    assert "MESH:D003924" in [c.concept_id for c in after.candidates[:2]]


def test_a_synonym_that_cannot_reach_a_kept_ranking_leaves_it_kept(demo) -> None:  # type: ignore[no-untyped-def]
    active = get_active_linker("medic-demo")
    assert active is not None
    retriever = active.linker.retriever
    # Pools of 4 names: the demo's MEDIC slice is smaller than the default 64 a search lists, and a pool with room
    # in it takes any new name (nothing could be vouched for).
    retriever.config = replace(retriever.config, names_per_source=4)
    first = _mention("Type 2 diabetes")
    other = _mention("hypertension")
    prefetch_rest_of_document(first, panel_ranking(first))
    wait_for_prefetch()
    # A curator's synonym for a concept none of the kept pools holds, spelt like none of their names.
    unrelated = next(cid for cid in active.linker.table.concepts if cid not in {
        active.linker.table.concept_ids[r] for one in RANKINGS._per_linker[active.linker].values()
        for part in one.linking.linked.probe.parts for r in part.rows})
    generation = active.linker.generation
    add_curator_synonym("medic-demo", "zzxq vvwj", unrelated)
    assert active.linker.generation == generation + 1
    hits, set_aside = RANKINGS.hits, RANKINGS.set_aside
    kept = panel_ranking(other)
    assert kept is not None and RANKINGS.hits == hits + 1 and RANKINGS.set_aside == set_aside
    (fresh,) = link_now(active, [other], other.document.text, 10)
    assert _ranked(kept) == _ranked(fresh.linked)
    # Its own text under another concept reaches it: set aside, linked live.
    add_curator_synonym("medic-demo", "hypertension", "MESH:D003924")
    misses = RANKINGS.misses
    assert panel_ranking(other) is not None and RANKINGS.misses == misses + 1 and RANKINGS.set_aside == set_aside + 1


def test_prefetching_can_be_turned_off(demo, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CURATION_PREFETCH = False
    first = _mention("Type 2 diabetes")
    prefetch_rest_of_document(first, panel_ranking(first))
    wait_for_prefetch()
    misses = RANKINGS.misses
    panel_ranking(_mention("hypertension"))
    assert RANKINGS.misses == misses + 1
    # The mention's own ranking is still kept: viewing it again links nothing.
    hits = RANKINGS.hits
    again = panel_ranking(first)
    assert RANKINGS.hits == hits + 1
    assert again is not None and again.linked_now_k == 0  # kept: nothing for the view to prefetch after it


def test_the_panel_view_prefetches_its_document(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    first = _mention("Type 2 diabetes")
    assert bob_client.get(f"/curate/mentions/{first.pk}/panel/", HTTP_HX_REQUEST="true").status_code == 200
    wait_for_prefetch()
    hits = RANKINGS.hits
    other = _mention("hypertension")
    response = bob_client.get(f"/curate/mentions/{other.pk}/panel/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "MESH:D006973" in response.content.decode()
    assert RANKINGS.hits == hits + 1
