"""What a decision teaches (issue 41, item 15; the rule is webapp.curation.teaching): a link to a parent adds no
name to the parent (the live index and the next mention's ranking stay as they were), a decision made without
teaching adds no name, no hard negative and is no training evidence (its propagated copies neither), and the
panel says what each decision will teach before it is made."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.integration.project_fixtures import demo_collection  # noqa: E402,F401 (fixture)
from webapp.corpus.models import Document, Link, Mention
from webapp.curation import services
from webapp.curation.models import Decision, HardNegative
from webapp.curation.teaching import teaching_decisions
from webapp.linking.registry import get_active_linker
from webapp.training.loop import counted_decisions
from webapp.vocab.models import Concept, Name

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks (the live index update) must run

BREAST = "MESH:D001943"  # Breast Neoplasms
BY_SITE = "MESH:D009371"  # Neoplasms by Site, its parent in the demo's MEDIC slice


@pytest.fixture
def demo(demo_collection):  # type: ignore[no-untyped-def]  # noqa: F811
    """The demo collection (its MEDIC slice has a hierarchy), a sparse index, suggestions stored."""
    return demo_collection


def _mention(text: str) -> Mention:
    return Mention.objects.filter(text=text).select_related("document").order_by("pk").first()  # type: ignore[return-value]


def _concept(cid: str) -> Concept:
    return Concept.objects.get(concept_id=cid)


def _ranking(text: str) -> list[str]:
    return [c.concept_id for c in get_active_linker("medic-demo").linker.link_mentions([text], k=5)[0]]


def test_a_parent_link_teaches_the_parent_nothing(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = _mention("breast cancer")
    assert m.links.filter(origin=Link.Origin.MODEL, rank=1).get().concept_ref == BREAST
    before = _ranking("hereditary breast cancer")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at,
                              concept=_concept(BY_SITE), via="parent")
    decision = Decision.objects.get(pk=outcome.decision.pk)
    assert (decision.concept_ref, decision.via, decision.teaches, decision.synonym) == (BY_SITE, "parent", False, None)
    assert not Name.objects.filter(concept__concept_id=BY_SITE, text="breast cancer").exists()
    # The more specific candidate above the parent is not wrong: no hard negative, no training evidence.
    assert not HardNegative.objects.filter(decision=decision).exists()
    assert not Decision.objects.filter(teaching_decisions(), pk=decision.pk).exists()
    assert not counted_decisions(demo.dictionary_id).filter(pk=decision.pk).exists()
    assert _ranking("hereditary breast cancer") == before  # the next mention ranks as before
    m.refresh_from_db()
    assert m.status == Mention.Status.RELINKED  # the link itself stands


def test_a_sibling_link_teaches_its_name(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = _mention("breast cancer")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at,
                              concept=_concept("MESH:D010051"), via="sibling")
    assert outcome.decision.teaches
    assert Name.objects.filter(concept__concept_id="MESH:D010051", text="breast cancer", source=Name.Source.CURATOR).exists()


def test_a_decision_without_teaching_adds_no_name_negative_or_training_pair(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = _mention("Type 2 diabetes")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at,
                              concept=_concept("MESH:D003922"), teach=False)
    decision = Decision.objects.get(pk=outcome.decision.pk)
    assert (decision.teaches, decision.synonym, decision.rank) == (False, None, 2)
    assert not Name.objects.filter(text="Type 2 diabetes", concept__concept_id="MESH:D003922").exists()
    assert not HardNegative.objects.filter(decision=decision).exists()
    assert not counted_decisions(demo.dictionary_id).filter(pk=decision.pk).exists()
    # The same decision taught (the control): a name and a hard negative.
    other = _mention("obese")
    taught = services.decide(user=bob, mention_id=other.pk, action="relink", seen_updated_at=other.updated_at,
                             concept=_concept("MESH:D003922"))
    assert taught.decision.teaches and taught.decision.synonym is not None
    assert counted_decisions(demo.dictionary_id).filter(pk=taught.decision.pk).exists()


def test_copies_of_an_untaught_decision_teach_nothing_either(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = _mention("breast cancer")
    extra = Document.objects.create(collection=demo, external_id="extra", text="Breast cancer again.")
    twin = Mention.objects.create(document=extra, start=0, end=13, text="Breast cancer", status="pending")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at,
                              concept=_concept("MESH:D010051"), scope=services.Scope.COLLECTION, teach=False)
    assert [d.mention_id for d in outcome.propagated] == [twin.pk]
    assert not any(d.teaches or d.synonym_id for d in outcome.propagated)
    assert not Name.objects.filter(concept__concept_id="MESH:D010051", normalized="breast cancer").exists()
    assert not HardNegative.objects.filter(decision__batch=outcome.batch).exists()


def test_the_panel_says_what_each_decision_teaches(demo, bob, client) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    m = _mention("breast cancer")
    body = client.get(f"/curate/mentions/{m.pk}/panel/").content.decode()
    assert "Accept teaches “breast cancer” as a name of Breast Neoplasms." in body
    assert "a parent (↑, p) teaches nothing" in body
    # Each button says what it teaches: the top candidate's Link a name, its parent button nothing.
    assert 'title="Teaches “breast cancer” as a name of Breast Neoplasms"' in body
    assert "Link the parent: Neoplasms by Site (MESH:D009371); teaches nothing (a parent is less specific than the text)" in body
    # The toggle, with its key, rides along with every decision.
    assert 'id="no-teach" name="teach" value="false"' in body and "Decide without teaching <kbd>t</kbd>" in body
    assert body.count("#no-teach") >= 4  # accept, NIL, reject, each candidate's buttons


def test_deciding_without_teaching_through_the_panel(demo, bob, client) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    m = _mention("Type 2 diabetes")
    url = f"/curate/mentions/{m.pk}/decide/"
    concept = _concept("MESH:D003922")
    refused = client.post(url, {"action": "relink", "concept": concept.pk, "seen": m.updated_at.isoformat(), "teach": "maybe"})
    assert refused.status_code == 400 and "teach:" in refused.content.decode()
    answer = client.post(url, {"action": "relink", "concept": concept.pk, "seen": m.updated_at.isoformat(), "teach": "false"})
    assert answer.status_code == 200
    assert "Taught nothing." in answer.content.decode()
    assert not Name.objects.filter(text="Type 2 diabetes", concept=concept).exists()
    other = _mention("obese")
    taught = client.post(f"/curate/mentions/{other.pk}/decide/",
                         {"action": "relink", "concept": concept.pk, "seen": other.updated_at.isoformat()})
    assert "Taught “obese” as a name of Diabetes Mellitus, Type 1." in taught.content.decode()


def test_the_api_decides_without_teaching(demo, bob) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(bob)
    m = _mention("Type 2 diabetes")
    url = f"/api/mentions/{m.pk}/decision/"
    bad = api.post(url, {"action": "relink", "concept_id": "MESH:D003922", "updated_at": m.updated_at.isoformat(),
                         "teach": "perhaps"}, format="json")
    assert bad.status_code == 400 and "teach" in bad.json()
    answer = api.post(url, {"action": "relink", "concept_id": "MESH:D003922", "updated_at": m.updated_at.isoformat(),
                            "teach": False}, format="json")
    assert answer.status_code == 200
    decision = Decision.objects.get(mention=m)
    assert (decision.via, decision.teaches, decision.synonym) == ("api", False, None)
    assert not Name.objects.filter(text="Type 2 diabetes", concept__concept_id="MESH:D003922").exists()
