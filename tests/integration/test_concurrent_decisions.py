"""Curators deciding overlapping and identical mentions at the same moment, with propagation, on the real
PostgreSQL: no 500 (no deadlock), every 200 logged exactly once, no mention decided twice, no lost update."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db(transaction=True)  # each thread commits on its own connection

DOCUMENTS = 3
COPIES = 4  # identical open mentions of "asthma" per document


@pytest.fixture
def crowded(django_user_model):  # type: ignore[no-untyped-def]
    """Three documents of one collection, each with four open mentions of the same text, all suggested."""
    from django.contrib.auth.models import Group

    curators = []
    group, _ = Group.objects.get_or_create(name="curator")
    for n in range(DOCUMENTS * COPIES):
        user = django_user_model.objects.create_user(f"curator{n}", password="pw")
        user.groups.add(group)
        curators.append(user)
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    asthma = Concept.objects.create(version=version, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    collection = Collection.objects.create(slug="crowd", title="Crowd", dictionary=dictionary)
    mentions = []
    for d in range(DOCUMENTS):
        text = " ".join(["asthma"] * COPIES)
        document = Document.objects.create(collection=collection, external_id=f"d{d}", text=text)
        for c in range(COPIES):
            m = Mention.objects.create(document=document, start=7 * c, end=7 * c + 6, text="asthma",
                                       status=Mention.Status.SUGGESTED, source=Mention.Source.GOLD)
            Link.objects.create(mention=m, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL,
                                rank=1, score=9.0, model_version="mini@1/sparse/index-1")
            mentions.append(m)
    return curators, mentions


def _decide_all_at_once(pairs: list[tuple[object, Mention, str]]) -> list[tuple[int, int, dict]]:  # type: ignore[type-arg]
    """Each (curator, mention, scope) decided by its own thread, all released together; (mention pk, status, body)."""
    barrier = threading.Barrier(len(pairs))
    results: list[tuple[int, int, dict]] = []  # type: ignore[type-arg]
    lock = threading.Lock()

    def one(user: object, mention: Mention, scope: str) -> None:
        client = APIClient()
        client.force_authenticate(user)
        try:
            barrier.wait(timeout=30)
            response = client.post(f"/api/mentions/{mention.pk}/decision/",
                                   {"updated_at": mention.updated_at.isoformat(), "action": "accept", "scope": scope},
                                   format="json")
            with lock:
                results.append((mention.pk, response.status_code, response.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a decision never answered"
    return results


@pytest.mark.parametrize("scopes", [("document", "mention"), ("collection", "document")])
def test_identical_mentions_decided_at_once_never_deadlock_or_double_decide(crowded, scopes) -> None:  # type: ignore[no-untyped-def]
    curators, mentions = crowded
    pairs = [(curators[i], m, scopes[i % 2]) for i, m in enumerate(mentions)]
    results = _decide_all_at_once(pairs)

    codes = Counter(status for _, status, _ in results)
    assert set(codes) <= {200, 409}, [(status, body) for _, status, body in results if status not in (200, 409)]
    assert codes[200] >= 1
    decisions = Decision.objects.filter(undone_at__isnull=True)
    # Each mention is decided once, by its own curator's 200 or by a propagation: never twice, never lost.
    per_mention = Counter(decisions.values_list("mention_id", flat=True))
    assert per_mention == Counter({m.pk: 1 for m in mentions})
    # Every 200 is in the log as the decision on its own mention, made by the curator who asked.
    direct = {d.mention_id: d for d in decisions.exclude(via=Decision.Via.PROPAGATED)}
    for pk, status, _ in results:
        if status == 200:
            assert pk in direct
    assert len(direct) == codes[200]
    assert set(Mention.objects.values_list("status", flat=True)) == {Mention.Status.ACCEPTED}
    # One curator link per mention, as many as decisions.
    curated = Counter(Link.objects.filter(origin=Link.Origin.CURATOR).values_list("mention_id", flat=True))
    assert curated == per_mention


def test_a_refused_concurrent_decision_says_who_decided_first(crowded) -> None:  # type: ignore[no-untyped-def]
    curators, mentions = crowded
    first_document = [m for m in mentions if m.document.external_id == "d0"]
    results = _decide_all_at_once([(curators[i], m, "document") for i, m in enumerate(first_document)])
    refused = [body for _, status, body in results if status == 409]
    assert len([1 for _, status, _ in results if status == 200]) + len(refused) == COPIES
    for body in refused:
        assert "detail" in body and "curator" in body["detail"], body
