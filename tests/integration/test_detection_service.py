"""The detection service (no worker: the task's service called directly): the matcher over a small index finds,
writes and links mentions with their provenance; it is idempotent; what curators made or decided is kept; a
dictionary without an index fails the document with what to do, and the document stays curatable by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.detection_helpers import TEXT, mini_dictionary, mini_index, notes
from webapp.corpus.formats import DocumentRecord, MentionRecord
from webapp.corpus.formats.services import import_records
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.services.detection import detect_documents
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all
from webapp.training.services import promote_index

pytestmark = pytest.mark.django_db
State = Document.DetectionState


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    forget_all()
    yield
    forget_all()


def _import(collection: Collection, text: str = TEXT, external_id: str = "note-1", mentions: list[MentionRecord] | None = None) -> Document:
    import_records([DocumentRecord(external_id, text, "", mentions or [])], source="test", collection_slug=collection.slug)
    return Document.objects.get(collection=collection, external_id=external_id)


def _spans(document: Document) -> list[tuple[str, str, str, str]]:
    return list(document.mentions.order_by("start").values_list("text", "source", "detector", "status"))


def test_the_matcher_finds_writes_and_links_mentions_with_their_provenance(tmp_path: Path) -> None:
    version = mini_dictionary()
    index = mini_index(tmp_path, version)
    document = _import(notes(version.dictionary, Collection.Detection.MATCHER))
    assert document.detection_state == State.QUEUED

    assert detect_documents([document.pk]) == {"done": 1}

    document.refresh_from_db()
    assert (document.detection_state, document.detection_error) == (State.DONE, "")
    assert document.detection_model == f"matcher:{index.label}" and document.detected_at is not None
    # "dia-\nbetes" is not joined here (the text came in as it is): only whole names of the index match.
    assert _spans(document) == [("Bronchial asthma", "detector", "matcher", "suggested"),
                                ("high blood pressure", "detector", "matcher", "suggested")]
    assert set(document.mentions.values_list("model_version", flat=True)) == {index.label}
    top = Link.objects.get(mention__text="Bronchial asthma", origin=Link.Origin.MODEL, rank=1)
    assert (top.concept_ref, top.model_version) == ("MESH:D001249", index.label)
    assert Mention.objects.get(text="Bronchial asthma").provenance == f"found by the dictionary matcher ({index.label})"


def test_detection_is_idempotent_a_redelivered_task_writes_nothing_twice(tmp_path: Path) -> None:
    version = mini_dictionary()
    mini_index(tmp_path, version)
    document = _import(notes(version.dictionary))
    detect_documents([document.pk])
    before = list(document.mentions.order_by("pk").values_list("pk", "start", "end"))

    assert detect_documents([document.pk]) == {"skipped": 1}  # done already: not claimed again
    Document.objects.filter(pk=document.pk).update(detection_state=State.RUNNING)  # a worker died after writing
    assert detect_documents([document.pk, document.pk]) == {"done": 1}
    assert list(document.mentions.order_by("pk").values_list("pk", "start", "end")) == before
    assert Link.objects.filter(origin=Link.Origin.MODEL).values("mention", "rank").distinct().count() == Link.objects.filter(
        origin=Link.Origin.MODEL).count()


def test_curator_mentions_are_kept_and_detection_stays_clear_of_them(tmp_path: Path, alice) -> None:  # type: ignore[no-untyped-def]
    version = mini_dictionary()
    mini_index(tmp_path, version)
    document = _import(notes(version.dictionary))
    # While the document waits for the worker, a curator marks "blood pressure" by hand.
    start = TEXT.index("blood pressure")
    services.add_mention(user=alice, document_id=document.pk, start=start, end=start + len("blood pressure"))

    detect_documents([document.pk])

    assert _spans(document) == [("Bronchial asthma", "detector", "matcher", "suggested"),
                                ("blood pressure", "curator", "", "pending")]


def test_detect_again_keeps_decided_mentions_and_replaces_only_undecided_detector_ones(tmp_path: Path, alice) -> None:  # type: ignore[no-untyped-def]
    version = mini_dictionary()
    mini_index(tmp_path, version)
    document = _import(notes(version.dictionary))
    detect_documents([document.pk])
    asthma = Mention.objects.get(text="Bronchial asthma")
    services.decide(user=alice, mention_id=asthma.pk, action="reject", seen_updated_at=asthma.updated_at)
    pressure = Mention.objects.get(text="high blood pressure")
    Mention.objects.create(document=document, start=0, end=1, text="B", source=Mention.Source.DETECTOR, detector="matcher")

    services.redetect(document)
    assert Document.objects.get(pk=document.pk).detection_state == State.QUEUED
    with pytest.raises(services.CurationError, match="being detected"):
        services.redetect(document)
    detect_documents([document.pk])

    kept = {m.text: (m.pk, m.status) for m in document.mentions.all()}
    assert kept == {"Bronchial asthma": (asthma.pk, "rejected"), "high blood pressure": (pressure.pk, "suggested")}


def test_no_active_index_fails_with_what_to_do_and_the_document_stays_curatable(tmp_path: Path, alice) -> None:  # type: ignore[no-untyped-def]
    version = mini_dictionary("medic")
    document = _import(notes(version.dictionary))

    assert detect_documents([document.pk]) == {"failed": 1}

    document.refresh_from_db()
    assert document.detection_state == State.FAILED
    assert document.detection_error == "no active index for dictionary medic: build one on the Models page"
    assert not document.mentions.exists()
    start = TEXT.index("asthma")
    decision = services.add_mention(user=alice, document_id=document.pk, start=start, end=start + 6)  # by hand
    assert decision.mention.source == Mention.Source.CURATOR

    # An index is activated: the document is queued again, and its matcher now runs.
    index = mini_index(tmp_path, version, state=IndexVersion.State.READY)
    promote_index(index.pk)
    assert Document.objects.get(pk=document.pk).detection_state == State.QUEUED
    detect_documents([document.pk])
    assert _spans(document) == [("asthma", "curator", "", "pending"), ("high blood pressure", "detector", "matcher", "suggested")]


def test_a_collection_without_dictionary_or_tagger_fails_and_detection_off_queues_nothing(tmp_path: Path) -> None:
    version = mini_dictionary()
    mini_index(tmp_path, version)
    orphan = _import(notes(None, slug="orphans"))
    tagger_only = _import(notes(version.dictionary, Collection.Detection.TAGGER, slug="tagged"))
    off = _import(notes(version.dictionary, Collection.Detection.OFF, slug="by-hand"))
    gold = _import(notes(version.dictionary, slug="gold"), mentions=[MentionRecord(0, 9, "Bronchial")])

    assert detect_documents([orphan.pk, tagger_only.pk, off.pk, gold.pk]) == {"failed": 2, "skipped": 2}

    states = dict(Document.objects.values_list("collection__slug", "detection_state"))
    assert states == {"orphans": "failed", "tagged": "failed", "by-hand": "none", "gold": "none"}
    assert Document.objects.get(pk=orphan.pk).detection_error.startswith("collection orphans has no dictionary")
    assert Document.objects.get(pk=tagger_only.pk).detection_error == (
        "no active tagger for dictionary mini: train one and activate it on the Models page")


def test_an_error_fails_the_document_and_writes_none_of_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    version = mini_dictionary()
    mini_index(tmp_path, version)
    document = _import(notes(version.dictionary))

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("webapp.curation.services.detection.write_mentions", broken)
    assert detect_documents([document.pk]) == {"failed": 1}
    document.refresh_from_db()
    assert (document.detection_state, document.detection_error) == (State.FAILED, "detection failed: RuntimeError: the disk is full")
    assert not document.mentions.exists() and document.detected_at is None
