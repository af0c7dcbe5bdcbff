"""Shared by the corpus-run tests: a tiny dictionary with an active sparse index (detection_helpers) and a few notes
without mentions, and what a run wrote, as rows that can be compared between runs."""

from __future__ import annotations

from pathlib import Path

from tests.integration.detection_helpers import mini_dictionary, mini_index, notes
from webapp.corpus.models import Collection, Document, Link, Mention

TEXTS = [
    "Bronchial asthma and high blood pressure were seen.",
    "Diabetes and asthma in winter.",
    "High blood pressure again, with diabetes.",
    "Nothing to see here.",
    "Asthma.",
    "Diabetes, asthma and high blood pressure.",
]


def notes_world(tmp_path: Path, slug: str = "notes") -> Collection:
    """The "mini" dictionary (asthma, hypertension, diabetes) with an active index, and a collection of six notes."""
    version = mini_dictionary()
    mini_index(tmp_path, version)
    collection = notes(version.dictionary, slug=slug)
    for n, text in enumerate(TEXTS, start=1):
        Document.objects.create(collection=collection, external_id=f"note-{n}", text=text)
    return collection


def written(collection: Collection) -> tuple[list[tuple], list[tuple]]:  # type: ignore[type-arg]
    """Every mention and link of the collection, by document and span (not by id): two runs compare exactly."""
    mentions = sorted(Mention.objects.filter(document__collection=collection).values_list(
        "document__external_id", "start", "end", "text", "source", "detector", "model_version", "status"))
    links = sorted(Link.objects.filter(mention__document__collection=collection).values_list(
        "mention__document__external_id", "mention__start", "mention__end", "part", "rank", "concept_ref", "origin",
        "model_version"))
    return mentions, links
