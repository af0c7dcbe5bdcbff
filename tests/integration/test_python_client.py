"""The Python client (client/elwb_client) against the real app: a live HTTP server on the test database and a real
Celery worker. A pipeline trades a password for a token, uploads a PubMed XML file, starts a corpus run, follows it
with progress, and streams a JSONL export to a file; a bad token, an unknown collection and a queued run cancelled
come back as the client's own errors with the server's words. The command line does the same from the environment.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from elwb_client import (
    ApiError,
    Client,
    ImportReport,
    Job,
    JobCancelled,
    JobFailed,
    WaitTimeout,
    guess_format,
)

from tests.conftest import PASSWORD
from tests.integration.conftest import PROJECT_ROOT
from tests.integration.detection_helpers import detection_worker, mini_dictionary, mini_index, notes  # noqa: F401
from webapp.corpus.models import Collection, Document
from webapp.linking.registry import forget_all

pytestmark = pytest.mark.django_db(transaction=True)  # live_server: the server thread sees committed rows

ARTICLES = {
    "901": ("Bronchial asthma in winter.", "High blood pressure and diabetes were seen."),
    "902": ("Diabetes and asthma.", "Nothing else to see here."),
    "903": ("A note on weather.", "Asthma again, with high blood pressure."),
}
ASTHMA, HYPERTENSION, DIABETES = "MESH:D001249", "MESH:D006973", "MESH:D003920"


def pubmed_xml(articles: dict[str, tuple[str, str]]) -> str:
    body = "".join(
        f'<PubmedArticle><MedlineCitation><PMID Version="1">{pmid}</PMID><Article><ArticleTitle>{title}</ArticleTitle>'
        f"<Abstract><AbstractText>{abstract}</AbstractText></Abstract></Article></MedlineCitation><PubmedData/>"
        "</PubmedArticle>\n"
        for pmid, (title, abstract) in articles.items()
    )
    return f'<?xml version="1.0"?>\n<PubmedArticleSet>\n{body}</PubmedArticleSet>\n'


@pytest.fixture
def world(tmp_path: Path, alice) -> Iterator[Collection]:  # type: ignore[no-untyped-def]
    """The "mini" dictionary with an active index, and an empty collection "pm" that detects with the matcher."""
    forget_all()
    version = mini_dictionary()
    mini_index(tmp_path, version)
    yield notes(version.dictionary, detection=Collection.Detection.MATCHER, slug="pm")
    forget_all()


@pytest.fixture
def connect(live_server) -> Iterator[Callable[..., Client]]:  # type: ignore[no-untyped-def]
    """Clients of the live server, closed at the end of the test: a kept-alive connection holds a server thread,
    and that thread its database connection, which would keep the test database from being dropped."""
    made: list[Client] = []

    def make(url: str = live_server.url, **credentials: str) -> Client:
        client = Client(url, **credentials)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
    # A connection whose answer ended in an error can sit in a reference cycle (the exception's traceback) until
    # the collector runs: collected now, its socket closes, and the server's thread and its database connection end.
    gc.collect()


@pytest.mark.worker
@pytest.mark.slow
def test_a_pipeline_imports_runs_waits_and_exports(world: Collection, live_server, connect, detection_worker,  # noqa: F811  # type: ignore[no-untyped-def]
                                                   settings, tmp_path: Path) -> None:
    settings.TASK_QUEUE_OVERRIDE = detection_worker.queue  # the live server's tasks go to this test's worker
    client = connect(username="alice", password=PASSWORD)
    assert client.token and client.session.headers["Authorization"] == f"Token {client.token}"

    source = tmp_path / "abstracts.xml"
    source.write_text(pubmed_xml(ARTICLES), encoding="utf-8")
    assert guess_format(source) == "pubmed-xml"
    report = client.import_file("pm", source)  # the format guessed from the file
    assert isinstance(report, ImportReport) and report.created
    assert (report.collection, report.documents, report.mentions) == ("pm", 3, 0)
    assert sorted(d["external_id"] for d in client.iter_documents("pm", page_size=2)) == sorted(ARTICLES)  # two pages

    seen: list[Job] = []
    run = client.start_corpus_run("pm", chunk_size=1)
    assert run.kind == "corpus-run" and not run.finished
    done = client.wait(run, progress=seen.append, poll=0.2, timeout=180)
    assert done.succeeded and (done.progress, done.total) == (3, 3)
    assert seen and seen[-1] == done and all(job.id == run.id for job in seen)
    assert all(job.total == 3 for job in seen)  # the total is known from the start: the run counts documents
    assert client.job(run.id) == done

    out = tmp_path / "export" / "pm.jsonl"
    out.parent.mkdir()
    written = client.export("pm", out, format="jsonl", suggestions=True)
    assert written == out.stat().st_size > 0 and not (out.parent / "pm.jsonl.part").exists()
    documents = {d["id"]: d for d in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert sorted(documents) == sorted(ARTICLES)
    linked = {pmid: sorted({(m["text"].lower(), link["concept_id"]) for m in d["mentions"] for link in m["links"]})
              for pmid, d in documents.items()}
    assert linked["901"] == [("bronchial asthma", ASTHMA), ("diabetes", DIABETES), ("high blood pressure", HYPERTENSION)]
    assert linked["902"] == [("asthma", ASTHMA), ("diabetes", DIABETES)]
    assert linked["903"] == [("asthma", ASTHMA), ("high blood pressure", HYPERTENSION)]
    assert Document.objects.filter(collection=world).count() == 3
    brat = tmp_path / "export" / "pm.zip"  # a format the streaming export does not write: the export action's
    assert client.export("pm", brat, format="brat") == brat.stat().st_size
    with zipfile.ZipFile(brat) as archive:
        assert {Path(n).stem for n in archive.namelist()} == set(ARTICLES)

    # A file the workers read, imported as a job (the collection made on the way); a malformed one fails its job.
    imported = client.wait(client.import_server_file("pm-server", str(source), format="pubmed-xml"), poll=0.2, timeout=180)
    assert imported.succeeded and imported.kind == "import"
    assert client.collection("pm-server")["document_count"] == 3
    broken = tmp_path / "broken.txt"
    broken.write_text("905|t|A title\n905\tnot-a-number\t5\tx\tDisease\tD1\n", encoding="utf-8")
    with pytest.raises(JobFailed) as failed:
        client.wait(client.import_server_file("pm-server", str(broken), format="pubtator"), poll=0.2, timeout=180)
    assert failed.value.job.state == "failed" and failed.value.error == failed.value.job.error != ""
    assert "broken.txt" in failed.value.error and str(failed.value).endswith(failed.value.error)

    # The command line: the same server and token from the environment; a finished job waits no more.
    env = dict(os.environ, ELWB_URL=live_server.url, ELWB_TOKEN=client.token)
    cli = [sys.executable, "-m", "elwb_client"]
    waited = subprocess.run([*cli, "wait", str(run.id), "--quiet"], env=env, capture_output=True, text=True, timeout=60)
    assert waited.returncode == 0, waited.stderr
    assert "succeeded" in waited.stderr
    gold = tmp_path / "gold.txt"  # PubTator with a gold mention: guessed from its lines
    gold.write_text("904|t|Asthma in June.\n904|a|Seen twice.\n904\t0\t6\tAsthma\tDisease\tD001249\n\n", encoding="utf-8")
    imported = subprocess.run([*cli, "import", "pm", str(gold)], env=env, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert {k: json.loads(imported.stdout)[k] for k in ("collection", "documents", "mentions")} == {
        "collection": "pm", "documents": 1, "mentions": 1}
    exported = subprocess.run([*cli, "export", "pm", "-", "--as", "pubtator"], env=env, capture_output=True, timeout=60,
                              cwd=PROJECT_ROOT)
    assert exported.returncode == 0, exported.stderr
    assert "904\t0\t6\tAsthma\tDisease\t" in exported.stdout.decode()
    refused = subprocess.run([*cli, "run", "nowhere"], env=env, capture_output=True, text=True, timeout=60)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert "HTTP 404" in refused.stderr and "no collection nowhere" in refused.stderr


def test_refusals_come_back_as_api_errors_with_the_servers_words(world: Collection, live_server, connect,  # type: ignore[no-untyped-def]
                                                                 tmp_path: Path) -> None:
    with pytest.raises(ApiError) as bad_token, Client(live_server.url, token="not-a-token") as stranger:
        stranger.collection("pm")
    assert bad_token.value.status == 401 and bad_token.value.message == "Invalid token."
    with pytest.raises(ApiError) as bad_password:
        Client(live_server.url, username="alice", password="wrong")
    assert bad_password.value.status == 400 and "Unable to log in" in bad_password.value.message

    client = connect(f"{live_server.url}/api/", username="alice", password=PASSWORD)  # "/api/" is accepted too
    with pytest.raises(ApiError) as unknown:
        client.start_corpus_run("nowhere")
    assert (unknown.value.status, unknown.value.message) == (404, "no collection nowhere")
    for call in (lambda: client.export("nowhere", tmp_path / "x.jsonl"), lambda: list(client.iter_documents("nowhere"))):
        with pytest.raises(ApiError) as missing:
            call()
        assert missing.value.status == 404
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.jsonl.part").exists()

    made = client.create_collection("pm2", "Second", "mini", detection="off")
    assert (made["slug"], made["dictionary"]) == ("pm2", "mini")
    with pytest.raises(ApiError) as twice:
        client.create_collection("pm2", "Again")
    assert twice.value.status == 400 and twice.value.message.startswith("slug: ")
    broken = tmp_path / "broken.txt"
    broken.write_text("901|t|A title\n901\tnot-a-number\t5\tx\tDisease\tD1\n", encoding="utf-8")
    with pytest.raises(ApiError) as unreadable:
        client.import_file("pm", broken, format="pubtator")
    assert unreadable.value.status == 400 and unreadable.value.message  # the importer's words, naming the line
    with pytest.raises(ApiError) as no_format:
        client.export("pm", tmp_path / "y", format="nonsense")
    assert no_format.value.status == 400 and "unknown format 'nonsense'" in no_format.value.message


def test_a_queued_run_cancelled_ends_the_wait_with_job_cancelled(world: Collection, connect, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = "test-nobody-listens"  # its chunks stay queued: nothing runs them
    Document.objects.create(collection=world, external_id="n1", text="Asthma.")
    client = connect(username="alice", password=PASSWORD)
    run = client.start_corpus_run("pm", documents="unannotated", mention_types=["Disease"])
    with pytest.raises(WaitTimeout) as still_queued:
        client.wait(run, poll=0.05, timeout=0.2)
    assert still_queued.value.job.state == "queued" and not still_queued.value.job.finished

    cancelled = client.cancel(run)
    assert cancelled.id == run.id
    with pytest.raises(JobCancelled) as ended:
        client.wait(run, poll=0.05)
    assert ended.value.job.state == "cancelled"
    with pytest.raises(ApiError) as again:
        client.cancel(run)
    assert again.value.status == 409 and again.value.message
