"""The panel's GET stores nothing, so a POST does: a decision first stores the ranking its panel showed (the rank
it records is the rank the curator saw), and adding a mention or fixing a span stores the new mention's ranking.
A mention that only gained suggestions while the curator looked at it (the worker linked it) is no conflict; a
curator's change is."""

from __future__ import annotations

import re

import pytest

from webapp.corpus.models import Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services import decide, suggest_for_collection, undo

pytestmark = pytest.mark.django_db


def _mention(text: str) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").get(document__collection__slug="demo", text=text)


def _open_panel(client, mention: Mention) -> tuple[list[tuple[str, int]], str]:  # type: ignore[no-untyped-def]
    """The candidates the panel shows (concept id, the pk its Link button sends) and the version it was shown at."""
    body = client.get(f"/curate/mentions/{mention.pk}/panel/").content.decode()
    shown = []
    for row in body.split('data-concept-id="')[1:]:
        pick = re.search(r'data-action="pick".*?"concept": "(\d+)"', row, re.S)
        assert pick is not None
        shown.append((row.split('"')[0], int(pick.group(1))))
    seen = re.search(r'data-seen="([^"]+)"', body)
    assert len(shown) >= 3 and seen is not None
    return shown, seen.group(1)


def _stored(mention: Mention) -> list[tuple[int, str]]:
    return list(mention.links.filter(origin=Link.Origin.MODEL).order_by("rank").values_list("rank", "concept_ref"))


def _relink(client, mention: Mention, concept_pk: int, seen: str):  # type: ignore[no-untyped-def]
    return client.post(f"/curate/mentions/{mention.pk}/decide/",
                       {"action": "relink", "concept": concept_pk, "seen": seen, "via": "candidate"})


def test_a_decision_records_the_rank_shown_by_a_panel_that_stored_nothing(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("Type 2 diabetes")
    shown, seen = _open_panel(bob_client, mention)
    assert _stored(mention) == []  # the GET only read
    third_id, third_pk = shown[2]
    assert _relink(bob_client, mention, third_pk, seen).status_code == 200
    decision = Decision.objects.get(mention=mention)
    assert (decision.concept.concept_id, decision.rank) == (third_id, 3)
    assert _stored(mention) == [(rank, cid) for rank, (cid, _) in enumerate(shown, start=1)]
    # Its suggestions came with the decision: undoing it leaves the mention suggested, with them.
    undo(user=decision.user, decision_id=decision.pk)
    mention.refresh_from_db()
    assert mention.status == Mention.Status.SUGGESTED and len(_stored(mention)) == len(shown)


def test_suggestions_stored_by_the_worker_meanwhile_are_no_conflict(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("Type 2 diabetes")
    shown, seen = _open_panel(bob_client, mention)
    suggest_for_collection(demo.pk)  # the worker links the collection while the curator reads
    mention.refresh_from_db()
    assert mention.status == Mention.Status.SUGGESTED and mention.updated_at.isoformat() != seen
    assert _relink(bob_client, mention, shown[0][1], seen).status_code == 200
    assert Decision.objects.get(mention=mention).rank == 1


def test_a_curators_change_meanwhile_still_is_a_conflict(bob_client, alice, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("Type 2 diabetes")
    shown, seen = _open_panel(bob_client, mention)
    suggest_for_collection(demo.pk)
    mention.refresh_from_db()
    taken = decide(user=alice, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at)
    undo(user=alice, decision_id=taken.decision.pk)  # back to suggested, but alice was here
    mention.refresh_from_db()
    assert mention.status == Mention.Status.SUGGESTED
    answer = _relink(bob_client, mention, shown[0][1], seen)
    assert answer.status_code == 409 and "alice undid a decision on this mention" in answer.content.decode()


def test_adding_a_mention_and_fixing_a_span_store_the_new_ranking(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("Type 2 diabetes")
    start = mention.document.text.index("Weight loss")
    end = start + len("Weight loss")
    added = bob_client.post(f"/curate/documents/{mention.document_id}/mentions/", {"start": start, "end": end})
    assert added.status_code == 200
    new = Mention.objects.get(document=mention.document, start=start, end=end, source=Mention.Source.CURATOR)
    assert new.status == Mention.Status.SUGGESTED and _stored(new)
    assert Decision.objects.get(mention=new, action=Decision.Action.ADD_MENTION).result_updated_at == new.updated_at

    fixed = bob_client.post(f"/curate/mentions/{mention.pk}/span/",
                            {"start": mention.start + len("Type 2 "), "end": mention.end, "seen": mention.updated_at.isoformat()})
    assert fixed.status_code == 200
    mention.refresh_from_db()
    assert mention.text == "diabetes" and mention.status == Mention.Status.SUGGESTED and _stored(mention)
