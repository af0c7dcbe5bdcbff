"""Export says who decided each link, when and how, and where each span of a project's document stands in
adjudication (JSONL fields, BioC infons); import ignores all of it, so an exported file still round-trips.

The project "trial" curates document 100 of the collection "trial-docs" (document 200 is in the collection but
not in the project's list of documents). Document 100: "Asthma" a gold link and no adjudication yet (open),
"hypertension" bob's curator decision through the concept search, which the annotators agreed on (an
Adjudication matched by span only), "fever" a model suggestion only, "cough" the adjudicator alice's decision
(via adjudication) taking bob's label over charlie's. Decisions go through the decision service, so their
Decision and Link rows are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bioc import biocjson, biocxml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import import_documents
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation import services
from webapp.curation.export import export_documents
from webapp.curation.models import Decision
from webapp.projects.models import Adjudication, Member, Project, Workspace
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

TEXT = "Asthma and hypertension with fever, cough and wheeze."
Via = Decision.Via


def _span(needle: str) -> tuple[int, int]:
    start = TEXT.index(needle)
    return start, start + len(needle)


def _mention(document: Document, needle: str, status: str = Mention.Status.PENDING) -> Mention:
    start, end = _span(needle)
    return Mention.objects.create(document=document, start=start, end=end, text=needle, mention_type="Disease", status=status)


@pytest.fixture
def trial(alice, bob, charlie) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="m" * 64)
    concepts = {}
    for cid, name in [("MESH:D001249", "Asthma"), ("MESH:D006973", "Hypertension"), ("MESH:D005334", "Fever"),
                      ("MESH:D003371", "Cough")]:
        concepts[cid] = Concept.objects.create(version=version, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=concepts[cid], text=name, normalized=name.lower(), is_preferred=True)
    collection = Collection.objects.create(slug="trial-docs", title="Trial documents", dictionary=dictionary)
    document = Document.objects.create(collection=collection, external_id="100", text=TEXT)
    outside = Document.objects.create(collection=collection, external_id="200", text=TEXT)
    project = Project.objects.create(slug="trial", title="Trial", collection=collection)
    project.documents.add(document)
    Member.objects.create(project=project, user=bob, role=Member.Role.ANNOTATOR)
    Member.objects.create(project=project, user=charlie, role=Member.Role.ANNOTATOR)
    Member.objects.create(project=project, user=alice, role=Member.Role.ADJUDICATOR)

    asthma = _mention(document, "Asthma")
    Link.objects.create(mention=asthma, concept=concepts["MESH:D001249"], concept_ref="D001249", origin=Link.Origin.GOLD)
    fever = _mention(document, "fever", Mention.Status.SUGGESTED)
    Link.objects.create(mention=fever, concept=concepts["MESH:D005334"], concept_ref="MESH:D005334", origin=Link.Origin.MODEL,
                        rank=1, score=0.91, model_version="sparse@index-7")
    hypertension = _mention(document, "hypertension", Mention.Status.SUGGESTED)
    Link.objects.create(mention=hypertension, concept=concepts["MESH:D001249"], concept_ref="MESH:D001249",
                        origin=Link.Origin.MODEL, rank=1, score=0.4, model_version="sparse@index-7")
    searched = services.decide(user=bob, mention_id=hypertension.pk, action="relink", seen_updated_at=hypertension.updated_at,
                               concept=concepts["MESH:D006973"], via=Via.SEARCH).decision
    cough = _mention(document, "cough")
    adjudicated = services.decide(user=alice, mention_id=cough.pk, action="relink", seen_updated_at=cough.updated_at,
                                  concept=concepts["MESH:D003371"], via=Via.ADJUDICATION).decision
    start, end = _span("hypertension")
    Adjudication.objects.create(project=project, document=document, start=start, end=end, state=Adjudication.State.AGREED,
                                label="MESH:D006973", annotator_labels={"bob": "MESH:D006973", "charlie": "MESH:D006973"},
                                decision=searched, adjudicator=alice)
    start, end = _span("cough")
    Adjudication.objects.create(project=project, document=document, start=start, end=end, mention=cough,
                                state=Adjudication.State.ADJUDICATED, label="MESH:D003371", chosen_annotator=bob,
                                annotator_labels={"charlie": "NIL", "bob": "MESH:D003371"}, decision=adjudicated, adjudicator=alice)

    _mention(outside, "Asthma")  # in the collection, not in the project's list: no adjudication state
    plain = Collection.objects.create(slug="plain", title="No project", dictionary=dictionary)
    Link.objects.create(mention=_mention(Document.objects.create(collection=plain, external_id="300", text=TEXT), "cough"),
                        concept=concepts["MESH:D003371"], concept_ref="MESH:D003371", origin=Link.Origin.GOLD)
    # bob's private copy of document 100, in his workspace: not the project collection's to export.
    copies = Collection.objects.create(slug="trial-bob", title="bob's copies", is_workspace=True, dictionary=dictionary)
    Workspace.objects.create(project=project, annotator=bob, collection=copies)
    _mention(Document.objects.create(collection=copies, external_id="100", text=TEXT), "cough")
    return {"collection": collection, "searched": searched, "adjudicated": adjudicated}


def _jsonl(documents: Any, *, suggestions: bool = True) -> dict[str, dict[str, Any]]:
    """External id -> {mention text -> mention object} of a JSONL export."""
    content = export_documents(documents, "jsonl", suggestions=suggestions).content.decode()
    lines = [json.loads(line) for line in content.splitlines()]
    return {line["id"]: {m["text"]: m for m in line["mentions"]} for line in lines}


def test_jsonl_links_say_who_decided_them_when_and_how(trial: dict[str, Any]) -> None:
    mentions = _jsonl(Document.objects.filter(collection=trial["collection"]))["100"]
    searched: Decision = trial["searched"]
    gold = Link.objects.get(mention__text="Asthma", mention__document__external_id="100", origin=Link.Origin.GOLD)
    suggestion = Link.objects.get(mention__text="fever", origin=Link.Origin.MODEL)

    [link] = mentions["hypertension"]["links"]
    assert (link["concept_id"], link["origin"]) == ("MESH:D006973", "curator")  # the existing keys are unchanged
    assert (link["decided_by"], link["decided_at"], link["decided_via"]) == ("bob", searched.created_at.isoformat(), "search")
    [link] = mentions["cough"]["links"]
    assert (link["decided_by"], link["decided_via"]) == ("alice", "adjudication")
    [link] = mentions["Asthma"]["links"]
    assert (link["concept_id"], link["decided_by"], link["decided_at"], link["decided_via"]) == (
        "MESH:D001249", "gold", gold.created_at.isoformat(), None,  # the dictionary's form; the file wrote D001249
    )
    [link] = mentions["fever"]["links"]
    assert (link["origin"], link["decided_by"], link["decided_at"], link["decided_via"]) == (
        "model", "sparse@index-7", suggestion.created_at.isoformat(), None,
    )


def test_jsonl_mentions_of_a_project_document_carry_their_adjudication(trial: dict[str, Any]) -> None:
    exported = _jsonl(Document.objects.filter(collection__slug__in=["trial-docs", "plain"]))
    mentions = exported["100"]
    assert {k: mentions["cough"].get(k) for k in ("adjudication", "adjudicator", "chosen_annotator", "annotator_labels")} == {
        "adjudication": "adjudicated", "adjudicator": "alice", "chosen_annotator": "bob",
        "annotator_labels": {"bob": "MESH:D003371", "charlie": "NIL"},
    }
    assert {k: mentions["hypertension"].get(k) for k in ("adjudication", "adjudicator", "chosen_annotator", "annotator_labels")} == {
        "adjudication": "agreed", "adjudicator": "alice", "chosen_annotator": None,
        "annotator_labels": {"bob": "MESH:D006973", "charlie": "MESH:D006973"},
    }
    # No Adjudication row yet: open, and nothing else to say.
    assert mentions["Asthma"]["adjudication"] == "open" and "adjudicator" not in mentions["Asthma"]
    assert mentions["fever"]["adjudication"] == "open"
    # Outside the project (not in its list of documents; another collection): no adjudication key at all.
    assert "adjudication" not in exported["200"]["Asthma"]
    assert "adjudication" not in exported["300"]["cough"]


def test_after_undo_the_suggestion_is_exported_again_with_its_model_as_decider(trial: dict[str, Any], bob) -> None:  # type: ignore[no-untyped-def]
    fever = Mention.objects.get(text="fever", document__external_id="100")
    outcome = services.decide(user=bob, mention_id=fever.pk, action="accept", seen_updated_at=fever.updated_at)
    [link] = _jsonl(Document.objects.filter(external_id="100", collection=trial["collection"]))["100"]["fever"]["links"]
    assert (link["origin"], link["decided_by"], link["decided_via"]) == ("curator", "bob", "candidate")
    services.undo(user=bob, decision_id=outcome.decision.pk)
    [link] = _jsonl(Document.objects.filter(external_id="100", collection=trial["collection"]))["100"]["fever"]["links"]
    assert (link["origin"], link["decided_by"]) == ("model", "sparse@index-7")


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_bioc_annotations_carry_the_provenance_as_infons(trial: dict[str, Any], fmt: str) -> None:
    content = export_documents(Document.objects.filter(collection=trial["collection"]), fmt, suggestions=True).content.decode()
    collection = biocxml.loads(content) if fmt == "bioc-xml" else biocjson.loads(content)
    [document] = [d for d in collection.documents if d.id == "100"]
    infons = {a.text: a.infons for p in document.passages for a in p.annotations}
    assert dict(infons["cough"]) == {
        "type": "Disease", "identifier": "MESH:D003371", "origin": "curator",
        "decided_by": "alice", "decided_at": trial["adjudicated"].created_at.isoformat(), "decided_via": "adjudication",
        "adjudication": "adjudicated", "adjudicator": "alice", "chosen_annotator": "bob",
        "annotator_labels": '{"bob":"MESH:D003371","charlie":"NIL"}',
    }
    assert (infons["hypertension"]["decided_by"], infons["hypertension"]["decided_via"], infons["hypertension"]["adjudication"]) == (
        "bob", "search", "agreed",
    )
    assert "chosen_annotator" not in infons["hypertension"]
    assert (infons["Asthma"]["decided_by"], infons["Asthma"]["adjudication"]) == ("gold", "open")
    assert "decided_via" not in infons["Asthma"] and "adjudicator" not in infons["Asthma"]
    assert infons["fever"]["decided_by"] == "sparse@index-7"
    [outside] = [d for d in collection.documents if d.id == "200"]
    assert "adjudication" not in outside.passages[0].annotations[0].infons


@pytest.mark.parametrize("fmt", ["jsonl", "bioc-xml", "bioc-json"])
def test_an_export_with_provenance_imports_again_as_gold(tmp_path: Path, trial: dict[str, Any], fmt: str) -> None:
    export = export_documents(Document.objects.filter(collection=trial["collection"]), fmt, suggestions=True)
    path = tmp_path / f"trial.{FORMATS[fmt].extension}"
    path.write_bytes(export.content)
    report = import_documents(path, fmt, collection_slug="again", dictionary_slug="mini")
    assert (report.documents, report.mentions) == (2, 5)
    links = Link.objects.filter(mention__document__collection__slug="again", mention__document__external_id="100")
    assert sorted(links.values_list("mention__text", "concept_ref", "origin")) == [
        ("Asthma", "MESH:D001249", "gold"), ("cough", "MESH:D003371", "gold"), ("fever", "MESH:D005334", "gold"),
        ("hypertension", "MESH:D006973", "gold"),
    ]
    # The copy belongs to no project: its mentions say nothing of adjudication, and every link is gold.
    again = _jsonl(Document.objects.filter(collection__slug="again"))["100"]
    assert all("adjudication" not in m for m in again.values())
    assert {m["links"][0]["decided_by"] for m in again.values()} == {"gold"}


def test_export_of_the_project_collection_leaves_the_workspace_copies_out(trial: dict[str, Any]) -> None:
    exported = _jsonl(Document.objects.filter(collection=trial["collection"]))
    assert sorted(exported) == ["100", "200"]
    assert list(Document.objects.filter(collection__is_workspace=True).values_list("external_id", flat=True)) == ["100"]


def test_provenance_is_read_per_batch_not_per_link(trial: dict[str, Any], bob, charlie) -> None:  # type: ignore[no-untyped-def]
    """Many documents and curator links cost the same queries as one document: provenance is read per batch."""
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    for mention in Mention.objects.exclude(document__external_id="100", document__collection=trial["collection"]):
        for user in (bob, charlie):
            mention.refresh_from_db()
            services.decide(user=user, mention_id=mention.pk, action="relink", seen_updated_at=mention.updated_at, concept=asthma)
    one = Document.objects.filter(collection=trial["collection"], external_id="100")
    everything = Document.objects.filter(collection__slug__in=["trial-docs", "plain", "trial-bob"])
    with CaptureQueriesContext(connection) as single:
        export_documents(one, "jsonl", suggestions=True)
    with CaptureQueriesContext(connection) as whole:
        export_documents(everything, "jsonl", suggestions=True)
    assert len(whole) == len(single), [q["sql"][:120] for q in whole.captured_queries]
    assert Link.objects.filter(origin=Link.Origin.CURATOR).count() == 2 + 3 * 2


def test_with_ids_source_the_annotators_labels_are_spelled_as_the_links_are(trial: dict[str, Any]) -> None:
    """The collection's gold ids are bare MeSH ids (D001249): labels and links of an ids=source export are too."""
    content = export_documents(Document.objects.filter(collection=trial["collection"]), "jsonl", ids="source").content
    mentions = {m["text"]: m for m in json.loads(content.decode().splitlines()[0])["mentions"]}
    assert mentions["cough"]["annotator_labels"] == {"bob": "D003371", "charlie": "NIL"}
    assert [link["concept_id"] for link in mentions["cough"]["links"]] == ["D003371"]
    assert _jsonl(Document.objects.filter(collection=trial["collection"]))["100"]["cough"]["annotator_labels"] == {
        "bob": "MESH:D003371", "charlie": "NIL"}
