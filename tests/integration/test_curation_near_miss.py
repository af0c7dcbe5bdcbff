"""Hierarchy-aware candidates: the panel tags each candidate that is a sibling, parent or child of the top one,
and says so above the list when the top two are neighbours, at no extra query."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.corpus.models import Mention
from webapp.curation import selectors
from webapp.curation.services import panel_ranking
from webapp.vocab.models import Concept, Dictionary, HierarchyEdge

pytestmark = pytest.mark.django_db



def _panel_html(client, text: str) -> tuple[selectors.Panel, str]:  # type: ignore[no-untyped-def]
    m = Mention.objects.filter(text=text).order_by("pk").first()
    assert m is not None
    response = client.get(f"/curate/mentions/{m.pk}/panel/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.context["p"], response.content.decode()


def _tags(p: selectors.Panel) -> list[tuple[str, str]]:
    return [(c.concept_id, c.near_miss.label if c.near_miss else "") for c in p.candidates]


def test_top_two_siblings_are_tagged_and_noted_with_their_parent(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    p, html = _panel_html(bob_client, "Type 2 diabetes")
    assert _tags(p)[:3] == [("MESH:D003924", ""), ("MESH:D003922", "sibling of #1"), ("MESH:D003920", "parent of #1")]
    assert p.near_miss_notes == ["#1 and #2 are siblings under Diabetes Mellitus."]
    assert "<strong>Look twice:</strong> #1 and #2 are siblings under Diabetes Mellitus." in html
    second = re.search(r'<li class="candidate[^"]*" data-number="2".*?</li>', html, re.S)
    assert second is not None
    tag = re.search(r'<span class="badge near-miss near-miss-sibling" title="([^"]+)">sibling of #1</span>', second.group(0))
    assert tag is not None and tag.group(1).startswith("Shares a parent (Diabetes Mellitus) with #1 (Diabetes Mellitus, Type 2)")
    assert 'data-action="pick" data-number="2"' in html  # the keyboard's hooks are still there


def test_a_parent_or_child_in_second_place_is_noted(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    p, _ = _panel_html(bob_client, "colon cancer")
    assert _tags(p)[1] == ("MESH:D015179", "parent of #1")
    assert p.near_miss_notes == ["#2 is the parent of #1."]
    p, _ = _panel_html(bob_client, "arthritis")
    assert _tags(p)[1:3] == [("MESH:D010003", "child of #1"), ("MESH:D001172", "child of #1")]
    assert p.near_miss_notes == ["#2 is a child of #1."]
    p, _ = _panel_html(bob_client, "hepatitis C")  # Hepatitis C has two parents: Liver Diseases is one of them
    assert _tags(p)[1] == ("MESH:D008107", "parent of #1")
    assert p.near_miss_notes == ["#2 is a parent of #1."]


def test_unrelated_candidates_show_nothing(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    p, html = _panel_html(bob_client, "hypertension")
    assert _tags(p)[1] == ("MESH:D003424", "")  # Crohn Disease
    assert p.near_miss_notes == [] and "Look twice" not in html


def test_in_a_composite_mention_each_part_is_compared_with_its_own_top(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    p, _ = _panel_html(bob_client, "breast and ovarian cancer")
    second_part = [c for c in p.candidates if c.part == 1]
    assert second_part[0].concept_id == "MESH:D010051" and second_part[0].near_miss is None  # Ovarian Neoplasms
    siblings = [c for c in second_part if c.near_miss is not None]
    assert siblings and {c.near_miss.label for c in siblings if c.near_miss} == {"sibling of #1"}  # its place in the part
    assert all("#1 for part 2 (Ovarian Neoplasms)" in c.near_miss.title for c in siblings if c.near_miss)
    # Breast Neoplasms, the top of part 1, is a sibling of Ovarian Neoplasms in part 2, not "the same as #1".
    assert "MESH:D001943" in [c.concept_id for c in siblings]


def test_the_near_misses_cost_no_query_of_their_own(demo) -> None:  # type: ignore[no-untyped-def]
    m = Mention.objects.select_related("document__collection__dictionary").filter(text="Type 2 diabetes").order_by("pk").first()
    assert m is not None
    ranking = panel_ranking(m)
    with CaptureQueriesContext(connection) as queries:
        p = selectors.panel(m, ranking)
    edge_table = HierarchyEdge._meta.db_table
    assert len([q for q in queries.captured_queries if edge_table in q["sql"]]) == 1  # the paths' one query
    assert p.candidates[1].near_miss is not None


def test_a_cycle_in_the_hierarchy_neither_hangs_nor_errors(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    version = Dictionary.objects.get(slug="medic-demo").latest_version()
    t2, dm = (Concept.objects.get(version=version, concept_id=cid) for cid in ("MESH:D003924", "MESH:D003920"))
    HierarchyEdge.objects.create(version=version, child=dm, parent=t2)  # bad data: DM -> T2DM -> DM
    p, _ = _panel_html(bob_client, "Type 2 diabetes")
    assert _tags(p)[:3] == [("MESH:D003924", ""), ("MESH:D003922", "sibling of #1"), ("MESH:D003920", "parent of #1")]


def test_the_panel_reads_a_concepts_ancestry_once_per_process(django_assert_num_queries, db) -> None:  # type: ignore[no-untyped-def]
    """The second lineage of the same candidates costs no query: a release's hierarchy never changes."""
    from webapp.curation.lineage import candidate_lineage
    from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge

    version = DictionaryVersion.objects.create(dictionary=Dictionary.objects.create(slug="tiny", title="Tiny"), release="1",
                                               source_format="obo", checksum="x")
    root, mid, leaf = (Concept.objects.create(version=version, concept_id=c, preferred_name=c) for c in ("R", "M", "L"))
    HierarchyEdge.objects.create(version=version, child=mid, parent=root)
    HierarchyEdge.objects.create(version=version, child=leaf, parent=mid)
    with django_assert_num_queries(1):
        first = candidate_lineage([leaf.pk, mid.pk])
    with django_assert_num_queries(0):
        again = candidate_lineage([mid.pk, leaf.pk])
    assert [c.concept_id for c in first.paths[leaf.pk][0]] == ["R", "M"] == [c.concept_id for c in again.paths[leaf.pk][0]]
    assert again.parents == first.parents
