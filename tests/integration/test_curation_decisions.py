"""Curation decisions on the demo collection: the log, ranks, synonyms into the live index, hard negatives,
conflicts, propagation to identical mentions, undo, and mention spans."""

from __future__ import annotations

from datetime import timedelta

import pytest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.models import Decision, HardNegative
from webapp.linking.registry import forget_all, get_active_linker
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary, Name

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks (the live index update) must run


@pytest.fixture
def demo(tmp_path, settings):  # type: ignore[no-untyped-def]
    """The project's demo collection (6 abstracts, MEDIC slice), a sparse index, suggestions stored."""
    from django.contrib.auth.models import Group

    from webapp.core.roles import ROLES
    from webapp.demo.load import load_demo

    for role in ROLES:  # a transactional test flushes the groups the migration made
        Group.objects.get_or_create(name=role)
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    dictionary = Dictionary.objects.get(slug="medic-demo")
    activate_index(build_index(create_index_version(dictionary.latest_version(), None)).pk)
    collection = Collection.objects.get(slug="demo")
    services.suggest_for_collection(collection.pk)
    yield collection
    forget_all()


def mention(text: str, document: str | None = None) -> Mention:
    query = Mention.objects.filter(text=text)
    if document:
        query = query.filter(document__external_id=document)
    return query.select_related("document").order_by("pk").first()  # type: ignore[return-value]


def concept(cid: str) -> Concept:
    return Concept.objects.get(concept_id=cid)


def test_suggestions_are_stored_top_k_with_ranks_and_the_model_version(demo) -> None:  # type: ignore[no-untyped-def]
    m = mention("Type 2 diabetes")
    links = list(m.links.filter(origin=Link.Origin.MODEL).order_by("rank"))
    assert m.status == Mention.Status.SUGGESTED
    assert [link.rank for link in links] == list(range(1, len(links) + 1))
    assert 2 <= len(links) <= services.SUGGESTIONS_K
    assert links[0].concept_ref == "MESH:D003924" and links[1].concept_ref == "MESH:D003922"
    assert links[0].score >= links[1].score
    assert {link.model_version for link in links} == {get_active_linker("medic-demo").label}


def test_relinking_the_second_candidate_logs_rank_time_model_and_a_hard_negative(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("Type 2 diabetes")
    outcome = services.decide(
        user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at, concept=concept("MESH:D003922"), time_on_task_ms=4200
    )
    d = Decision.objects.get(pk=outcome.decision.pk)
    assert (d.action, d.rank, d.time_on_task_ms, d.user, d.concept_ref) == ("relink", 2, 4200, bob, "MESH:D003922")
    assert d.model_version == get_active_linker("medic-demo").label
    assert d.previous_status == "suggested"
    m.refresh_from_db()
    assert m.status == Mention.Status.RELINKED
    curator = Link.objects.get(mention=m, origin=Link.Origin.CURATOR)
    assert (curator.concept.concept_id, curator.rank, curator.created_by) == ("MESH:D003922", 2, bob)
    assert list(HardNegative.objects.values_list("mention_text", "concept__concept_id", "rank")) == [("Type 2 diabetes", "MESH:D003924", 1)]


def test_an_accepted_mention_text_becomes_a_curator_synonym_the_live_index_finds(demo, bob) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(external_id="demo-1")
    added = services.add_mention(user=bob, document_id=doc.pk, start=doc.text.index("older adults"), end=doc.text.index("older adults") + 12, mention_type="Modifier")
    m = added.mention
    ckd = concept("MESH:D051436")
    linker = get_active_linker("medic-demo").linker
    assert linker.link_mentions(["older adults"], k=1)[0][0].concept_id != ckd.concept_id
    services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at, concept=ckd, via="search")
    name = Name.objects.get(concept=ckd, text="older adults")
    assert (name.source, name.created_by) == (Name.Source.CURATOR, bob)
    linker = get_active_linker("medic-demo").linker  # the linker handed out before is a snapshot: asked again
    top = linker.link_mentions(["older adults"], k=1)[0][0]
    assert (top.concept_id, top.name) == ("MESH:D051436", "older adults")


def test_finding_the_top_suggestion_through_search_is_an_accept(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("Type 2 diabetes")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at,
                              concept=concept("MESH:D003924"), via="search")
    assert (outcome.decision.action, outcome.decision.rank, outcome.decision.via) == ("accept", 1, "search")
    assert Mention.objects.get(pk=m.pk).status == Mention.Status.ACCEPTED
    assert not HardNegative.objects.filter(decision=outcome.decision).exists()


