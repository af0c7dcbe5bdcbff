"""The candidate panel with a LATTE re-ranker: re-ranked order stored as shown, latent types, type conflicts,
homonyms, who ranked; the retriever's ranking with a notice when the artifact's re-ranker is refused; the
review queue's "type conflicts"."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from linker.retrieval import Candidate
from tests.curation_latte import (
    activate_artifact,
    corrupted_copy,
    linked,
    mention_with_a_conflict,
    train_demo_latte,
)
from webapp.corpus.models import Collection, Link, Mention
from webapp.curation import selectors
from webapp.curation.services import panel_ranking, store_ranking, store_suggestions, suggest_for_collection
from webapp.curation.services.suggestions import concept_pks
from webapp.linking.registry import forget_all, get_active_linker
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Name

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def demo(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    from webapp.demo.load import load_demo

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    yield Collection.objects.get(slug="demo")
    forget_all()


@pytest.fixture
def latte(demo, latte_cache: Path) -> Path:  # type: ignore[no-untyped-def]
    """The demo collection served by a tiny LATTE artifact; returns the artifact folder."""
    folder = train_demo_latte(latte_cache, demo)
    activate_artifact(demo.dictionary.latest_version(), folder)
    return folder


def _panel(client, mention: Mention) -> str:  # type: ignore[no-untyped-def]
    response = client.get(f"/curate/mentions/{mention.pk}/panel/")
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_the_panel_shows_latent_types_a_type_conflict_and_the_reranker(bob_client, demo, latte) -> None:  # type: ignore[no-untyped-def]
    active = get_active_linker("medic-demo")
    assert active is not None and active.linker.ranked_by == "latte"
    mention, expected = mention_with_a_conflict(active.linker, demo)
    assert expected.typing is not None and active.linker.reranker is not None
    body = _panel(bob_client, mention)

    top_latent = active.linker.reranker.latent_type(expected.typing[0].latent_type)
    assert top_latent is not None and f"latent: {top_latent.label}" in body
    assert body.count('class="badge latent-type cand-latent"') == sum(1 for t in expected.typing if t.latent_type >= 0)
    assert ", ".join(top_latent.typical_names) in body  # the full typical names in the tooltip
    n_conflicts = sum(t.type_conflict for t in expected.typing)
    assert body.count("badge badge-danger type-conflict") == n_conflicts >= 1
    conflicted = next(t for t in expected.typing if t.type_conflict)
    best_type = expected.mention_known_types[0][0]
    assert f"the mention is predicted as {best_type}" in body and f"while this concept is {', '.join(conflicted.known_types)}" in body
    assert 'class="small mention-types"' in body and best_type in body.split('class="small mention-types"')[1].split("</p>")[0]
    assert "ranked by the LATTE re-ranker" in body and active.label in body
    assert "latent: —" not in body and "reranker-problem" not in body


def test_api_link_ranks_and_types_as_the_panel_does(bob, demo, latte) -> None:  # type: ignore[no-untyped-def]
    """A pipeline asking POST /api/link gets the re-ranker's order and scores, and the same types as the panel."""
    from rest_framework.test import APIClient

    active = get_active_linker("medic-demo")
    assert active is not None and active.linker.reranker is not None
    mention, expected = mention_with_a_conflict(active.linker, demo)
    api = APIClient()
    api.force_authenticate(bob)
    response = api.post("/api/link", {"dictionary": "medic-demo", "text": mention.document.text,
                                      "mentions": [{"start": mention.start, "end": mention.end}], "k": 10}, format="json")
    assert response.status_code == 200, response.json()
    (got,) = response.json()["mentions"]
    assert got["ranked_by"] == "latte"
    assert [c["concept_id"] for c in got["candidates"]] == [c.concept_id for c in expected.candidates]
    assert [c["score"] for c in got["candidates"]] == pytest.approx([c.score for c in expected.candidates], abs=1e-5)
    assert [p["type"] for p in got["predicted_types"]] == [label for label, _ in expected.mention_known_types]
    assert expected.typing is not None
    assert [c["type_conflict"] for c in got["candidates"]] == [t.type_conflict for t in expected.typing]
    top_latent = active.linker.reranker.latent_type(expected.typing[0].latent_type)
    assert top_latent is not None and got["candidates"][0]["latent_type"]["label"] == top_latent.label
    assert got["candidates"][0]["latent_type"]["typical_names"] == list(top_latent.typical_names)
    assert got["latent_type"] is not None and 0 <= got["latent_type"]["probability"] <= 1

    # types=false: a re-ranker that re-orders still ranks (the order is part of the answer) ...
    body = {"dictionary": "medic-demo", "text": mention.document.text,
            "mentions": [{"start": mention.start, "end": mention.end}], "k": 10, "types": False}
    (fast,) = api.post("/api/link", body, format="json").json()["mentions"]
    assert fast["ranked_by"] == "latte" and [c["concept_id"] for c in fast["candidates"]] == [c["concept_id"] for c in got["candidates"]]
    # ... and one that only types (it kept the retriever's order) is skipped: the same order, no types.
    active.linker.reranker.model.rank_as_retriever()
    (typed,) = api.post("/api/link", body | {"types": True}, format="json").json()["mentions"]
    (untyped,) = api.post("/api/link", body, format="json").json()["mentions"]
    assert typed["ranked_by"] == untyped["ranked_by"] == "retriever"
    assert [c["concept_id"] for c in typed["candidates"]] == [c["concept_id"] for c in untyped["candidates"]]
    assert typed["predicted_types"] and any(c["latent_type"] for c in typed["candidates"])
    assert untyped["predicted_types"] == [] and not any(c["latent_type"] or c["type_conflict"] for c in untyped["candidates"])
    forget_all()  # the next test loads the artifact as trained


