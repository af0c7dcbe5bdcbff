"""Shared by the mention-detection tests: a tiny dictionary with an active sparse index, and a real Celery worker
whose own tasks (an import job's detection, the detection's linking) go to its own queue."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from linker.data import ConceptRecord, Synonym
from linker.linker import Linker
from tests.integration.conftest import Worker, running_worker
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

RECORDS = [
    ConceptRecord("MESH:D001249", "Asthma", (Synonym("Bronchial Asthma"),)),
    ConceptRecord("MESH:D006973", "Hypertension", (Synonym("High blood pressure"),)),
    ConceptRecord("MESH:D003920", "Diabetes Mellitus", (Synonym("Diabetes"),)),
]
TEXT = "Bronchial asthma and high blood pressure\nwere seen with dia-\nbetes in 2019."


def mini_dictionary(slug: str = "mini") -> DictionaryVersion:
    dictionary = Dictionary.objects.create(slug=slug, title=slug.title())
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="r1", source_format="demo", checksum=slug[0] * 64)
    for record in RECORDS:
        concept = Concept.objects.create(version=version, concept_id=record.concept_id, preferred_name=record.preferred_name)
        for name in record.all_names():
            Name.objects.create(concept=concept, text=name, normalized=name.lower())
    return version


def mini_index(folder: Path, version: DictionaryVersion, state: str = IndexVersion.State.ACTIVE) -> IndexVersion:
    """A sparse-only index of the records, saved under ``folder`` (an absolute path: a worker finds it too)."""
    Linker.build(RECORDS, None).save(folder / "index")
    return IndexVersion.objects.create(dictionary=version.dictionary, dictionary_version=version,
                                       artifact_path=str(folder / "index"), state=state)


def notes(dictionary: Dictionary | None, detection: str = Collection.Detection.MATCHER_AND_TAGGER, slug: str = "notes") -> Collection:
    return Collection.objects.create(slug=slug, title="Clinical notes", dictionary=dictionary, detection=detection)


def wait_for(condition, timeout: float = 90.0, every: float = 0.25, what: str = "the worker") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not finish within {timeout:.0f} s"
        time.sleep(every)


@pytest.fixture(scope="session")
def detection_worker(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """A real worker on a private queue that also sends the tasks it queues itself there (TASK_QUEUE_OVERRIDE): an
    import job it runs queues the detection of the documents, which it then runs too."""
    from webapp.celery import app

    queue = f"test-detect-{uuid.uuid4().hex[:8]}"
    try:
        with running_worker(queue, tmp_path_factory.mktemp("detection-worker") / "worker.log", TASK_QUEUE_OVERRIDE=queue) as worker:
            yield worker
    finally:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(queue)
