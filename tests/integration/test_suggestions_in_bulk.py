"""A document's suggestions are stored together, in a number of queries that does not grow with its mentions.

Mention by mention, storing took five queries each: the 1,547 mentions detected in a 5 MB note spent most of
their linking time there. The rules stay those of one mention: decided mentions keep their suggestions,
unchanged suggestions are not rewritten, a pending mention becomes "suggested", and the curator's decision that
left a mention open (adding it) stays undoable.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from linker.retrieval import Candidate
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.services.suggestions import (
    MentionSuggestions,
    concept_pks,
    store_many_suggestions,
    suggest_links,
)

LABEL = "bulk-test"
CONCEPTS = ("MESH:D003924", "MESH:D003922", "MESH:D006973")



def _candidates(shift: int = 0) -> list[Candidate]:
    ids = CONCEPTS[shift:] + CONCEPTS[:shift]
    return [Candidate(cid, cid, 1.0 - 0.1 * i, 1.0 - 0.1 * i, 0.0, part=0) for i, cid in enumerate(ids)]


def _store(mentions: list[Mention], shift: int = 0) -> tuple[int, int]:
    """Stores the same ranking for every mention; returns (mentions written, queries issued)."""
    pks = concept_pks(mentions[0].document.collection.dictionary.latest_version(), CONCEPTS)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        written = store_many_suggestions([MentionSuggestions(m, _candidates(shift), [False, True, False], [0.8]) for m in mentions],
                                         LABEL, pks)
    return written, len(queries)


def _document_mentions(demo: Collection) -> list[Mention]:
    document = max(Document.objects.filter(collection=demo), key=lambda d: d.mentions.count())
    return list(document.mentions.select_related("document__collection__dictionary").order_by("pk"))


def test_the_queries_do_not_grow_with_the_mentions(demo) -> None:  # type: ignore[no-untyped-def]
    mentions = _document_mentions(demo)
    assert len(mentions) >= 4
    one = _store(mentions[:1])
    many = _store(mentions[1:])

    assert one[0] == 1 and many[0] == len(mentions) - 1
    assert many[1] == one[1]
    links = list(Link.objects.filter(mention=mentions[-1], origin=Link.Origin.MODEL).order_by("rank"))
    assert [(link.concept_ref, link.rank, link.type_conflict, link.model_version) for link in links] == [
        ("MESH:D003924", 1, False, LABEL), ("MESH:D003922", 2, True, LABEL), ("MESH:D006973", 3, False, LABEL)]
    assert [link.confidence for link in links] == [0.8, None, None]
    assert all(link.concept_id is not None for link in links)
    assert {m.status for m in Mention.objects.filter(pk__in=[m.pk for m in mentions])} == {Mention.Status.SUGGESTED}


def test_unchanged_suggestions_are_read_not_rewritten(demo) -> None:  # type: ignore[no-untyped-def]
    mentions = _document_mentions(demo)
    _store(mentions)
    first_ids = set(Link.objects.filter(mention__in=mentions, origin=Link.Origin.MODEL).values_list("pk", flat=True))

    assert _store(mentions) == (0, 1)  # one read, nothing written
    assert set(Link.objects.filter(mention__in=mentions, origin=Link.Origin.MODEL).values_list("pk", flat=True)) == first_ids

    written, _ = _store(mentions, shift=1)  # a new ranking replaces the old
    assert written == len(mentions)
    assert Link.objects.get(mention=mentions[0], origin=Link.Origin.MODEL, rank=1).concept_ref == "MESH:D003922"


def test_decided_mentions_keep_the_suggestions_they_were_decided_on(demo, django_user_model) -> None:  # type: ignore[no-untyped-def]
    curator = django_user_model.objects.create_user("bulk-curator")
    mentions = _document_mentions(demo)
    _store(mentions)
    decided = mentions[0]
    decided.refresh_from_db()
    services.decide(user=curator, mention_id=decided.pk, action="accept", seen_updated_at=decided.updated_at, part=None)
    decided.refresh_from_db()

    written, _ = _store([decided, *mentions[1:]], shift=2)

    assert written == len(mentions) - 1
    assert Link.objects.get(mention=decided, origin=Link.Origin.MODEL, rank=1).concept_ref == "MESH:D003924"
    assert Link.objects.get(mention=mentions[1], origin=Link.Origin.MODEL, rank=1).concept_ref == "MESH:D006973"


def test_a_curator_added_mention_is_suggested_and_its_addition_stays_undoable(demo, django_user_model) -> None:  # type: ignore[no-untyped-def]
    curator = django_user_model.objects.create_user("bulk-adder")
    document = Document.objects.filter(collection=demo).order_by("pk").first()
    start = document.text.index("diabetes") if "diabetes" in document.text else 0
    added = services.add_mention(user=curator, document_id=document.pk, start=start, end=start + 8, mention_type="Disease")
    before = Mention.objects.get(pk=added.mention.pk)
    assert before.status == Mention.Status.PENDING

    stored = suggest_links(Mention.objects.filter(document__collection=demo), "medic-demo")

    after = Mention.objects.get(pk=added.mention.pk)
    assert stored >= 1 and after.status == Mention.Status.SUGGESTED and after.updated_at > before.updated_at
    assert after.links.filter(origin=Link.Origin.MODEL).exists()
    services.undo(user=curator, decision_id=added.pk)  # the background suggestions are not a curator's change
    assert not Mention.objects.filter(pk=after.pk).exists()
