"""Index builds report where they are: the row gets the phase and the names encoded of all (written through a
connection of its own, so another connection reads them mid-build, at most once a second), the models page's card
shows them and stops polling (286) once the build ends, an admin's Cancel stops the build between two batches of
names (cancelled with the reason, nothing kept, never activated), ``manage.py build_index`` prints the same progress,
and a build activated from the page re-links the open mentions on a worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction

from tests.integration.conftest import PROJECT_ROOT, Worker, database_url
from tests.integration.test_training_runs import _stop
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.linking.registry import forget_all
from webapp.training import services
from webapp.training.index_progress import ConsoleProgress, IndexProgressRecorder
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db(transaction=True)

# 12 concepts, 36 names: distinct as they stand and once normalised.
CONCEPTS = {
    f"D:{i:02d}": names for i, names in enumerate([
        ("Asthma", "Bronchial asthma", "Wheezing disease"),
        ("Hypertension", "High blood pressure", "Raised arterial tension"),
        ("Myocardial infarction", "Heart attack", "Cardiac infarct"),
        ("Type 2 diabetes", "Adult onset diabetes", "Non insulin dependent diabetes"),
        ("Migraine", "Sick headache", "Hemicrania"),
        ("Epilepsy", "Seizure disorder", "Falling sickness"),
        ("Anemia", "Low haemoglobin", "Anaemia of blood"),
        ("Gout", "Podagra", "Uric acid arthritis"),
        ("Psoriasis", "Scaly plaques of skin", "Psoriatic disease"),
        ("Glaucoma", "Raised eye pressure", "Optic nerve cupping"),
        ("Cholera", "Vibrio infection", "Asiatic cholera"),
        ("Rickets", "Vitamin D deficiency bone disease", "Rachitis"),
    ])
}
NAMES = sum(len(names) for names in CONCEPTS.values())
CHUNK = 8  # names per progress report in these tests (PROGRESS_CHUNK is 512)


def _dictionary(slug: str = "tiny") -> Dictionary:
    dictionary = Dictionary.objects.create(slug=slug, title=slug.title())
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="b" * 64)
    for cid, names in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=names[0])
        Name.objects.bulk_create([Name(concept=concept, text=n, normalized=n.lower(), is_preferred=i == 0)
                                  for i, n in enumerate(names)])
    return dictionary


def _minilm() -> EncoderModel:
    from linker.encoders.transformer import default_base_model

    folder = Path(default_base_model()).resolve()
    return EncoderModel.objects.create(name="zero-shot-minilm", method=EncoderModel.Method.ZERO_SHOT,
                                       base_model=str(folder), artifact_path=str(folder))


@pytest.fixture
def index_worker(django_db_setup, django_db_blocker, tmp_path: Path, settings) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """A worker of its own (queue, ARTIFACT_ROOT, process group) that also sends what it queues (the re-linking after
    an activation) to its own queue; this process's tasks go there too."""
    from webapp.celery import app

    queue = f"test-index-{uuid.uuid4().hex[:8]}"
    log = tmp_path / f"{queue}.log"
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(connection.settings_dict), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND, DB_CONN_MAX_AGE="0", ARTIFACT_ROOT=str(tmp_path / "worker"),
        TASK_QUEUE_OVERRIDE=queue,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-P", "prefork", "-c", "1",
         "-n", f"{queue}@%h", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=1.0):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Celery worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        settings.TASK_QUEUE_OVERRIDE = queue
        yield Worker(queue, process, log)
    finally:
        _stop(process)


