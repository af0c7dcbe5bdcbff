"""The database's span check of inserted mentions (corpus migrations 0002 and 0009), whoever writes them.

An insert statement's mentions are checked together, each document's text walked once in UTF-8 bytes: these tests
hold it to the character offsets Python counts, across 2-, 3- and 4-byte characters, and to 0002's refusals."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from webapp.corpus.models import Collection, Document, Mention

pytestmark = pytest.mark.django_db

# 2-byte (β, é), 3-byte (→, 中) and 4-byte (𝛼, 🙂) characters before, inside and between mentions.
TEXT = "β-thalassemia → café-au-lait spots; 中 renal 𝛼-mannosidosis 🙂 and asthma."


def _document(text: str = TEXT, external_id: str = "d1") -> Document:
    collection, _ = Collection.objects.get_or_create(slug="c", defaults={"title": "C"})
    return Document.objects.create(collection=collection, external_id=external_id, title="", text=text)


def _mention(document: Document, start: int, end: int, text: str | None = None) -> Mention:
    return Mention(document=document, start=start, end=end, text=document.text[start:end] if text is None else text,
                   mention_type="Disease", status=Mention.Status.PENDING, source=Mention.Source.GOLD)


def _spans(text: str, *words: str) -> list[tuple[int, int]]:
    return [(text.index(w), text.index(w) + len(w)) for w in words]


def test_mentions_inserted_together_out_of_order_across_multibyte_characters_are_accepted() -> None:
    document = _document()
    other = _document("Ünïcode 🙂 asthma", "d2")
    spans = _spans(TEXT, "asthma", "β-thalassemia", "café-au-lait spots", "𝛼-mannosidosis", "renal", "中")
    Mention.objects.bulk_create([_mention(document, s, e) for s, e in spans] + [_mention(other, 10, 16)])
    assert sorted(Mention.objects.filter(document=document).values_list("text", flat=True)) == sorted(
        TEXT[s:e] for s, e in spans)
    assert Mention.objects.get(document=other).text == "asthma"


def test_overlapping_spans_are_checked_each() -> None:
    document = _document()
    s, e = _spans(TEXT, "café-au-lait spots")[0]
    Mention.objects.bulk_create([_mention(document, s, e), _mention(document, s, s + 4), _mention(document, s + 2, e)])
    assert Mention.objects.filter(document=document).count() == 3
    with pytest.raises(IntegrityError, match="does not match"), transaction.atomic():
        Mention.objects.bulk_create([_mention(document, s + 1, e), _mention(document, s + 3, e - 1, text="é")])


@pytest.mark.parametrize("word", ["β-thalassemia", "𝛼-mannosidosis", "asthma"])
def test_a_text_that_is_not_the_documents_characters_is_refused_with_both_texts(word: str) -> None:
    document = _document()
    s, e = _spans(TEXT, word)[0]
    good = _mention(document, *_spans(TEXT, "renal")[0])
    with pytest.raises(IntegrityError, match="does not match the document text") as exc, transaction.atomic():
        Mention.objects.bulk_create([good, _mention(document, s, e, text="x" + word[1:])])
    assert repr(word)[1:-1] in str(exc.value)
    assert not Mention.objects.exists()  # the good one of the statement is not kept either


def test_a_span_past_the_end_of_the_text_is_refused() -> None:
    document = _document()
    length = len(TEXT)
    with pytest.raises(IntegrityError, match=f"lies outside document {document.pk} \\(length {length}\\)"), \
            transaction.atomic():
        Mention.objects.bulk_create([_mention(document, length - 2, length + 1, text="a.x")])


def test_moving_a_span_is_still_checked_row_by_row() -> None:
    document = _document()
    s, e = _spans(TEXT, "renal")[0]
    mention = Mention.objects.create(document=document, start=s, end=e, text="renal", mention_type="Disease",
                                     status=Mention.Status.PENDING, source=Mention.Source.GOLD)
    mention.start += 1
    with pytest.raises(IntegrityError, match="does not match the document text"), transaction.atomic():
        mention.save(update_fields=["start"])
