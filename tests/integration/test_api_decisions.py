"""Curators record decisions on mentions; a stale view of the mention is refused with 409."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services.decisions import Conflict, decide
from webapp.curation.services.errors import CurationError
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="d" * 64)
    asthma = Concept.objects.create(version=v, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    copd = Concept.objects.create(version=v, concept_id="MESH:D029424", preferred_name="Pulmonary Disease, Chronic Obstructive")
    collection = Collection.objects.create(slug="c", title="C", dictionary=d)
    doc = Document.objects.create(collection=collection, external_id="1", text="Wheezy bronchitis in adults.")
    mention = Mention.objects.create(document=doc, start=0, end=17, text="Wheezy bronchitis", status=Mention.Status.SUGGESTED, source=Mention.Source.DETECTOR)
    Link.objects.create(mention=mention, concept=copd, concept_ref=copd.concept_id, origin=Link.Origin.MODEL, rank=1, score=9.0, model_version="mini@1/sparse/index-1")
    Link.objects.create(mention=mention, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=2, score=7.5, model_version="mini@1/sparse/index-1")
    return {"mention": mention, "asthma": asthma, "copd": copd}


def _decide(client: APIClient, mention: Mention, **body: object):  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    payload = {"updated_at": mention.updated_at.isoformat(), **body}
    return client.post(f"/api/mentions/{mention.pk}/decision/", payload, format="json")


def test_accept_takes_the_top_suggestion_with_its_rank_and_model_version(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, world["mention"], action="accept")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "accepted"
    curated = [link for link in body["links"] if link["origin"] == "curator"]
    assert curated == [
        {**curated[0], "concept_id": "MESH:D029424", "rank": 1, "score": 9.0, "model_version": "mini@1/sparse/index-1", "created_by": "bob", "nil": False}
    ]
    synonym = Name.objects.get(concept=world["copd"], text="Wheezy bronchitis")
    assert (synonym.source, synonym.normalized, synonym.created_by) == ("curator", "wheezy bronchitis", bob)


def test_relink_to_a_lower_candidate_records_its_rank(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, world["mention"], action="relink", concept_id="MESH:D001249")
    assert response.status_code == 200
    link = Link.objects.get(mention=world["mention"], origin=Link.Origin.CURATOR)
    assert (link.concept, link.rank, link.created_by) == (world["asthma"], 2, bob)
    assert Mention.objects.get(pk=world["mention"].pk).status == Mention.Status.RELINKED
    assert Name.objects.filter(concept=world["asthma"], text="Wheezy bronchitis", source="curator").exists()


def test_relink_by_an_id_spelling_without_prefix(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    assert _decide(client, world["mention"], action="relink", concept_id="D001249").status_code == 200
    assert Link.objects.get(mention=world["mention"], origin="curator").concept == world["asthma"]


def test_nil_and_reject(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    assert _decide(client, world["mention"], action="nil").json()["status"] == "nil"
    assert Link.objects.get(mention=world["mention"], origin="curator").nil
    assert _decide(client, world["mention"], action="reject").json()["status"] == "rejected"
    assert Link.objects.filter(mention=world["mention"], origin="curator").count() == 1  # reject adds no link
    assert not Name.objects.filter(source="curator").exists()


def test_a_stale_updated_at_gets_409_and_records_nothing(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    mention = world["mention"]
    seen = mention.updated_at
    assert _decide(client, mention, action="accept").status_code == 200
    response = client.post(f"/api/mentions/{mention.pk}/decision/", {"action": "nil", "updated_at": seen.isoformat()}, format="json")
    assert response.status_code == 409
    assert "Your decision was not saved" in response.json()["detail"]
    assert response.json()["current"]["status"] == "accepted"
    assert Link.objects.filter(mention=mention, origin="curator").count() == 1


def test_relink_to_an_unknown_concept_is_400(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, world["mention"], action="relink", concept_id="MESH:NOPE")
    assert response.status_code == 400
    assert "no concept 'MESH:NOPE'" in response.json()["concept_id"][0]


def test_relink_without_a_concept_is_400(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, world["mention"], action="relink")
    assert response.status_code == 400
    assert "relink needs a concept" in response.json()["detail"]


def test_service_refuses_stale_versions_and_missing_concepts(bob, world) -> None:  # type: ignore[no-untyped-def]
    mention = world["mention"]
    with pytest.raises(Conflict, match="Your decision was not saved"):
        decide(mention_id=mention.pk, action="nil", user=bob, seen_updated_at=mention.updated_at - timedelta(seconds=1))
    mention.links.all().delete()
    with pytest.raises(CurationError, match="no suggestion or gold concept to accept"):
        decide(mention_id=mention.pk, action="accept", user=bob, seen_updated_at=mention.updated_at)
    with pytest.raises(CurationError, match="no part 4"):
        decide(mention_id=mention.pk, action="nil", user=bob, seen_updated_at=mention.updated_at, part=3)
    assert not Link.objects.filter(mention=mention).exists()


def test_service_refuses_a_concept_of_another_dictionary(bob, world) -> None:  # type: ignore[no-untyped-def]
    other = Dictionary.objects.create(slug="other", title="Other")
    v = DictionaryVersion.objects.create(dictionary=other, release="1", source_format="obo", checksum="o" * 64)
    foreign = Concept.objects.create(version=v, concept_id="HP:0002099", preferred_name="Asthma")
    mention = world["mention"]
    with pytest.raises(CurationError, match="another dictionary"):
        decide(mention_id=mention.pk, action="relink", user=bob, seen_updated_at=mention.updated_at, concept=foreign)


def test_decisions_show_up_in_mention_filters(bob, world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(bob)
    _decide(client, world["mention"], action="relink", concept_id="MESH:D001249")
    ids = lambda r: [m["id"] for m in r.json()["results"]]  # noqa: E731
    assert ids(client.get("/api/mentions/", {"status": "relinked"})) == [world["mention"].pk]
    assert ids(client.get("/api/mentions/", {"status": "accepted"})) == []
    assert ids(client.get("/api/mentions/", {"origin": "curator", "concept": "MESH:D001249"})) == [world["mention"].pk]
    links = client.get("/api/links/", {"origin": "curator"}).json()["results"]
    assert [(link["concept_id"], link["created_by"]) for link in links] == [("MESH:D001249", "bob")]


def test_api_decisions_go_through_the_curation_log(bob, world) -> None:  # type: ignore[no-untyped-def]
    """Pipelines' decisions are logged, undoable and feed hard negatives exactly like the curation screen's."""
    from webapp.curation.models import Decision, HardNegative
    from webapp.curation.services.undo import undo

    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, world["mention"], action="relink", concept_id="MESH:D001249", time_on_task_ms=4200)
    assert response.status_code == 200, response.json()
    decision = Decision.objects.get(mention=world["mention"])
    assert (decision.via, decision.action, decision.rank, decision.time_on_task_ms) == ("api", "relink", 2, 4200)
    assert decision.model_version == "mini@1/sparse/index-1"
    assert list(HardNegative.objects.values_list("concept__concept_id", flat=True)) == ["MESH:D029424"]
    undo(user=bob, decision_id=decision.pk)
    world["mention"].refresh_from_db()
    assert world["mention"].status == Mention.Status.SUGGESTED


def test_a_gold_composite_without_part_texts_is_decided_per_part_without_a_whole_text_synonym(bob, world) -> None:  # type: ignore[no-untyped-def]
    """One part count for every path: parts are the part texts, or as many as any link (gold included) names."""
    mention = world["mention"]
    Link.objects.create(mention=mention, part=1, concept=world["asthma"], concept_ref="MESH:D001249", origin=Link.Origin.GOLD)
    client = APIClient()
    client.force_authenticate(bob)
    response = _decide(client, mention, action="accept", part=1)
    assert response.status_code == 200, response.json()
    link = Link.objects.get(mention=mention, origin="curator")
    assert (link.part, link.concept) == (1, world["asthma"])  # the part's gold concept: the linker suggested none there
    # "Wheezy bronchitis" names the whole composite, not its second part: no curator synonym.
    assert not Name.objects.filter(source="curator").exists()
    assert "no part 3" in _decide(client, mention, action="nil", part=2).json()["detail"]
