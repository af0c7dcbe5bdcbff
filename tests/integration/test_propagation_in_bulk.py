"""A decision propagated to identical mentions writes in bulk exactly what deciding each twin one at a time
wrote: the same statuses, curator links, log rows, synonyms, hard negatives and live-index updates, in a fixed
number of statements however many twins there are."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.models import Decision, HardNegative
from webapp.curation.services import decisions
from webapp.curation.services.decision_rows import top_concept_pk
from webapp.linking.registry import forget_all
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary, Name


@pytest.fixture
def demo(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    """The demo collection with suggestions stored, and a document of extra "cystic fibrosis" twins: one without
    suggestions (relinked, not accepted), one in another case (a synonym of its own), one composite whose
    gold link names a second part (its whole text is no synonym)."""
    from webapp.demo.load import load_demo

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    activate_index(build_index(create_index_version(Dictionary.objects.get(slug="medic-demo").latest_version(), None)).pk)
    collection = Collection.objects.get(slug="demo")
    services.suggest_for_collection(collection.pk)
    extra = Document.objects.create(collection=collection, external_id="extra",
                                    text="cystic fibrosis. CYSTIC FIBROSIS. cystic fibrosis.")
    Mention.objects.create(document=extra, start=0, end=15, text="cystic fibrosis", status="pending")
    Mention.objects.create(document=extra, start=17, end=32, text="CYSTIC FIBROSIS", status="pending")
    composite = Mention.objects.create(document=extra, start=34, end=49, text="cystic fibrosis", status="pending")
    Link.objects.create(mention=composite, part=1, concept_ref="D003550", origin="gold")
    yield collection
    forget_all()


def _one_at_a_time(twins: Any, action: str, chosen: Concept | None, user: Any, batch: Any, teach: bool = True) -> list[Decision]:
    """How propagation was written before it was bulk: each twin decided on its own."""
    out = []
    for twin in twins:
        twin_action = action
        if action in ("accept", "relink") and chosen is not None:
            twin_action = "accept" if top_concept_pk(twin, 0) == chosen.pk else "relink"
        out.append(decisions._apply(twin, twin_action, chosen, 0, user, "propagated", batch, None, teach))
    return out


def _state(batch: Any) -> dict[str, Any]:
    """What a decision left, without row ids and clocks (which differ between two runs)."""
    rows = Decision.objects.filter(batch=batch).select_related("mention", "synonym")
    return {
        "statuses": sorted(Mention.objects.filter(text__iexact="cystic fibrosis").values_list("pk", "status")),
        "decisions": sorted(
            (d.mention_id, d.mention_text, d.action, d.via, d.part, d.concept_id, d.concept_ref, d.rank, d.score, d.model_version,
             d.time_on_task_ms, d.user_id, d.previous_status, d.synonym.text if d.synonym else None,
             d.result_updated_at == d.mention.updated_at,
             [(link.mention_id, link.part) for link in Link.objects.filter(pk__in=d.created_links)])
            for d in rows
        ),
        "links": sorted(
            Link.objects.filter(origin="curator").values_list("mention_id", "part", "concept_id", "concept_ref", "nil", "score", "rank",
                                                              "model_version", "created_by_id")
        ),
        "negatives": sorted(
            HardNegative.objects.filter(decision__batch=batch).values_list("decision__mention_id", "mention_text", "concept_id", "rank", "score")
        ),
        "synonyms": sorted(Name.objects.filter(source="curator").values_list("concept__concept_id", "text")),
    }


def _decide(bob: Any, action: str, concept: Concept | None, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[Any], int]:
    """Decide the first "cystic fibrosis" for the collection; the state, the synonyms the live index was told of,
    and the statements run; all rolled back."""
    learnt: list[Any] = []
    with monkeypatch.context() as patch:
        patch.setattr(decisions, "add_curator_synonym", lambda slug, text, cid: learnt.append((slug, text, cid)))
        patch.setattr(decisions, "add_curator_synonyms", lambda slug, pairs: learnt.extend((slug, t, c) for t, c in pairs))
        if not bulk:
            patch.setattr(decisions, "_apply_to_twins", _one_at_a_time)
        first = Mention.objects.filter(text__iexact="cystic fibrosis").order_by("pk").first()
        assert first is not None
        with transaction.atomic():
            earlier_hooks = len(connection.run_on_commit)
            curator = type(bob).objects.get(pk=bob.pk)  # a fresh user object: roles are cached on it per request
            with CaptureQueriesContext(connection) as queries:
                outcome = services.decide(user=curator, mention_id=first.pk, action=action, seen_updated_at=first.updated_at,
                                          concept=concept, scope="collection")
            state = _state(outcome.batch)
            for _savepoints, hook, _robust in connection.run_on_commit[earlier_hooks:]:  # what commit would run
                hook()
            transaction.set_rollback(True)
    assert len(outcome.propagated) == 4
    return state, learnt, len(queries.captured_queries)


@pytest.mark.parametrize("action", ["accept", "relink", "nil", "reject"])
def test_propagation_in_bulk_writes_what_one_at_a_time_wrote(demo, bob, monkeypatch, action) -> None:  # type: ignore[no-untyped-def]
    concept = Concept.objects.get(concept_id="MESH:D003550") if action == "accept" else None
    if action == "relink":
        concept = Concept.objects.filter(version__dictionary__slug="medic-demo").exclude(concept_id="MESH:D003550").order_by("pk").first()

    before, learnt_before, statements_before = _decide(bob, action, concept, bulk=False, monkeypatch=monkeypatch)
    after, learnt_after, statements_after = _decide(bob, action, concept, bulk=True, monkeypatch=monkeypatch)

    assert after == before
    assert learnt_after == learnt_before
    assert statements_after < statements_before


def test_propagation_to_many_twins_takes_a_fixed_number_of_statements(demo, bob) -> None:  # type: ignore[no-untyped-def]
    extra = Document.objects.get(external_id="extra")
    first = Mention.objects.filter(text__iexact="cystic fibrosis").order_by("pk").first()
    assert first is not None
    cf = Concept.objects.get(concept_id="MESH:D003550")
    counts = []
    for more in (0, 20):
        with transaction.atomic():
            for n in range(more):
                document = Document.objects.create(collection=demo, external_id=f"more-{n}", text=extra.text)
                Mention.objects.create(document=document, start=0, end=15, text="cystic fibrosis", status="pending")
            curator = type(bob).objects.get(pk=bob.pk)  # a fresh user object: roles are cached on it per request
            with CaptureQueriesContext(connection) as queries:
                outcome = services.decide(user=curator, mention_id=first.pk, action="accept", seen_updated_at=first.updated_at,
                                          concept=cf, scope="collection")
            assert len(outcome.propagated) == 4 + more
            counts.append(len(queries.captured_queries))
            transaction.set_rollback(True)
    assert counts[1] == counts[0]