def test_a_reranker_that_kept_the_retrievers_order_is_named_as_typing_only(bob_client, demo, latte) -> None:  # type: ignore[no-untyped-def]
    """Its held-out fold found no order better than the retriever's: the panel says the retriever ranked, shows the
    retriever's scores, and keeps the re-ranker's types."""
    active = get_active_linker("medic-demo")
    assert active is not None and active.linker.reranker is not None
    active.linker.reranker.model.rank_as_retriever()  # as training leaves it when epoch 0 wins
    mention, expected = mention_with_a_conflict(active.linker, demo)
    assert expected.ranked_by == "retriever" and expected.typing is not None
    body = _panel(bob_client, mention)
    assert "ranked by the retriever, typed by the LATTE re-ranker" in body
    assert "found no order better than the retriever's" in body
    assert "Retriever score" in body and "Re-ranker score" not in body
    assert body.count("badge badge-danger type-conflict") == sum(t.type_conflict for t in expected.typing) >= 1
    forget_all()  # the next test loads the artifact as trained


def test_stored_suggestions_are_the_reranked_order_with_their_conflicts(demo, latte) -> None:  # type: ignore[no-untyped-def]
    active = get_active_linker("medic-demo")
    assert active is not None
    mention, expected = mention_with_a_conflict(active.linker, demo)
    mention = Mention.objects.select_related("document__collection__dictionary").get(pk=mention.pk)
    ranking = panel_ranking(mention)
    assert ranking is not None and ranking.linked.ranked_by == "latte"
    assert store_ranking(mention, ranking)  # as a POST on the mention stores what its panel shows
    stored = list(mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank"))
    assert [link.concept_ref for link in stored] == [c.concept_id for c in expected.candidates]
    assert [link.score for link in stored] == pytest.approx([c.score for c in expected.candidates], abs=1e-5)  # the re-ranker's r
    assert [link.type_conflict for link in stored] == [t.type_conflict for t in expected.typing or []]
    shown = selectors.panel(mention, ranking).candidates
    assert [(r.rank, r.concept_id) for r in shown] == [(link.rank, link.concept_ref) for link in stored]

    # The background task stores the same ranking for every open mention, each linked in its document.
    Link.objects.filter(origin=Link.Origin.MODEL).delete()
    Mention.objects.filter(document__collection=demo).update(status=Mention.Status.PENDING)
    assert suggest_for_collection(demo.pk) == Mention.objects.filter(document__collection=demo).count()
    again = Mention.objects.select_related("document").get(pk=mention.pk)
    assert list(again.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank").values_list("concept_ref", "type_conflict")) == [
        (c.concept_id, t.type_conflict) for c, t in zip(expected.candidates, expected.typing or [], strict=True)
    ]


def test_a_name_shared_by_two_concepts_is_flagged_with_the_other_concept(bob_client, demo, latte) -> None:  # type: ignore[no-untyped-def]
    # A curator synonym gives "hypertension" a second owner, vascular diseases.
    Name.objects.create(concept=Concept.objects.get(concept_id="MESH:D014652"), text="hypertension", normalized="hypertension", source=Name.Source.CURATOR)
    mention = Mention.objects.get(document__collection=demo, text="hypertension")
    body = _panel(bob_client, mention)
    candidate = body.split('data-concept-id="MESH:D006973"')[1].split('class="cand-side"')[0]
    flag = candidate.split('class="small homonym"')[1].split("</div>")[0]
    assert "MESH:D014652" in flag and "Vascular Diseases" in flag and "the choice is a convention, not a spelling" in flag


def test_a_corrupted_reranker_is_named_and_the_retriever_ranks(bob_client, demo, latte, tmp_path) -> None:  # type: ignore[no-untyped-def]
    broken = corrupted_copy(latte, tmp_path / "broken")
    activate_artifact(demo.dictionary.latest_version(), broken)
    active = get_active_linker("medic-demo")
    assert active is not None and active.linker.reranker is None and active.linker.reranker_problem
    mention = Mention.objects.select_related("document").get(document__collection=demo, text="hypertension")
    body = _panel(bob_client, mention)
    assert "class=\"small reranker-problem\"" in body and "corrupted" in body
    assert "ranked by the retriever" in body and "cand-latent" not in body and "type-conflict" not in body
    retriever = [c.concept_id for c in linked(active.linker, mention).candidates]
    shown = [part.split('"')[0] for part in body.split('data-concept-id="')[1:]]
    assert shown == retriever
    # The GET stored nothing; the suggestions task an index promotion queues stores what the panel shows.
    suggest_for_collection(demo.pk)
    stored = list(mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank").values_list("concept_ref", flat=True))
    assert stored == retriever


def test_without_a_reranker_the_panel_shows_no_latent_types(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    activate_index(build_index(create_index_version(demo.dictionary.latest_version(), None)).pk)  # sparse only
    body = _panel(bob_client, Mention.objects.get(document__collection=demo, text="hypertension"))
    assert "latent" not in body and "type-conflict" not in body and "reranker-problem" not in body
    assert "ranked by the retriever" in body and "mention-types" not in body


def test_suggested_links_with_a_type_conflict_have_their_own_queue(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    version = demo.dictionary.latest_version()
    hypertension = Mention.objects.get(document__collection=demo, text="hypertension")
    asthma = Mention.objects.get(document__collection=demo, text="asthma")
    pks = concept_pks(version, ["MESH:D006973", "MESH:D009369", "MESH:D001249"])

    def cand(cid: str, score: float) -> Candidate:
        return Candidate(cid, cid, score, float("nan"), score)

    # The suggested (rank 1) link of hypertension conflicts; asthma's conflict is at rank 2 only.
    store_suggestions(hypertension, [cand("MESH:D009369", 0.9), cand("MESH:D006973", 0.8)], "latte-test", pks, [True, False])
    store_suggestions(asthma, [cand("MESH:D001249", 0.9), cand("MESH:D009369", 0.5)], "latte-test", pks, [False, True])
    assert [m.pk for m in selectors.review_queue(demo, type_conflicts=True)] == [hypertension.pk]
    assert selectors.type_conflict_count(demo) == 1
    assert next(m for m in selectors.review_queue(demo) if m.pk == hypertension.pk).type_conflict

    page = bob_client.get("/curate/demo/").content.decode()
    assert "Review type conflicts (1)" in page and "Type conflicts only (1)" in page
    filtered = bob_client.get("/curate/demo/?queue=conflicts").content.decode()
    assert "Type conflicts, most uncertain first" in filtered and filtered.count("badge badge-danger type-conflict") == 1
    assert ">hypertension</a>" in filtered and ">asthma</a>" not in filtered
    response = bob_client.get("/curate/demo/queue/next/?conflicts=1")
    assert response.status_code == 302 and f"m={hypertension.pk}&queue=1&conflicts=1" in response["Location"]


def test_an_index_built_with_a_latte_artifact_keeps_its_reranker(demo, latte) -> None:  # type: ignore[no-untyped-def]
    """``build_index --model <train-rerank output>``: the re-ranker comes along when it fits the dictionary."""
    from django.core.management import call_command

    forget_all()
    call_command("build_index", dictionary=demo.dictionary.slug, model=latte, activate=True)
    active = get_active_linker(demo.dictionary.slug)
    assert active is not None and active.linker.reranker is not None
    assert str(active.linker.ranked_by) == "latte"