@pytest.fixture(autouse=True)
def _artifacts(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    yield
    forget_all()


@pytest.fixture
def small_batches(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A progress report every CHUNK names, every report written (the row's once-a-second limit is tested apart)."""
    import linker.retrieval
    import webapp.training.index_progress

    monkeypatch.setattr(linker.retrieval, "PROGRESS_CHUNK", CHUNK)
    monkeypatch.setattr(linker.retrieval, "PROGRESS_QUICK_S", 0.0)  # chunks never grow
    monkeypatch.setattr(webapp.training.index_progress, "EVERY_S", 0.0)
    original = services._encoder_and_config

    def batches_of_chunk(model: EncoderModel | None) -> tuple[Any, Any]:
        encoder, config = original(model)
        return encoder, replace(config, encode_batch_size=CHUNK)

    monkeypatch.setattr(services, "_encoder_and_config", batches_of_chunk)


class Gate:
    """Holds the build when the encoder is handed its second batch of names: the first batch is encoded and
    reported by then. ``reached`` says the build is held; ``release()`` lets it go on."""

    def __init__(self, monkeypatch) -> None:  # type: ignore[no-untyped-def]
        self.reached = threading.Event()
        self.released = threading.Event()
        loader = services._encoder_and_config  # small_batches' when it is used (it must come first)

        def gated(model: EncoderModel | None) -> tuple[Any, Any]:
            encoder, config = loader(model)
            encode, calls = encoder.encode, []

            def held(texts: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(len(texts))
                if len(calls) == 2:
                    self.reached.set()
                    assert self.released.wait(60), "the test never released the build"
                return encode(texts, *args, **kwargs)

            encoder.encode = held
            return encoder, config

        monkeypatch.setattr(services, "_encoder_and_config", gated)

    def release(self) -> None:
        self.released.set()


def _in_thread(work: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # shown by the test's assertions
            outcome.append(exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _htmx(client, url: str, method: str = "get"):  # type: ignore[no-untyped-def]
    return getattr(client, method)(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=url.strip("/").replace("/", "-"))


# --- progress ------------------------------------------------------------------------------------------------


def test_progress_is_written_mid_build_where_another_connection_reads_it(alice_client, small_batches, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    index = services.create_index_version(dictionary.latest_version(), _minilm())
    gate = Gate(monkeypatch)

    def build_in_a_transaction() -> IndexVersion:
        # The build's own connection holds a transaction: whatever it writes there stays invisible until it ends.
        with transaction.atomic():
            return services.build_index(index)

    thread, outcome = _in_thread(build_in_a_transaction)
    try:
        assert gate.reached.wait(120), f"the build never reached its second batch: {outcome}"
        seen = IndexVersion.objects.get(pk=index.pk)  # this test's connection
        card = _htmx(alice_client, f"/training/indexes/{index.pk}/progress/")
    finally:
        gate.release()
        thread.join(120)

    assert (seen.state, seen.phase, seen.progress, seen.progress_total) == ("building", "encoding", CHUNK, NAMES)
    assert seen.started_at is not None and seen.phase_started_at is not None and seen.progress_at is not None
    assert seen.started_at <= seen.phase_started_at <= seen.progress_at
    assert card.status_code == 200  # still building: the card polls on
    html = card.content.decode()
    assert 'hx-trigger="every 1s"' in html and 'data-phase="encoding"' in html
    assert f"{CHUNK} / {NAMES}</strong> names encoded" in html and "Cancel build" in html
    assert re.search(r"[\d,]+ names/s</span> · <span class=\"build-eta\">about \d+ s left", html), html

    assert [getattr(o, "state", o) for o in outcome] == [IndexVersion.State.READY]
    done = IndexVersion.objects.get(pk=index.pk)
    assert (done.phase, done.name_count, done.finished_at is not None) == ("done", NAMES, True)
    last = _htmx(alice_client, f"/training/indexes/{index.pk}/progress/")
    assert last.status_code == 286 and last["HX-Trigger"] == "index-build-ended"  # htmx stops polling
    assert "hx-trigger" not in last.content.decode() and "Promote to active" in last.content.decode()


def test_progress_is_written_at_most_once_a_second_and_a_new_phase_at_once() -> None:
    dictionary = _dictionary()
    index = services.create_index_version(dictionary.latest_version(), None)
    now = [100.0]

    def stored() -> tuple[str, int, int | None]:
        row = IndexVersion.objects.get(pk=index.pk)
        return row.phase, row.progress, row.progress_total

    with IndexProgressRecorder(index.pk, every=1.0, clock=lambda: now[0]) as record:
        record("encoding", 0, 400)
        assert (stored(), record.writes) == (("encoding", 0, 400), 1)
        for done, t in ((64, 100.3), (128, 100.9)):
            now[0] = t
            record("encoding", done, 400)
        assert (stored(), record.writes) == (("encoding", 0, 400), 1)  # within the second: not written
        now[0] = 101.0
        record("encoding", 192, 400)
        assert (stored(), record.writes) == (("encoding", 192, 400), 2)
        now[0] = 101.1
        record("faiss", 0, 400)  # a new phase: written at once
        assert (stored(), record.writes) == (("faiss", 0, 400), 3)
    IndexVersion.objects.filter(pk=index.pk).update(state=IndexVersion.State.FAILED)
    with IndexProgressRecorder(index.pk) as late, pytest.raises(services.IndexBuildCancelled):
        late("saving")  # a row that is no longer building stops its builder and keeps what it says
    assert stored() == ("faiss", 0, 400)


def test_encoding_in_reported_chunks_gives_the_vectors_of_one_call(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import linker.retrieval
    from linker.encoders.transformer import TransformerEncoder
    from linker.retrieval import encode_names

    names = [n.lower() for names in CONCEPTS.values() for n in names] + ["asthma"]  # a name twice: encoded once
    encoder = TransformerEncoder(layers=(0,))
    monkeypatch.setattr(linker.retrieval, "PROGRESS_CHUNK", CHUNK)
    for batch in (CHUNK, CHUNK // 2):  # a chunk of one batch; of two, from both ends of the lengths
        whole = encode_names(encoder, names, batch_size=batch)
        for quick, expected in ((0.0, [CHUNK, 2 * CHUNK, 3 * CHUNK, 4 * CHUNK, NAMES]),  # each chunk long enough
                                (60.0, [CHUNK, 3 * CHUNK, NAMES])):  # quick chunks: each twice the last
            monkeypatch.setattr(linker.retrieval, "PROGRESS_QUICK_S", quick)
            reports: list[tuple[int, int]] = []
            chunked = encode_names(encoder, names, batch_size=batch,
                                   progress=lambda done, total, seen=reports: seen.append((done, total)))
            assert np.array_equal(whole, chunked), (batch, quick)  # the very batches of one call
            assert reports == [(0, NAMES)] + [(done, NAMES) for done in expected], (batch, quick)


# --- cancel --------------------------------------------------------------------------------------------------


def test_cancel_stops_a_running_build_between_batches_keeps_nothing_and_activates_nothing(  # type: ignore[no-untyped-def]
    alice_client, small_batches, monkeypatch, settings
) -> None:
    from tasks.indexing import build_index_task

    dictionary = _dictionary()
    index = services.create_index_version(dictionary.latest_version(), _minilm(), activate=True)
    gate = Gate(monkeypatch)
    thread, outcome = _in_thread(lambda: build_index_task(index.pk, True))
    try:
        assert gate.reached.wait(120), f"the build never reached its second batch: {outcome}"
        card = _htmx(alice_client, f"/training/indexes/{index.pk}/cancel/", "post")
    finally:
        gate.release()
        thread.join(120)

    assert card.status_code == 200 and "Stopping…" in card.content.decode()  # asked; it stops at its next report
    assert outcome == [IndexVersion.State.CANCELLED]
    index.refresh_from_db()
    assert index.state == IndexVersion.State.CANCELLED and index.finished_at is not None
    assert index.error == (f"cancelled by an admin while encoding names, after {2 * CHUNK} of {NAMES} names; "
                           "nothing of it was kept")
    folder = services.index_folder(index)
    assert not folder.exists() and not folder.with_name(f"{folder.name}.partial").exists()  # nothing kept
    assert not IndexVersion.objects.filter(state=IndexVersion.State.ACTIVE).exists()
    last = _htmx(alice_client, f"/training/indexes/{index.pk}/progress/")
    assert last.status_code == 286 and f"C{index.error[1:]}." in last.content.decode()
    assert "Not activated: Tiny has no active index yet." in last.content.decode()


def test_cancel_before_a_worker_takes_the_build_ends_it_at_once(alice_client) -> None:  # type: ignore[no-untyped-def]
    from tasks.indexing import build_index_task

    index = services.create_index_version(_dictionary().latest_version(), None, activate=True)
    response = alice_client.post(f"/training/indexes/{index.pk}/cancel/")
    assert response.status_code == 302 and response.url == f"/training/models/#index-build-{index.pk}"
    index.refresh_from_db()
    assert (index.state, index.error) == (IndexVersion.State.CANCELLED, "cancelled by an admin before a worker started it")
    assert build_index_task(index.pk, True) == IndexVersion.State.CANCELLED  # the task, when it comes, does nothing
    assert not (Path(services.index_folder(index))).exists()
    page = alice_client.get("/training/models/").content.decode()
    assert f'id="index-build-{index.pk}" data-state="cancelled"' in page and "before a worker started it" in page


def test_a_curator_can_neither_follow_nor_cancel_a_build(bob_client) -> None:  # type: ignore[no-untyped-def]
    index = services.create_index_version(_dictionary().latest_version(), None)
    assert bob_client.get(f"/training/indexes/{index.pk}/progress/").status_code == 403
    assert bob_client.post(f"/training/indexes/{index.pk}/cancel/").status_code == 403
    assert IndexVersion.objects.get(pk=index.pk).state == IndexVersion.State.BUILDING


# --- the command line -----------------------------------------------------------------------------------------


def test_build_index_prints_names_done_rate_and_time_left(small_batches) -> None:  # type: ignore[no-untyped-def]
    _dictionary()
    out = StringIO()
    call_command("build_index", "--dictionary", "tiny", "--progress-every", "0", stdout=out)
    lines = out.getvalue().splitlines()
    text = "\n".join(lines)
    assert "  reading the names from the database…" in lines and "  loading the encoder…" in lines
    assert "  fitting tf-idf…" in lines and "  building the faiss index…" in lines and "  writing the artifact…" in lines
    assert f"  encoding names: 0 / {NAMES} (0%)" in lines
    for done in range(CHUNK, NAMES, CHUNK):
        assert re.search(rf"^  encoding names: {done} / {NAMES} \({100 * done // NAMES}%\), [\d,]+ names/s, about \d+ s left$",
                         text, re.M), text
    assert re.search(rf"^  encoding names: {NAMES} / {NAMES} \(100%\), [\d,]+ names/s$", text, re.M), text
    assert re.search(rf"^index \d+ ready: {NAMES} names, ", text, re.M), text


def test_console_progress_prints_every_few_seconds_while_names_are_encoded() -> None:
    lines: list[str] = []
    now = [0.0]
    echo = ConsoleProgress(lines.append, every=5.0, clock=lambda: now[0])
    echo("tf-idf", 0, 76012)
    for t, done in ((1.0, 0), (2.0, 512), (4.0, 1024), (6.5, 1536), (9.0, 2048), (11.6, 3072)):
        now[0] = t
        echo("encoding", done, 76012)
    now[0] = 700.0
    echo("encoding", 76012, 76012)
    assert lines == [
        "fitting tf-idf…",
        "encoding names: 0 / 76,012 (0%)",
        "encoding names: 1,536 / 76,012 (2%), 279 names/s, about 4 min 27 s left",  # 5.5 s after the phase began
        "encoding names: 3,072 / 76,012 (4%), 290 names/s, about 4 min 12 s left",
        "encoding names: 76,012 / 76,012 (100%), 109 names/s",
    ]


# --- activated from the page, on a worker -------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
def test_a_build_activated_from_the_page_relinks_the_open_mentions(alice_client, index_worker) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    notes = Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)
    text = "Wheezing disease at night; later a heart attack."
    doc = Document.objects.create(collection=notes, external_id="n1", text=text)
    for mention in ("Wheezing disease", "heart attack"):
        start = text.index(mention)
        Mention.objects.create(document=doc, start=start, end=start + len(mention), text=mention)

    assert alice_client.get("/training/collections/notes/linking/", HTTP_HX_REQUEST="true").status_code == 286  # nothing on its way
    response = alice_client.post("/training/indexes/build/", {"dictionary": "tiny", "encoder": "", "activate": "on"})
    assert response.status_code == 302 and response.url == "/training/models/#index-versions"
    index = IndexVersion.objects.get()
    assert index.activate_when_built
    note = alice_client.get("/training/collections/notes/linking/", HTTP_HX_REQUEST="true")
    assert note.status_code in (200, 286)  # 200 while it builds (the worker may be done already)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        card = _htmx(alice_client, f"/training/indexes/{index.pk}/progress/")
        if card.status_code == 286:
            break
        time.sleep(0.3)
    index.refresh_from_db()
    assert card.status_code == 286, f"{index.state} {index.error}\n{index_worker.log.read_text()[-3000:]}"
    assert index.state == IndexVersion.State.ACTIVE
    top = {m.text: m.links.filter(origin=Link.Origin.MODEL, model_version=index.label, rank=1).values_list("concept_ref", flat=True).first()
           for m in Mention.objects.filter(document=doc)}
    assert top == {"Wheezing disease": "D:00", "heart attack": "D:02"}
    html = card.content.decode()
    assert 'data-collection="notes" data-done="true"' in html and "2 / 2" in html and "/curate/notes/" in html
    polled = alice_client.get("/training/collections/notes/linking/?poll=1", HTTP_HX_REQUEST="true")
    assert polled.status_code == 286 and polled["HX-Refresh"] == "true"  # a page that was waiting reloads itself


def test_the_linking_note_waits_for_a_build_to_be_activated(bob_client) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)
    index = services.create_index_version(dictionary.latest_version(), None, activate=True)
    note = bob_client.get("/training/collections/notes/linking/", HTTP_HX_REQUEST="true")
    assert note.status_code == 200
    html = note.content.decode()
    assert f"Index {index.pk} of Tiny is being built" in html and 'hx-trigger="every 3s"' in html and "?poll=1" in html
    services.cancel_index_build(index.pk)
    assert bob_client.get("/training/collections/notes/linking/", HTTP_HX_REQUEST="true").status_code == 286
