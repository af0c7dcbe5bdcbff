"""A decision made with auto-advance names the mention the page moves on to (``next``), and its answer is that
mention's panel: one request per decision instead of a POST and a panel GET (issue #46, bench/curator_speed.py).
The decision itself is the same; a ``next`` that is no open mention of the document gets the decided mention's
panel, as without it."""

from __future__ import annotations

import json
import re

from webapp.corpus.models import Mention
from webapp.curation.models import OPEN_STATUSES, Decision


def _post(client, mention: Mention, **extra: object):  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    data = {"action": "nil", "seen": mention.updated_at.isoformat(), **extra}
    return client.post(f"/curate/mentions/{mention.pk}/decide/", data, HTTP_HX_REQUEST="true")


def _panel_of(body: str) -> int:
    found = re.search(r'class="panel-body" data-mention-id="(\d+)"', body)
    assert found, body[:500]
    return int(found.group(1))


def test_the_answer_is_the_next_mentions_panel(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    decided = Mention.objects.get(text="Type 2 diabetes")
    following = Mention.objects.get(document=decided.document, text="hypertension")
    response = _post(bob_client, decided, next=following.pk)
    assert response.status_code == 200
    body = response.content.decode()
    assert _panel_of(body) == following.pk
    assert 'id="document-text"' in body and 'hx-swap-oob="true"' in body  # the text recoloured as before
    trigger = json.loads(response["HX-Trigger"])["curation:decided"]
    assert (trigger["mention"], trigger["shown"]) == (decided.pk, following.pk)
    assert "NIL" in trigger["message"]  # said by the page's toast, not by the next mention's panel
    assert Decision.objects.get(mention=decided).action == "nil"
    decided.refresh_from_db()
    following.refresh_from_db()
    assert decided.status == Mention.Status.NIL and following.status in OPEN_STATUSES


def test_a_next_that_is_not_open_in_the_document_gets_the_decided_panel(bob_client, demo) -> None:  # type: ignore[no-untyped-def]
    doc = Mention.objects.get(text="Type 2 diabetes").document
    following = Mention.objects.get(document=doc, text="hypertension")
    elsewhere = Mention.objects.exclude(document=doc).first()
    assert elsewhere is not None
    _post(bob_client, following)  # decided: no longer open
    deciding = list(doc.mentions.exclude(pk=following.pk).order_by("start")[:3])
    assert len(deciding) == 3
    for mention, stale in zip(deciding, (following.pk, elsewhere.pk, 10**12), strict=True):
        response = _post(bob_client, mention, next=stale)
        assert response.status_code == 200
        assert _panel_of(response.content.decode()) == mention.pk
        assert "shown" not in json.loads(response["HX-Trigger"])["curation:decided"]
