"""An import into a collection and the curators deciding its mentions, at the same time, on the real PostgreSQL.

An import is one transaction that may run for minutes (a 50 MB upload). It must hold up nothing but another
import into the same collection: imports serialise on an advisory lock only they take
(``webapp.corpus.writer.locked_collection``), decisions lock the mention rows they change. The collection row
is not locked for the import: a ``FOR UPDATE`` on it (as before) held up, for the whole import, anything that
inserts a row referencing the collection (a training run or an evaluation on it) and any edit of it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from webapp.corpus.formats.records import DocumentRecord, LinkRecord, MentionRecord
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.corpus.writer import ImportReport, write_documents
from webapp.curation.models import Decision
from webapp.curation.services.decisions import decide
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db(transaction=True)  # each thread commits on its own connection

QUICK_S = 2.0  # a decision on an idle database takes milliseconds; the import below is held open for far longer
HELD_S = 30.0  # the longest the import waits to be released (the test releases it as soon as it has measured)


@pytest.fixture
def curated(django_user_model):  # type: ignore[no-untyped-def]
    """A collection with one document of three suggested mentions, and a curator."""
    from django.contrib.auth.models import Group

    curator = django_user_model.objects.create_user("bob", password="pw")
    curator.groups.add(Group.objects.get_or_create(name="curator")[0])
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    asthma = Concept.objects.create(version=version, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    collection = Collection.objects.create(slug="busy", title="Busy", dictionary=dictionary)
    document = Document.objects.create(collection=collection, external_id="d0", text="asthma wheeze asthmatic")
    mentions = []
    for start, text in ((0, "asthma"), (7, "wheeze"), (14, "asthmatic")):
        m = Mention.objects.create(document=document, start=start, end=start + len(text), text=text,
                                   status=Mention.Status.SUGGESTED, source=Mention.Source.GOLD)
        Link.objects.create(mention=m, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL,
                            rank=1, score=9.0, model_version="mini@1/sparse/index-1")
        mentions.append(m)
    return curator, collection, mentions


class HeldImport(threading.Thread):
    """``write_documents`` into a collection, stopped inside its transaction after the first batch until released."""

    def __init__(self, slug: str) -> None:
        super().__init__(name="held-import", daemon=True)
        self.slug = slug
        self.writing = threading.Event()  # the first batch is written: the transaction holds its locks
        self.release = threading.Event()
        self.error: BaseException | None = None
        self.report: ImportReport | None = None

    def batches(self) -> Iterator[Sequence[DocumentRecord]]:
        for n in range(2):
            text = f"asthma in patient {n}"
            yield [DocumentRecord(external_id=f"new{n}", text=text, title="",
                                  mentions=[MentionRecord(0, 6, "asthma", "Disease", (LinkRecord(0, "MESH:D001249"),))])]
            self.writing.set()
            if not self.release.wait(HELD_S):
                raise TimeoutError("the held import was never released")

    def run(self) -> None:
        try:
            self.report = write_documents(self.batches(), source="held.txt", collection_slug=self.slug, dictionary_slug="mini")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.writing.set()
            connection.close()


def _timed(call) -> tuple[float, BaseException | None]:  # type: ignore[no-untyped-def]
    """Run ``call`` in its own thread (its own connection): how long it took (inf: still waiting after
    ``QUICK_S * 3``; the test then releases the import, which lets it finish) and what it raised."""
    took: list[float] = []
    errors: list[BaseException] = []

    def body() -> None:
        started = time.perf_counter()
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            took.append(time.perf_counter() - started)
            connection.close()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout=QUICK_S * 3)
    return (took[0] if took else float("inf")), (errors[0] if errors else None)


def test_curators_are_not_held_up_by_an_import_into_their_collection(curated) -> None:  # type: ignore[no-untyped-def]
    curator, collection, mentions = curated
    first, second, third = mentions
    # A run evaluated on this collection trains on another (a training collection is refused as evaluation data).
    other = Collection.objects.create(slug="other-gold", title="Other gold", dictionary=collection.dictionary, has_gold=True)
    api = APIClient()
    api.force_authenticate(curator)
    screen = Client()
    screen.force_login(curator)
    answers: list[int] = []
    actions = {
        # The service, as every door calls it ...
        "decide (service)": lambda: decide(user=curator, mention_id=first.pk, action="accept", seen_updated_at=first.updated_at),
        # ... over the API, propagated to the identical mentions of the whole collection ...
        "decide (API, collection scope)": lambda: answers.append(api.post(
            f"/api/mentions/{second.pk}/decision/",
            {"updated_at": second.updated_at.isoformat(), "action": "nil", "scope": "collection"}, format="json",
        ).status_code),
        # ... on the curation screen, which answers with the panel and the document re-rendered ...
        "decide (screen)": lambda: answers.append(screen.post(
            f"/curate/mentions/{third.pk}/decide/", {"action": "reject", "seen": third.updated_at.isoformat()},
            HTTP_HX_REQUEST="true",
        ).status_code),
        # ... a mention added from a text selection, and an undo.
        "add a mention (screen)": lambda: answers.append(screen.post(
            f"/curate/documents/{first.document_id}/mentions/", {"start": 0, "end": 13}, HTTP_HX_REQUEST="true",
        ).status_code),
        "undo (screen)": lambda: answers.append(screen.post(
            f"/curate/decisions/{Decision.objects.get(mention=first).pk}/undo/", HTTP_HX_REQUEST="true",
        ).status_code),
        # An admin starting a training run evaluated on the collection (rows referencing it), or editing it.
        "start a training run": lambda: start_run(collection.dictionary, [other], {"epochs": 1},
                                                  eval_collection=collection, send=False),
        "edit the collection": lambda: Collection.objects.filter(pk=collection.pk).update(description="being imported"),
    }
    held = HeldImport(collection.slug)
    held.start()
    try:
        assert held.writing.wait(30) and held.error is None, held.error
        for name, action in actions.items():
            took, error = _timed(action)
            assert error is None, f"{name}: {error!r}"
            assert took < QUICK_S, f"{name} waited {took:.1f} s behind the import"
        assert held.is_alive() and not held.release.is_set()  # the import was open all along
    finally:
        held.release.set()
        held.join(timeout=60)
    assert answers == [200, 200, 200, 200], answers
    assert held.error is None, held.error
    assert held.report is not None and held.report.documents == 2
    assert Mention.objects.get(pk=second.pk).status == Mention.Status.NIL
    assert Mention.objects.get(pk=third.pk).status == Mention.Status.REJECTED
    assert Decision.objects.get(mention=first).is_undone
    assert Mention.objects.filter(document=first.document, start=0, end=13, text="asthma wheeze").exists()
    assert TrainingRun.objects.get().eval_collection == collection
    assert Collection.objects.get(pk=collection.pk).description == "being imported"
    assert set(Document.objects.filter(collection=collection).values_list("external_id", flat=True)) == {"d0", "new0", "new1"}


def test_two_imports_into_one_collection_still_run_one_at_a_time(curated) -> None:  # type: ignore[no-untyped-def]
    _, collection, _ = curated
    held = HeldImport(collection.slug)
    held.start()
    try:
        assert held.writing.wait(30) and held.error is None, held.error

        def later() -> None:
            try:
                write_documents([[DocumentRecord(external_id="later", text="asthma again", mentions=[])]],
                                source="later.txt", collection_slug=collection.slug)
            finally:
                connection.close()

        second = threading.Thread(target=later, daemon=True)
        second.start()
        second.join(timeout=1.5)
        assert second.is_alive(), "a second import into the collection did not wait for the first"
        assert not Document.objects.filter(external_id="later").exists()
    finally:
        held.release.set()
        held.join(timeout=60)
    second.join(timeout=60)
    assert not second.is_alive()
    assert set(Document.objects.filter(collection=collection).values_list("external_id", flat=True)) == {"d0", "new0", "new1", "later"}
