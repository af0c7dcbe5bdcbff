"""A long document's pages answer with a bounded size: the document page and the curation page show one part of
its text (webapp.corpus.windows) with that part's mentions, open on the part of the mention asked for, and a
decision refreshes only that part. A 9.5M-character document drawn whole took 20 s and 22.9 MB of HTML."""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.long_document import long_document
from webapp.corpus.models import Collection, Document, Mention
from webapp.corpus.windows import DOCUMENT_WINDOW_CHARS, window_at, window_number

pytestmark = pytest.mark.django_db

SENTENCES = 8_000  # 520,000 characters in 26 parts, 8,000 mentions
PAGE_BYTES = 400_000  # one part of 20,000 characters and its ~300 mentions, with the page around them


@pytest.fixture
def document(db) -> Document:  # type: ignore[no-untyped-def]
    return long_document(sentences=SENTENCES)


def _starts(html: str) -> list[int]:
    """The offsets of the mentions drawn in the text (the mark that opens each has its id)."""
    return [int(s) for s in re.findall(r'<mark [^>]*id="mention-\d+"[^>]*data-start="(\d+)"', html)]


def test_the_parts_cover_the_text_once_and_never_cut_a_mention(document: Document) -> None:
    first = window_number(document, 1)
    assert first.count == -(-len(document.text) // DOCUMENT_WINDOW_CHARS) and first.start == 0
    ends = []
    window = first
    while True:
        ends.append(window.end)
        assert (
            window.end == len(document.text) or document.text[window.end - 1] == "\n"
        )  # ends at a line break
        if window.next is None:
            break
        following = window_number(document, window.next)
        assert following.start == window.end
        window = following
    assert ends[-1] == len(document.text) and len(ends) == first.count
    assert not Mention.objects.filter(document=document, start__lt=first.end, end__gt=first.end).exists()


def test_the_document_page_shows_one_part_and_its_mentions(bob_client, document: Document) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get(f"/collections/long/documents/{document.pk}/", {"part": 3})
    assert response.status_code == 200 and len(response.content) < PAGE_BYTES
    window = response.context["window"]
    html = response.content.decode()
    assert f"Part 3 of {window.count}" in html and 'rel="next" href="?part=4"' in html
    starts = _starts(html)
    assert starts and all(window.start <= s < window.end for s in starts)
    assert (
        len(starts)
        == Mention.objects.filter(document=document, start__gte=window.start, start__lt=window.end).count()
    )
    rows = response.context["rows"]  # numbered in the whole document
    assert rows[0].number == Mention.objects.filter(document=document, start__lt=window.start).count() + 1
    assert response.context["mention_total"] == SENTENCES  # the counts are the document's


def test_the_curation_page_opens_on_the_part_of_the_mention_asked_for(bob_client, document: Document) -> None:  # type: ignore[no-untyped-def]
    deep = Mention.objects.filter(document=document).order_by("start")[6_000]
    response = bob_client.get(f"/curate/long/documents/{document.pk}/", {"m": deep.pk})
    assert response.status_code == 200 and len(response.content) < PAGE_BYTES
    html = response.content.decode()
    assert f'id="mention-{deep.pk}"' in html and deep.start in _starts(html)
    window = response.context["window"]
    assert window == window_at(document, deep.start) and window.start <= deep.start < window.end
    assert f'data-next-part-url="?part={window.number + 1}"' in html


def test_a_decision_refreshes_only_the_part_of_its_mention(bob_client, document: Document) -> None:  # type: ignore[no-untyped-def]
    deep = Mention.objects.filter(document=document).order_by("start")[5_432]
    response = bob_client.post(
        f"/curate/mentions/{deep.pk}/decide/",
        {"action": "reject", "seen": deep.updated_at.isoformat()},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200, response.content[:500]
    assert "curation:decided" in json.loads(response["HX-Trigger"])
    html = response.content.decode()
    assert len(response.content) < PAGE_BYTES and 'id="document-text"' in html and deep.start in _starts(html)
    assert f'data-start="{deep.start}"' in html and "status-rejected" in html


def test_a_short_document_is_one_part_without_a_way_to_others(bob_client) -> None:  # type: ignore[no-untyped-def]
    short = long_document(sentences=3, slug="short")
    html = bob_client.get(f"/collections/short/documents/{short.pk}/").content.decode()
    assert "Parts of this document" not in html and len(_starts(html)) == 3


def test_a_bad_part_or_mention_in_the_address_opens_a_part_all_the_same(
    bob_client, document: Document
) -> None:  # type: ignore[no-untyped-def]
    for query in (
        {"part": "abc"},
        {"part": "-3"},
        {"part": "99999"},
        {"m": "99999999999999999999"},
        {"m": "x"},
    ):
        response = bob_client.get(f"/curate/long/documents/{document.pk}/", query)
        assert response.status_code == 200, query
    last = bob_client.get(f"/collections/long/documents/{document.pk}/", {"part": "99999"}).context["window"]
    assert last.number == last.count and last.end == len(document.text)


def test_a_part_ends_after_a_mention_that_crosses_its_nominal_end(db) -> None:  # type: ignore[no-untyped-def]
    collection = Collection.objects.create(slug="cross", title="Cross")
    document = Document.objects.create(
        collection=collection, external_id="c", text="word " * 100
    )  # no line break
    Mention.objects.create(
        document=document, start=95, end=109, text="word word word"
    )  # across character 100
    first = window_number(document, 1, size=100)
    assert (first.start, first.end, first.count) == (0, 110, 5)  # past the mention, at the next word
    assert window_at(document, 95, size=100) == first
    assert window_number(document, 2, size=100).start == 110