def test_nil_keeps_the_top_suggestions_as_hard_negatives_and_reject_keeps_none(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("obese")
    services.decide(user=bob, mention_id=m.pk, action="nil", seen_updated_at=m.updated_at)
    assert HardNegative.objects.filter(decision__mention=m).count() == min(services.HARD_NEGATIVES_PER_DECISION, m.links.filter(origin="model").count())
    assert Link.objects.get(mention=m, origin=Link.Origin.CURATOR).nil
    other = mention("stroke")
    services.decide(user=bob, mention_id=other.pk, action="reject", seen_updated_at=other.updated_at)
    other.refresh_from_db()
    assert other.status == Mention.Status.REJECTED
    assert not HardNegative.objects.filter(decision__mention=other).exists()


def test_a_stale_decision_is_refused_with_who_did_what_and_nothing_is_written(demo, alice, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("hypertension")
    seen = m.updated_at
    services.decide(user=bob, mention_id=m.pk, action="accept", seen_updated_at=seen)
    before = (Decision.objects.count(), Link.objects.filter(origin="curator").count())
    with pytest.raises(services.Conflict, match=r"bob accepted the suggestion for this mention .* Your decision was not saved"):
        services.decide(user=alice, mention_id=m.pk, action="nil", seen_updated_at=seen)
    assert (Decision.objects.count(), Link.objects.filter(origin="curator").count()) == before
    m.refresh_from_db()
    assert m.status == Mention.Status.ACCEPTED


def test_undo_restores_status_links_synonym_and_negatives(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("Type 2 diabetes")
    outcome = services.decide(user=bob, mention_id=m.pk, action="relink", seen_updated_at=m.updated_at, concept=concept("MESH:D003922"))
    assert Name.objects.filter(text="Type 2 diabetes", concept__concept_id="MESH:D003922").exists()
    services.undo(user=bob, decision_id=outcome.decision.pk)
    m.refresh_from_db()
    assert m.status == Mention.Status.SUGGESTED
    assert not Link.objects.filter(mention=m, origin=Link.Origin.CURATOR).exists()
    assert not Name.objects.filter(text="Type 2 diabetes", concept__concept_id="MESH:D003922").exists()
    assert not HardNegative.objects.exists()
    d = Decision.objects.get(pk=outcome.decision.pk)
    assert d.undone_at is not None and d.undone_by == bob
    with pytest.raises(services.CurationError, match="undone already"):
        services.undo(user=bob, decision_id=d.pk)


def test_undo_refuses_to_overwrite_a_later_decision_and_others_cannot_undo_yours(demo, alice, bob, charlie) -> None:  # type: ignore[no-untyped-def]
    m = mention("stroke")
    first = services.decide(user=bob, mention_id=m.pk, action="accept", seen_updated_at=m.updated_at)
    m.refresh_from_db()
    services.decide(user=alice, mention_id=m.pk, action="nil", seen_updated_at=m.updated_at)
    with pytest.raises(services.Conflict, match="was changed by alice after this decision"):
        services.undo(user=bob, decision_id=first.decision.pk)
    with pytest.raises(services.CurationError, match="only bob or an admin"):
        services.undo(user=charlie, decision_id=first.decision.pk)
    m.refresh_from_db()
    assert m.status == Mention.Status.NIL


def test_a_decision_propagates_to_open_identical_mentions_and_undoes_as_one(demo, alice, bob) -> None:  # type: ignore[no-untyped-def]
    first, second = Mention.objects.filter(text__iexact="cystic fibrosis").order_by("pk")
    other_doc = Document.objects.exclude(pk=first.document_id).first()
    third_doc = Document.objects.create(collection=demo, external_id="extra", text="Cystic fibrosis again. cystic fibrosis.")
    third = Mention.objects.create(document=third_doc, start=0, end=15, text="Cystic fibrosis", status="pending")
    decided = Mention.objects.create(document=third_doc, start=23, end=38, text="cystic fibrosis", status="pending")
    services.decide(user=alice, mention_id=decided.pk, action="nil", seen_updated_at=decided.updated_at)
    cf = concept("MESH:D003550")

    doc_scope = services.decide(user=bob, mention_id=first.pk, action="accept", seen_updated_at=first.updated_at, concept=cf, scope="document")
    assert [d.mention_id for d in doc_scope.propagated] == ([second.pk] if second.document_id == first.document_id else [])
    assert other_doc is not None

    second.refresh_from_db()
    third.refresh_from_db()
    services.undo(user=bob, decision_id=doc_scope.decision.pk)
    first.refresh_from_db()
    outcome = services.decide(user=bob, mention_id=first.pk, action="accept", seen_updated_at=first.updated_at, concept=cf, scope="collection")
    assert sorted(d.mention_id for d in outcome.propagated) == sorted({second.pk, third.pk})
    assert outcome.skipped == 1  # alice's NIL stays
    assert all(d.via == "propagated" and d.batch == outcome.batch for d in outcome.propagated)
    assert set(Mention.objects.filter(pk__in=[first.pk, second.pk, third.pk]).values_list("status", flat=True)) <= {"accepted", "relinked"}
    assert Mention.objects.get(pk=decided.pk).status == "nil"

    services.undo(user=bob, decision_id=outcome.propagated[0].pk)  # any decision of the batch undoes the batch
    assert set(Mention.objects.filter(pk__in=[first.pk, second.pk, third.pk]).values_list("status", flat=True)) <= {"pending", "suggested"}
    assert Decision.objects.filter(batch=outcome.batch, undone_at__isnull=True).count() == 0


def test_add_mention_and_fix_span_are_logged_and_undoable(demo, bob) -> None:  # type: ignore[no-untyped-def]
    doc = Document.objects.get(external_id="demo-1")
    start = doc.text.index("older adults")
    added = services.add_mention(user=bob, document_id=doc.pk, start=start - 1, end=start + 12, mention_type="Modifier")
    m = added.mention
    assert (m.text, m.start, m.source, added.action) == ("older adults", start, "curator", "add_mention")  # white space trimmed
    with pytest.raises(services.CurationError, match="is a mention already"):
        services.add_mention(user=bob, document_id=doc.pk, start=start, end=start + 12, mention_type="Modifier")

    fixed = services.fix_span(user=bob, mention_id=m.pk, seen_updated_at=m.updated_at, start=start + 6, end=start + 12)
    m.refresh_from_db()
    assert (m.text, fixed.previous_start, fixed.previous_end) == ("adults", start, start + 12)
    with pytest.raises(services.Conflict):
        services.fix_span(user=bob, mention_id=m.pk, seen_updated_at=m.updated_at - timedelta(seconds=1), start=start, end=start + 5)

    services.undo(user=bob, decision_id=fixed.pk)
    m.refresh_from_db()
    assert m.text == "older adults"
    services.undo(user=bob, decision_id=added.pk)
    assert not Mention.objects.filter(pk=m.pk).exists()
    assert Decision.objects.filter(pk__in=[added.pk, fixed.pk], undone_at__isnull=False).count() == 2


def test_the_review_queue_puts_the_decisions_that_fix_most_first(demo) -> None:  # type: ignore[no-untyped-def]
    from webapp.curation.selectors import review_queue

    queue = list(review_queue(demo))
    firsts = [m for m in queue if m.repeat == 0]
    impacts = [m.impact for m in firsts if m.impact is not None]
    assert impacts == sorted(impacts, reverse=True)
    for m in firsts:  # impact: the open mentions of the text times the uncertainty (1 - margin) of its first
        if m.margin is not None:
            assert m.impact == pytest.approx(m.twins * (1 - min(max(m.margin, 0.0), 1.0)))
    assert len(queue) == Mention.objects.filter(document__collection=demo, status__in=services.OPEN_STATUSES).count()


def test_accepting_a_composite_mention_accepts_the_top_of_each_part(demo, bob) -> None:  # type: ignore[no-untyped-def]
    m = mention("breast and ovarian cancer")
    outcome = services.decide(user=bob, mention_id=m.pk, action="accept", seen_updated_at=m.updated_at, part=None)
    assert [d.part for d in [outcome.decision, *outcome.other_parts]] == [0, 1]
    links = Link.objects.filter(mention=m, origin=Link.Origin.CURATOR).order_by("part")
    assert [(link.part, link.concept.concept_id, link.rank) for link in links] == [(0, "MESH:D001943", 1), (1, "MESH:D010051", 1)]
    assert not Name.objects.filter(text="breast and ovarian cancer").exists()  # no part's synonym
    services.undo(user=bob, decision_id=outcome.decision.pk)  # one undo for the whole mention
    assert not Link.objects.filter(mention=m, origin=Link.Origin.CURATOR).exists()


def test_the_review_queue_shows_each_text_once_before_its_repeats(demo) -> None:  # type: ignore[no-untyped-def]
    from webapp.curation.selectors import review_queue

    first = next(m for m in review_queue(demo) if m.repeat == 0 and not Mention.objects.filter(
        document__collection=demo, text__iexact=m.text).exclude(pk=m.pk).exists())  # a text that occurs once
    doc = Document.objects.create(collection=demo, external_id="twin", text=first.text.upper())
    twin = Mention.objects.create(document=doc, start=0, end=len(first.text), text=first.text.upper(),
                                  mention_type=first.mention_type, status=Mention.Status.SUGGESTED)
    for link in first.links.filter(origin=Link.Origin.MODEL):  # the same suggestions: the same margin
        link.pk, link.mention = None, twin
        link.save()
    queue = list(review_queue(demo))
    texts = [m.text.lower() for m in queue]
    firsts = [m for m in queue if m.repeat == 0]
    assert len({m.text.lower() for m in firsts}) == len(firsts)  # one mention per text...
    assert twin.pk in [m.pk for m in queue[len(firsts):]]  # ...before any repeat, the new twin among them
    assert sum(1 for m in firsts if m.text.lower() == first.text.lower()) == 1
    assert texts.index(first.text.lower()) < len(firsts)
    again = next(m for m in firsts if m.text.lower() == first.text.lower())
    assert again.twins == 2  # deciding it now fixes two mentions: it moved up
    before = next(m for m in list(review_queue(demo)) if m.pk == first.pk)
    assert before.impact == pytest.approx(2 * (1 - min(max(before.margin, 0.0), 1.0)))


def test_a_loaded_linker_is_out_of_the_cyclic_collectors_reach(demo) -> None:  # type: ignore[no-untyped-def]
    """A served linker's objects are frozen (gc.freeze): a full collection no longer walks them (1.1 s at 3M names)."""
    import gc

    linker = get_active_linker("medic-demo").linker
    assert gc.get_freeze_count() > 0
    assert not any(obj is linker.table.names for obj in gc.get_objects())  # frozen objects are not listed
