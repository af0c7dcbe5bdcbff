"""A tagger run's training spans: the gold collections' spans with the curators' span edits laid over them (added,
moved, rejected), fully reviewed documents of the dictionary's other collections, never a partly reviewed one, never
the evaluation collection's documents, and nothing decided after the run's snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services import add_mention, decide, fix_span
from webapp.curation.services.undo import undo
from webapp.training.models import TrainingRun
from webapp.training.tagger_inputs import dev_documents, provenance_line, tagger_inputs, training_documents
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

CONCEPTS = {"D:1": "Asthma", "D:2": "Hypertension", "D:3": "Fever", "D:4": "Cough"}
GOLD = [
    ("g1", "Patients with asthma and raised blood pressure took aspirin.",
     [("asthma", "Disease"), ("raised blood pressure", "Disease"), ("aspirin", "Chemical")]),
    ("g2", "A cardiac infarction followed the hypertensive crisis.", [("cardiac infarction", "Disease")]),
]
DEV = [("d1", "Bronchial asthma and high blood pressure were noted.", [("Bronchial asthma", "Disease"),
                                                                       ("high blood pressure", "Disease")])]


def _dictionary() -> Dictionary:
    dictionary = Dictionary.objects.create(slug="spans", title="Spans")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="obo", checksum="s" * 64)
    for cid, name in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=concept, text=name, normalized=name.lower(), is_preferred=True)
    return dictionary


def _gold(dictionary: Dictionary, slug: str, docs: list[tuple[str, str, list[tuple[str, str]]]]) -> Collection:
    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, mtype in mentions:
            start = text.index(mention_text)
            mention = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text,
                                             mention_type=mtype)
            Link.objects.create(mention=mention, concept_ref="D:1", origin=Link.Origin.GOLD)
    return collection


def _detected(doc: Document, text: str, mention_type: str = "Disease") -> Mention:
    start = doc.text.index(text)
    return Mention.objects.create(document=doc, start=start, end=start + len(text), text=text, mention_type=mention_type,
                                  source=Mention.Source.DETECTOR, status=Mention.Status.SUGGESTED)


def _nil(user, mention: Mention) -> None:  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    decide(user=user, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at)


def _reject(user, mention: Mention) -> None:  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    decide(user=user, mention_id=mention.pk, action="reject", seen_updated_at=mention.updated_at)


def _relink(user, mention: Mention, cid: str) -> None:  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    concept = Concept.objects.get(concept_id=cid)
    decide(user=user, mention_id=mention.pk, action="relink", concept=concept, seen_updated_at=mention.updated_at)


def _fix(user, mention: Mention, text: str) -> None:  # type: ignore[no-untyped-def]
    mention.refresh_from_db()
    start = mention.document.text.index(text)
    fix_span(user=user, mention_id=mention.pk, seen_updated_at=mention.updated_at, start=start, end=start + len(text))


def _add(user, doc: Document, text: str, mention_type: str = "") -> Mention:  # type: ignore[no-untyped-def]
    start = doc.text.index(text)
    decision = add_mention(user=user, document_id=doc.pk, start=start, end=start + len(text), mention_type=mention_type)
    assert decision.mention is not None
    return decision.mention


def _run(dictionary: Dictionary, collections: list[Collection], eval_collection: Collection | None = None,
         types: list[str] | None = None) -> TrainingRun:
    """A queued tagger run whose snapshot is now (as start_run makes it)."""
    run = TrainingRun.objects.create(dictionary=dictionary, method=TrainingRun.Method.TAGGER, eval_collection=eval_collection,
                                     params={"method": "tagger", "mention_types": types or []})
    run.collections.set(collections)
    run.snapshot_at = run.created_at
    run.save(update_fields=["snapshot_at"])
    return run


def _spans(documents, key: str) -> list[str]:  # type: ignore[no-untyped-def]
    doc = next(d for d in documents if d.pmid == key)
    return [doc.title[m.start:m.end] for m in doc.mentions]


@pytest.mark.django_db
def test_curator_span_edits_up_to_the_snapshot_make_the_training_spans(bob, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    gold = _gold(dictionary, "gold", GOLD)
    dev = _gold(dictionary, "dev", DEV)
    notes = Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)
    g1, g2 = gold.documents.order_by("external_id")

    # In a gold document: a gold span moved, a gold span rejected, a mention added, a detector span left open.
    _fix(bob, Mention.objects.get(document=g1, text="raised blood pressure"), "blood pressure")
    _reject(bob, Mention.objects.get(document=g1, text="asthma"))
    _add(bob, g2, "hypertensive crisis")
    _detected(g2, "infarction followed")  # never looked at: not taught

    # A fully reviewed document elsewhere: a detector span confirmed, one moved, one rejected, one added.
    a = Document.objects.create(collection=notes, external_id="a", text="Fever, cough and a rash after aspirin.")
    fever, cough, aspirin = _detected(a, "Fever"), _detected(a, "cough and"), _detected(a, "aspirin")
    _relink(bob, fever, "D:3")
    _fix(bob, cough, "cough")
    _relink(bob, cough, "D:4")
    _reject(bob, aspirin)
    _nil(bob, _add(bob, a, "rash"))
    # A partly reviewed one: "nausea" is still suggested, so the whole document is left out.
    b = Document.objects.create(collection=notes, external_id="b", text="Headache and nausea were reported.")
    _nil(bob, _detected(b, "Headache"))
    _detected(b, "nausea")
    # A document with the evaluation collection's text: held out, however well reviewed.
    twin = Document.objects.create(collection=notes, external_id="twin", text=DEV[0][1])
    _nil(bob, _detected(twin, "Bronchial asthma"))
    # Not curated at all: not training data.
    c = Document.objects.create(collection=notes, external_id="c", text="Dizziness was common.")
    _detected(c, "Dizziness")
    # An added mention undone: never made.
    undone = add_mention(user=bob, document_id=a.pk, start=a.text.index("after"), end=a.text.index("after") + 5)
    undo(user=bob, decision_id=undone.pk)

    run = _run(dictionary, [gold], dev)

    # After the snapshot: none of this is training data.
    _reject(bob, fever)
    _fix(bob, cough, "cough and a rash")
    _nil(bob, Mention.objects.get(document=b, text="nausea"))
    _add(bob, g2, "crisis", "Disease")
    d = Document.objects.create(collection=notes, external_id="d", text="Vertigo and tinnitus.")
    _nil(bob, _detected(d, "Vertigo"))

    documents, counts = training_documents(run)
    assert [doc.pmid for doc in documents] == [str(g1.pk), str(g2.pk), str(a.pk)]
    assert _spans(documents, str(g1.pk)) == ["blood pressure", "aspirin"]
    assert _spans(documents, str(g2.pk)) == ["cardiac infarction", "hypertensive crisis"]
    assert _spans(documents, str(a.pk)) == ["Fever", "cough", "rash"]
    assert {k: v for k, v in counts.items() if v} == {
        "gold": 2, "curator_added": 2, "moved": 2, "confirmed_detector": 1, "rejected": 2, "documents": 3,
        "gold_documents": 2, "curated_documents": 1, "partly_reviewed_documents": 1, "held_out_documents": 1,
    }
    assert "2 gold, 2 curator-added, 2 moved, 1 confirmed detector spans; 2 rejected left out" in provenance_line(counts)

    # The mention types restrict the spans; a curator's untyped mention still counts.
    typed, typed_counts = training_documents(run, frozenset({"Disease"}))
    assert _spans(typed, str(g1.pk)) == ["blood pressure"]
    assert _spans(typed, str(g2.pk)) == ["cardiac infarction", "hypertensive crisis"]

    # The evaluation collection's spans, scored after each epoch; and the recipe's inputs with their provenance.
    assert [_spans(dev_documents(run), str(doc.pk)) for doc in dev.documents.all()] == [["Bronchial asthma", "high blood pressure"]]
    inputs = tagger_inputs(run, tmp_path / "out")
    assert len(inputs.documents) == 3 and len(inputs.dev_documents) == 1 and inputs.mention_types is None
    assert inputs.metadata["spans"]["dev_spans"] == 2 and inputs.metadata["spans"]["gold"] == 2
    assert inputs.metadata["training_run"] == run.pk and inputs.pairs == ()
    # The dictionary features read the release's own names, not names that came from these documents.
    fever = Concept.objects.get(concept_id="D:3")
    Name.objects.create(concept=fever, text="pyrexia", normalized="pyrexia", source=Name.Source.CURATOR)
    Name.objects.create(concept=fever, text="high temperature", normalized="high temperature",
                        source=Name.Source.TRAINING)
    inputs = tagger_inputs(run, tmp_path / "out")
    assert sorted(inputs.names) == sorted(CONCEPTS.values()) and inputs.metadata["dictionary_names"] == 4


@pytest.mark.django_db
def test_a_later_snapshot_sees_the_later_edits(bob) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    gold = _gold(dictionary, "gold", GOLD)
    notes = Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)
    b = Document.objects.create(collection=notes, external_id="b", text="Headache and nausea were reported.")
    headache, nausea = _detected(b, "Headache"), _detected(b, "nausea")
    # Of another type, still pending: it keeps the document out of an all-types run, not out of a Disease one.
    Mention.objects.create(document=b, start=0, end=8, text="Headache", mention_type="Symptom")
    _nil(bob, headache)
    early = _run(dictionary, [gold], types=["Disease"])
    _fix(bob, nausea, "nausea were")
    _nil(bob, nausea)
    late = _run(dictionary, [gold], types=["Disease"])
    documents, counts = training_documents(early, frozenset({"Disease"}))
    assert str(b.pk) not in [d.pmid for d in documents] and counts["partly_reviewed_documents"] == 1
    documents, counts = training_documents(late, frozenset({"Disease"}))
    assert _spans(documents, str(b.pk)) == ["Headache", "nausea were"]
    assert (counts["confirmed_detector"], counts["moved"], counts["curated_documents"]) == (1, 1, 1)
    assert str(b.pk) not in [d.pmid for d in training_documents(late)[0]]
