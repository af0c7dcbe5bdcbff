"""A long document with many mentions, written straight to the database (the import path has tests of its own)."""

from __future__ import annotations

from webapp.corpus.models import Collection, Document, Mention

SENTENCE = "Patients with chronic asthma were treated with inhaled steroids.\n"
WORD = "asthma"


def long_document(sentences: int, slug: str = "long") -> Document:
    """A collection ``slug`` holding one document of ``sentences`` sentences, each with one pending mention."""
    collection = Collection.objects.create(slug=slug, title="Long documents")
    document = Document.objects.create(
        collection=collection, external_id="long-1", title="", text=SENTENCE * sentences
    )
    at = SENTENCE.index(WORD)
    Mention.objects.bulk_create(
        Mention(
            document=document,
            start=i * len(SENTENCE) + at,
            end=i * len(SENTENCE) + at + len(WORD),
            text=WORD,
            mention_type="Disease",
        )
        for i in range(sentences)
    )
    return document
