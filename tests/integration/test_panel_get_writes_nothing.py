"""GETs read: the candidate panel's GET writes no row and locks none, whether the mention has stored suggestions,
has none yet (the panel links it live) or was just decided. Rankings are stored by the worker or on a POST."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.corpus.models import Link, Mention
from webapp.curation.services import panel_ranking, suggest_for_collection

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE")


def _mention(text: str) -> Mention:
    return Mention.objects.select_related("document__collection__dictionary").get(document__collection__slug="demo", text=text)


def _get_panel(client, mention: Mention) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """The panel's body, and every statement of the GET that writes or locks a row."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/curate/mentions/{mention.pk}/panel/")
    assert response.status_code == 200
    sql = [q["sql"].lstrip().upper() for q in queries.captured_queries]
    return response.content.decode(), [s for s in sql if s.startswith(WRITES) or "FOR UPDATE" in s]


def _shown(body: str) -> list[str]:
    return re.findall(r'<li class="candidate[^"]*" data-number="\d+" data-concept-id="([^"]+)"', body)


def _stored(mention: Mention) -> list[str]:
    return list(mention.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank").values_list("concept_ref", flat=True))


def test_a_mention_with_stored_suggestions(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    suggest_for_collection(demo.pk)  # the worker's task
    mention = _mention("hypertension")
    body, writes = _get_panel(bob_client, mention)
    assert writes == []
    assert _shown(body) == _stored(mention) and _shown(body)


def test_a_mention_without_suggestions_is_linked_live_and_nothing_is_stored(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("Type 2 diabetes")
    assert mention.status == Mention.Status.PENDING and _stored(mention) == []
    body, writes = _get_panel(bob_client, mention)
    assert writes == []
    ranking = panel_ranking(mention)
    assert ranking is not None and _shown(body) == [c.concept_id for c in ranking.candidates]
    mention.refresh_from_db()
    assert mention.status == Mention.Status.PENDING and _stored(mention) == []
    # The same mention again, its ranking now kept in the process: still nothing written.
    assert _get_panel(bob_client, mention)[1] == []


def test_a_mention_just_decided(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    mention = _mention("hypertension")
    seen = re.search(r'data-seen="([^"]+)"', _get_panel(bob_client, mention)[0])
    assert seen is not None
    answer = bob_client.post(f"/curate/mentions/{mention.pk}/decide/", {"action": "accept", "seen": seen.group(1)})
    assert answer.status_code == 200
    mention.refresh_from_db()
    assert mention.status == Mention.Status.ACCEPTED
    body, writes = _get_panel(bob_client, mention)
    assert writes == []
    assert "is-current" in body
