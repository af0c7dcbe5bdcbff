"""The panel's rankings: kept while the served names are unchanged, the rest of a document prefetched, never served
stale."""

from __future__ import annotations

import pytest

from linker.text import normalize
from webapp.corpus.models import Mention
from webapp.curation.models import OPEN_STATUSES
from webapp.curation.services import panel_ranking, prefetch_rest_of_document
from webapp.curation.services.rankings import RANKINGS, link_now, wait_for_prefetch
from webapp.linking.registry import add_curator_synonym, get_active_linker
from webapp.vocab.models import Concept, Name

pytestmark = pytest.mark.django_db


def _mention(text: str) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").filter(text=text).order_by("pk").first()  # type: ignore[return-value]


def _others(m: Mention) -> list[Mention]:
    return list(Mention.objects.select_related("document__collection__dictionary")
                .filter(document=m.document, status__in=OPEN_STATUSES).exclude(pk=m.pk).order_by("start"))


def _synonym(text: str, concept_id: str) -> None:
    """A curator synonym as a decision of this process commits it: its Name row, then the after-commit call."""
    active = get_active_linker("medic-demo")
    assert active is not None
    concept = Concept.objects.get(version=active.dictionary_version, concept_id=concept_id)
    Name.objects.create(concept=concept, text=text, normalized=normalize(text), source=Name.Source.CURATOR)
    add_curator_synonym("medic-demo", text, concept_id)


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
    _synonym("hypertension", "MESH:D003924")
    misses = RANKINGS.misses
    after = panel_ranking(other)
    assert after is not None
    assert RANKINGS.misses == misses + 1
    assert "MESH:D003924" in [c.concept_id for c in after.candidates[:2]]


def test_a_kept_ranking_is_served_while_the_names_it_was_made_with_are(demo) -> None:  # type: ignore[no-untyped-def]
    """One rule: a kept ranking is the served linker's, whose names are the index's and the curator names made since
    its build (the delta's watermark); a lookup that finds no new name keeps the rankings, any new name sets them
    aside."""
    first = _mention("Type 2 diabetes")
    other = _mention("hypertension")
    prefetch_rest_of_document(first, panel_ranking(first))
    wait_for_prefetch()
    active = get_active_linker("medic-demo")
    assert active is not None
    add_curator_synonym("medic-demo", "no such name", "MESH:D003924")  # no Name was made: nothing changed
    again = get_active_linker("medic-demo")
    assert again is not None and again.linker is active.linker
    hits = RANKINGS.hits
    kept = panel_ranking(other)
    assert kept is not None and RANKINGS.hits == hits + 1
    _synonym("zzxq vvwj", "MESH:D003924")
    served = get_active_linker("medic-demo")
    assert served is not None and served.linker is not active.linker
    misses = RANKINGS.misses
    fresh = panel_ranking(other)
    assert fresh is not None and RANKINGS.misses == misses + 1
    (alone,) = link_now(served, [other], other.document.text, 10)
    assert _ranked(fresh) == _ranked(alone.linked)


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
