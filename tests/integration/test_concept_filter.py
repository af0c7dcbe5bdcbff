"""A project's concept filter: what it allows, and the panel, search and decisions of its mentions kept within it.

The demo slice of MEDIC (webapp.demo) has a real hierarchy and slim types; the project "Oncology" links only
to the subtree of MESH:D009369 Neoplasms, and bob annotates his copy of a document in his workspace.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import selectors
from webapp.curation.services import (
    CurationError,
    decide,
    panel_ranking,
    store_ranking,
    suggest_for_collection,
)
from webapp.curation.services.suggestions import FILTER_WIDENING, SUGGESTIONS_K, link_in_document
from webapp.linking.registry import forget_all
from webapp.projects.concept_filter import build_filter, filter_for_collection, forget_filters
from webapp.projects.models import Project, Workspace
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary, HierarchyEdge, KnownType
from webapp.vocab.selectors import search_concepts

pytestmark = pytest.mark.django_db

NEOPLASMS = "MESH:D009369"
UNDER_NEOPLASMS = {
    "MESH:D009369", "MESH:D009371", "MESH:D001943", "MESH:D010051", "MESH:D015179", "MESH:D003110", "MESH:D008175",
    "MESH:D002289",
}
HYPERTENSION = "MESH:D006973"
BREAST_NEOPLASMS = "MESH:D001943"
TEXT = "A woman with breast cancer, high blood pressure and a pulmonary disease."


@dataclass
class Setting:
    dictionary: Dictionary
    collection: Collection  # the project's documents
    project: Project
    workspace: Collection  # bob's copies
    mention: Mention  # "breast cancer" in bob's copy


@pytest.fixture
def demo(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    from webapp.demo.load import load_demo

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    forget_filters()
    load_demo(tmp_path / "demo", log=lambda message: None)
    dictionary = Dictionary.objects.get(slug="medic-demo")
    activate_index(build_index(create_index_version(dictionary.latest_version(), None)).pk)
    yield dictionary
    forget_all()
    forget_filters()


def _setting(dictionary: Dictionary, annotator, roots: list[str], types: list[KnownType] = ()) -> Setting:  # type: ignore[no-untyped-def,assignment]
    collection = Collection.objects.get(slug="demo")
    project = Project.objects.create(slug="oncology", title="Oncology", collection=collection, concept_roots=roots)
    project.concept_types.set(types)
    workspace = Collection.objects.create(slug="oncology-bob", title="bob's copies", dictionary=dictionary, is_workspace=True)
    Workspace.objects.create(project=project, annotator=annotator, collection=workspace)
    copy = Document.objects.create(collection=workspace, external_id="copy-1", text=TEXT)
    start = TEXT.index("breast cancer")
    mention = Mention.objects.create(document=copy, start=start, end=start + len("breast cancer"), text="breast cancer", mention_type="Disease")
    return Setting(dictionary, collection, project, workspace, _fresh(mention.pk))


def _fresh(pk: int) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").get(pk=pk)


def _ids(pks: frozenset[int]) -> set[str]:
    return set(Concept.objects.filter(pk__in=pks).values_list("concept_id", flat=True))


def _type(label: str) -> KnownType:
    return KnownType.objects.get(label=label)


# --- what the filter allows ------------------------------------------------------------------------------------


def test_a_root_allows_its_whole_subtree_and_itself(demo) -> None:  # type: ignore[no-untyped-def]
    f = build_filter(demo, [], [NEOPLASMS], "Oncology")
    assert f is not None
    assert _ids(f.concept_pks) == UNDER_NEOPLASMS == set(f.concept_ids)
    assert f.describe() == "under MESH:D009369 Neoplasms"
    hypertension = Concept.objects.get(version=demo.latest_version(), concept_id=HYPERTENSION)
    assert not f.allows(hypertension.pk) and f.allows_id(BREAST_NEOPLASMS)


def test_types_and_roots_together_allow_their_intersection(demo) -> None:  # type: ignore[no-untyped-def]
    f = build_filter(demo, [_type("Digestive system disease").pk], [NEOPLASMS])
    assert f is not None
    assert set(f.concept_ids) == {"MESH:D015179", "MESH:D003110"}  # colorectal and colonic neoplasms
    assert f.describe() == "known type Digestive system disease; under MESH:D009369 Neoplasms"


def test_types_alone_allow_every_concept_of_the_types(demo) -> None:  # type: ignore[no-untyped-def]
    f = build_filter(demo, [_type("Neoplasm").pk, _type("Urologic disease").pk], [])
    assert f is not None
    urologic = set(Concept.objects.filter(version=demo.latest_version(), known_types__label="Urologic disease").values_list("concept_id", flat=True))
    assert len(urologic) == 2 and set(f.concept_ids) == UNDER_NEOPLASMS | urologic
    assert f.describe() == "known type Neoplasm or Urologic disease"


def test_no_types_and_no_roots_is_no_filter(demo) -> None:  # type: ignore[no-untyped-def]
    assert build_filter(demo, [], []) is None
    assert build_filter(demo, [], ["  "]) is None


def test_a_root_the_current_release_lacks_is_refused_by_name(demo) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=r"root MESH:D999999 is not a concept of MEDIC \(demo slice\) \(release"):
        build_filter(demo, [], [NEOPLASMS, "MESH:D999999"])


def test_a_filter_matching_nothing_is_refused_with_the_reason(demo) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as refused:
        build_filter(demo, [_type("Neoplasm").pk], ["MESH:D009422"])
    assert str(refused.value) == (
        "the concept filter matches no concept of MEDIC (demo slice): "
        "no concept of type Neoplasm is under MESH:D009422 Nervous System Diseases"
    )


def test_a_cycle_in_the_hierarchy_ends_the_walk(demo) -> None:  # type: ignore[no-untyped-def]
    version = demo.latest_version()
    by_id = {c.concept_id: c for c in Concept.objects.filter(version=version, concept_id__in=[NEOPLASMS, "MESH:D003110"])}
    HierarchyEdge.objects.create(version=version, child=by_id[NEOPLASMS], parent=by_id["MESH:D003110"])  # bad data
    forget_filters()
    f = build_filter(demo, [], ["MESH:D003110"])
    assert f is not None and set(f.concept_ids) == UNDER_NEOPLASMS  # Neoplasms is now "under" Colonic Neoplasms


def test_the_filter_of_a_collection(demo, bob, charlie) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    workspace_filter = filter_for_collection(s.workspace)
    assert workspace_filter is not None and workspace_filter.project_title == "Oncology"
    assert set(workspace_filter.concept_ids) == UNDER_NEOPLASMS
    own = filter_for_collection(s.collection)
    assert own is not None and set(own.concept_ids) == UNDER_NEOPLASMS

    other = Project.objects.create(slug="oncology-2", title="Oncology again", collection=s.collection, concept_roots=[NEOPLASMS])
    assert filter_for_collection(s.collection) is not None  # the same filter: it applies
    other.concept_roots = ["MESH:D009422"]
    other.save()
    assert filter_for_collection(s.collection) is None  # two projects disagree: neither narrows the other's decisions
    assert filter_for_collection(s.workspace) is not None  # a workspace has its own project's filter
    assert filter_for_collection(Collection.objects.create(slug="plain", title="Plain", dictionary=demo)) is None


# --- the panel, search and decisions of a filtered project -----------------------------------------------------


def test_the_panel_ranks_only_allowed_concepts_and_still_fills_the_list(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    ranking = panel_ranking(s.mention)
    assert ranking is not None and ranking.concept_filter is not None
    shown = [c.concept_id for c in ranking.candidates]
    assert shown[0] == BREAST_NEOPLASMS and set(shown) <= UNDER_NEOPLASMS
    assert store_ranking(s.mention, ranking)  # a POST on the mention stores what its panel shows
    stored = list(s.mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank").values_list("concept_ref", flat=True))
    assert stored == shown
    p = selectors.panel(s.mention, ranking)
    assert [row.concept_id for row in p.candidates] == shown
    assert p.concept_filter == "under MESH:D009369 Neoplasms"
    client = Client()
    client.force_login(bob)
    body = client.get(f"/curate/mentions/{s.mention.pk}/panel/").content.decode()
    assert "Concept filter: under MESH:D009369 Neoplasms" in body
    assert HYPERTENSION not in body

    # A text whose usual top k holds one neoplasm: the linker is asked for more, and the panel shows more than one.
    start = TEXT.index("pulmonary disease")
    lung = _fresh(Mention.objects.create(document=s.mention.document, start=start, end=start + 17, text="pulmonary disease").pk)
    ranking = panel_ranking(lung)
    assert ranking is not None
    _, (narrow,) = link_in_document(ranking.active, [lung], TEXT, SUGGESTIONS_K)
    _, (wide,) = link_in_document(ranking.active, [lung], TEXT, SUGGESTIONS_K * FILTER_WIDENING)
    assert len([c for c in narrow.candidates if c.concept_id in UNDER_NEOPLASMS]) == 1
    expected = [c.concept_id for c in wide.candidates if c.concept_id in UNDER_NEOPLASMS][:SUGGESTIONS_K]
    assert len(expected) > 1 and [c.concept_id for c in ranking.candidates] == expected


def test_stored_suggestions_made_before_the_filter_are_filtered_and_replaced(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    version = demo.latest_version()
    for rank, cid in enumerate([HYPERTENSION, BREAST_NEOPLASMS], start=1):
        Link.objects.create(mention=s.mention, concept=Concept.objects.get(version=version, concept_id=cid), concept_ref=cid,
                            origin=Link.Origin.MODEL, rank=rank, score=1.0 / rank, model_version="before the filter")
    Mention.objects.filter(pk=s.mention.pk).update(status=Mention.Status.SUGGESTED)
    mention = _fresh(s.mention.pk)
    stored_only = selectors.panel(mention, None)
    assert [row.concept_id for row in stored_only.candidates] == [BREAST_NEOPLASMS]
    assert stored_only.concept_filter == "under MESH:D009369 Neoplasms"

    ranking = panel_ranking(mention)
    assert ranking is not None and store_ranking(mention, ranking)
    refs = set(mention.links.filter(origin=Link.Origin.MODEL).values_list("concept_ref", flat=True))
    assert refs and refs <= UNDER_NEOPLASMS


def test_the_background_suggestions_of_a_workspace_are_filtered(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    assert suggest_for_collection(s.workspace.pk) == 1
    refs = list(s.mention.links.filter(origin=Link.Origin.MODEL).order_by("rank").values_list("concept_ref", flat=True))
    assert refs[0] == BREAST_NEOPLASMS and set(refs) <= UNDER_NEOPLASMS
    ranking = panel_ranking(_fresh(s.mention.pk))
    assert ranking is not None and not store_ranking(_fresh(s.mention.pk), ranking)  # the panel shows what the worker stored


def test_search_finds_only_allowed_concepts(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    version = selectors.search_version(s.workspace)
    everything = {hit.concept.concept_id for hit in search_concepts(version, "lung")}
    assert {"MESH:D008171", "MESH:D008175", "MESH:D002289"} <= everything  # lung diseases as well as neoplasms
    within = selectors.search_within(s.workspace)
    assert {hit.concept.concept_id for hit in search_concepts(version, "lung", within=within)} == {"MESH:D008175", "MESH:D002289"}
    assert search_concepts(version, HYPERTENSION, within=within) == []  # by id too

    client = Client()
    client.force_login(bob)
    body = client.get(f"/curate/mentions/{s.mention.pk}/search/", {"q": "lung"}).content.decode()
    assert "MESH:D008175" in body and "MESH:D002289" in body and "MESH:D008171" not in body


def test_a_decision_outside_the_filter_is_refused_with_the_filter_named(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [NEOPLASMS])
    version = demo.latest_version()
    hypertension = Concept.objects.get(version=version, concept_id=HYPERTENSION)
    with pytest.raises(CurationError) as refused:
        decide(user=bob, mention_id=s.mention.pk, action="relink", seen_updated_at=s.mention.updated_at, concept=hypertension)
    assert str(refused.value) == (
        "MESH:D006973 Hypertension is outside the concept filter of project “Oncology” (under MESH:D009369 Neoplasms): "
        "choose a concept it allows"
    )
    assert not Link.objects.filter(mention=s.mention, origin=Link.Origin.CURATOR).exists()

    breast = Concept.objects.get(version=version, concept_id=BREAST_NEOPLASMS)
    outcome = decide(user=bob, mention_id=s.mention.pk, action="relink", seen_updated_at=s.mention.updated_at, concept=breast)
    assert outcome.decision.concept == breast

    client = Client()
    client.force_login(bob)
    mention = _fresh(s.mention.pk)
    answer = client.post(f"/curate/mentions/{mention.pk}/decide/",
                         {"action": "relink", "concept": hypertension.pk, "seen": mention.updated_at.isoformat(), "via": "search"})
    assert answer.status_code == 400 and "outside the concept filter of project “Oncology”" in answer.content.decode()


def test_without_a_filter_nothing_changes(demo, bob) -> None:  # type: ignore[no-untyped-def]
    s = _setting(demo, bob, [])
    assert filter_for_collection(s.workspace) is None
    ranking = panel_ranking(s.mention)
    assert ranking is not None and ranking.concept_filter is None
    _, (plain,) = link_in_document(ranking.active, [s.mention], TEXT, SUGGESTIONS_K)
    assert [c.concept_id for c in ranking.candidates] == [c.concept_id for c in plain.candidates]
    assert selectors.panel(s.mention, ranking).concept_filter == ""
    assert selectors.search_within(s.workspace) is None
    hypertension = Concept.objects.get(version=demo.latest_version(), concept_id=HYPERTENSION)
    mention = _fresh(s.mention.pk)
    outcome = decide(user=bob, mention_id=mention.pk, action="relink", seen_updated_at=mention.updated_at, concept=hypertension)
    assert outcome.decision.concept == hypertension
