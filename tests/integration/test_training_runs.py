"""Training runs: the snapshot, the state machine through a real worker, and a worker killed mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.utils import timezone

from tests.integration.conftest import PROJECT_ROOT, Worker, database_url
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision, HardNegative
from webapp.jobs.sweep import STALE_AFTER, fail_lost_jobs
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.dataset import build_snapshot
from webapp.training.errors import RunError
from webapp.training.evaluation import start_evaluation
from webapp.training.models import Evaluation, TrainingExample, TrainingRun
from webapp.training.params import clean_params, default_params, resolved_params
from webapp.training.runs import cancel_run, start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name


def recover_stale_runs(stale_after: timedelta = STALE_AFTER) -> list[int]:
    """The ids of the jobs the one job sweep failed as lost (its lines: "training run 7 failed: ...")."""
    return [int(line.split(" failed:")[0].rsplit(" ", 1)[1]) for line in fail_lost_jobs(stale_after)]

CONCEPTS = {
    "MESH:D001249": ["Asthma", "Bronchial asthma"],
    "MESH:D006973": ["Hypertension", "High blood pressure"],
    "MESH:D009203": ["Myocardial Infarction", "Heart attack"],
    "MESH:D003924": ["Diabetes Mellitus, Type 2", "Type 2 diabetes"],
}
DOCS = [
    ("1", "Patients with asthma and raised blood pressure were enrolled.", [("asthma", "MESH:D001249"), ("raised blood pressure", "MESH:D006973")]),
    ("2", "A cardiac infarction followed the hypertensive crisis.", [("cardiac infarction", "MESH:D009203")]),
    ("3", "Adult onset diabetes and wheezing asthma were common.", [("Adult onset diabetes", "MESH:D003924"), ("wheezing asthma", "MESH:D001249")]),
]
# Held out of training: what runs are evaluated on (a training collection is refused).
DEV_DOCS = [("4", "Bronchial asthma and high blood pressure were noted.", [("Bronchial asthma", "MESH:D001249"), ("high blood pressure", "MESH:D006973")])]
# Tiny, fast, CPU: frozen transformer + head, no synonym pre-training.
TINY = {"epochs": 2, "skip_pretrain": True, "topk": 4, "batch_size": 4, "train_scope": "head", "head_hidden": 32}


def _dictionary() -> Dictionary:
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="a" * 64)
    for cid, names in CONCEPTS.items():
        c = Concept.objects.create(version=v, concept_id=cid, preferred_name=names[0])
        for i, n in enumerate(names):
            Name.objects.create(concept=c, text=n, normalized=n.lower(), is_preferred=i == 0)
    return d


def _collection(dictionary: Dictionary, slug: str = "gold", docs: list[tuple[str, str, list[tuple[str, str]]]] = DOCS) -> Collection:
    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, cid in mentions:
            start = text.index(mention_text)
            m = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text, mention_type="Disease")
            concept = Concept.objects.get(version__dictionary=dictionary, concept_id=cid)
            Link.objects.create(mention=m, concept=concept, concept_ref=cid, origin=Link.Origin.GOLD)
    return collection


def _decide(user, collection: Collection, mention_text: str, cid: str, action: str = Decision.Action.RELINK) -> Decision:  # type: ignore[no-untyped-def]
    doc = collection.documents.first()
    assert doc is not None
    concept = Concept.objects.get(version__dictionary=collection.dictionary, concept_id=cid)
    return Decision.objects.create(document=doc, mention_text=mention_text, action=action, concept=concept, concept_ref=cid, user=user)


def _wait(run_id: int, until: tuple[str, ...], timeout: float = 240.0, seen: list[str] | None = None) -> TrainingRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = TrainingRun.objects.get(pk=run_id)
        if seen is not None and (not seen or seen[-1] != run.state):
            seen.append(run.state)
        if run.state in until:
            return run
        time.sleep(0.05)
    run = TrainingRun.objects.get(pk=run_id)
    raise AssertionError(f"run {run_id} still {run.state} after {timeout} s: {run.error}\n{run.log_tail}")


def _start_worker(tmp: Path, pool: str) -> Worker:
    """A dedicated worker: its own queue, its own ARTIFACT_ROOT, its own process group (to SIGKILL it whole)."""
    from django.conf import settings
    from django.db import connection

    from webapp.celery import app

    queue = f"test-train-{uuid.uuid4().hex[:8]}"
    log = tmp / f"{queue}.log"
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(connection.settings_dict), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND, DB_CONN_MAX_AGE="0", ARTIFACT_ROOT=str(tmp / "artifacts"),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-P", pool, "-c", "1",
         "-n", f"{queue}@%h", "--loglevel", "INFO"],
        cwd=PROJECT_ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while not app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            pytest.fail(f"the Celery worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return Worker(queue, process, log)


def _stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:  # type: ignore[type-arg]
    if process.poll() is None:
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.fixture
def training_worker(django_db_setup, django_db_blocker, tmp_path: Path) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    worker = _start_worker(tmp_path, "prefork")
    yield worker
    _stop(worker.process)


# --- without a worker ------------------------------------------------------------------------------------


def test_params_default_to_the_biosyn_paper_and_refuse_unknown_names() -> None:
    params = default_params()
    assert (params["topk"], params["dense_ratio"], params["max_length"]) == (20, 0.5, 25)
    # Epochs and learning rate are the scope's: the paper's on a GPU, the student's on a CPU.
    assert (params["epochs"], params["lr"], params["train_scope"]) == (0, 0.0, "auto")
    assert (resolved_params(params, "full")["epochs"], resolved_params(params, "full")["lr"]) == (10, 1e-5)
    assert resolved_params(params, "student")["epochs"] == 1
    assert resolved_params(params | {"epochs": 3}, "student")["epochs"] == 3  # an explicit value wins
    assert clean_params({"epochs": 2})["epochs"] == 2
    with pytest.raises(RunError, match="unknown training parameter 'epoks'"):
        clean_params({"epoks": 2})
    with pytest.raises(RunError, match="must be a number"):
        clean_params({"lr": "fast"})
    with pytest.raises(RunError, match="must not be negative"):
        clean_params({"epochs": -1})
    with pytest.raises(RunError, match="train_scope must be auto or one of"):
        clean_params({"train_scope": "tiny"})


@pytest.mark.django_db
def test_the_snapshot_holds_gold_pairs_and_decisions_up_to_the_request_only(bob) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    collection = _collection(dictionary)
    before = _decide(bob, collection, "wheezy chest disease", "MESH:D001249")
    undone = _decide(bob, collection, "tight chest", "MESH:D001249")
    Decision.objects.filter(pk=undone.pk).update(undone_at=timezone.now(), undone_by=bob)
    duplicate = _decide(bob, collection, "Wheezy chest disease!", "MESH:D001249", Decision.Action.ACCEPT)
    HardNegative.objects.create(decision=before, mention_text="wheezy chest disease",
                                concept=Concept.objects.get(concept_id="MESH:D009203"))
    run = start_run(dictionary, [collection], TINY)
    after = _decide(bob, collection, "heart trouble", "MESH:D009203")
    assert run.state == TrainingRun.State.QUEUED and run.snapshot_at == run.created_at

    examples = build_snapshot(run)
    pairs = {(e.text, e.concept_id, e.source, e.negative) for e in examples}
    assert ("wheezy chest disease", "MESH:D001249", "curator", False) in pairs
    assert ("wheezy chest disease", "MESH:D009203", "curator", True) in pairs
    assert ("raised blood pressure", "MESH:D006973", "gold", False) in pairs
    assert ("cardiac infarction", "MESH:D009203", "gold", False) in pairs
    texts = [e.text for e in examples if not e.negative]
    assert len(texts) == len(set(texts))  # the duplicate decision collapsed onto the first
    decisions = set(TrainingExample.objects.filter(run=run).values_list("decision_id", flat=True))
    assert before.pk in decisions
    assert not {undone.pk, duplicate.pk, after.pk} & decisions
    assert build_snapshot(run) and TrainingExample.objects.filter(run=run).count() == len(examples)  # written once


@pytest.mark.django_db
def test_a_queued_run_is_cancelled_at_once_and_a_stale_running_one_is_failed() -> None:
    dictionary = _dictionary()
    collection = _collection(dictionary)
    queued = start_run(dictionary, [collection], TINY)
    assert cancel_run(queued.pk).state == TrainingRun.State.CANCELLED

    stale = start_run(dictionary, [collection], TINY)
    fresh = start_run(dictionary, [collection], TINY)
    long_ago = timezone.now() - timedelta(minutes=10)
    TrainingRun.objects.filter(pk=stale.pk).update(state="running", heartbeat_at=long_ago, step=7, total_steps=20, phase="biosyn", worker="gpu-1")
    TrainingRun.objects.filter(pk=fresh.pk).update(state="running", heartbeat_at=timezone.now())
    assert recover_stale_runs() == [stale.pk]
    stale.refresh_from_db()
    assert stale.state == TrainingRun.State.FAILED
    assert stale.error.startswith("worker lost (killed or crashed) at biosyn step 7/20")
    assert "gpu-1" in stale.error and stale.finished_at is not None
    assert TrainingRun.objects.get(pk=fresh.pk).state == TrainingRun.State.RUNNING


@pytest.mark.django_db
def test_a_run_needs_training_data() -> None:
    dictionary = _dictionary()
    with pytest.raises(RunError, match="at least one gold collection"):
        start_run(dictionary, [], TINY)


# --- through a real worker -------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_biosyn_run_goes_queued_running_succeeded_and_yields_a_ready_index(training_worker, django_user_model) -> None:  # type: ignore[no-untyped-def]
    # A plain account: a transactional test may follow one that flushed the role groups.
    bob = django_user_model.objects.create_user(username="bob", password="x")
    dictionary = _dictionary()
    collection = _collection(dictionary)
    dev = _collection(dictionary, "dev", DEV_DOCS)
    before = _decide(bob, collection, "wheezy chest disease", "MESH:D001249")
    run = start_run(dictionary, [collection], TINY | {"epochs": 3, "step_delay_s": 0.4}, eval_collection=dev,
                    queue=training_worker.queue)
    after = _decide(bob, collection, "heart trouble", "MESH:D009203")
    seen: list[str] = []
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), seen=seen)
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert seen[0] == "queued" and "running" in seen and seen[-1] == "succeeded"
    assert run.worker and run.device == "cpu" and run.task_id
    assert run.started_at and run.finished_at and run.started_at <= run.finished_at
    assert run.epoch == 3 and run.step == run.total_steps > 0 and run.fraction == 1.0
    assert [p["phase"] for p in run.loss_history] and all(p["loss"] >= 0 for p in run.loss_history)
    assert "acc@1" in run.metrics and run.metrics["mentions"] == 2.0

    decisions = set(run.examples.values_list("decision_id", flat=True))
    assert before.pk in decisions and after.pk not in decisions

    encoder = EncoderModel.objects.get(pk=run.encoder_id)
    assert encoder.method == EncoderModel.Method.BIOSYN and encoder.config["training_queries"] > 0
    index = IndexVersion.objects.get(pk=run.index_version_id)
    assert index.state == IndexVersion.State.READY and index.encoder_id == encoder.pk and index.name_count >= 8
    assert (Path(index.artifact_path) / "config.json").exists()

    from linker.linker import Linker

    linker = Linker.load(index.artifact_path)
    assert linker.link_mentions(["wheezy chest disease"], k=1)[0][0].concept_id == "MESH:D001249"

    with pytest.raises(RunError, match=f"gold is training data of index {index.pk}"):
        start_evaluation(index, collection, queue=training_worker.queue)
    evaluation = start_evaluation(index, dev, queue=training_worker.queue)
    deadline = time.monotonic() + 120
    while Evaluation.objects.get(pk=evaluation.pk).state in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.SUCCEEDED, evaluation.error
    assert evaluation.metrics["acc@1"] == run.metrics["acc@1"] and evaluation.metrics["mentions"] == 2.0


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_run_leaves_the_run_failed_never_running(tmp_path: Path) -> None:
    dictionary = _dictionary()
    collection = _collection(dictionary)
    worker = _start_worker(tmp_path, "solo")
    try:
        run = start_run(dictionary, [collection], TINY | {"epochs": 400, "step_delay_s": 0.3}, queue=worker.queue)
        deadline = time.monotonic() + 180
        while True:
            run.refresh_from_db()
            if run.state == "running" and run.phase == "biosyn" and run.step >= 2:
                break
            assert run.state in ("queued", "running") and time.monotonic() < deadline, f"{run.state}: {run.error}"
            time.sleep(0.1)
        _stop(worker.process, signal.SIGKILL)
    finally:
        _stop(worker.process)
    assert worker.process.returncode == -signal.SIGKILL
    run.refresh_from_db()
    assert run.state == TrainingRun.State.RUNNING  # nobody can know yet: the heartbeat is still fresh
    assert recover_stale_runs(stale_after=timedelta(minutes=5)) == []
    time.sleep(2.5)
    assert recover_stale_runs(stale_after=timedelta(seconds=2)) == [run.pk]
    run.refresh_from_db()
    assert run.state == TrainingRun.State.FAILED
    assert run.error.startswith("worker lost (killed or crashed) at biosyn step")
    assert run.encoder_id is None and run.index_version_id is None


# --- the command line ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_a_cpu_run_with_default_params_trains_the_student(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import call_command

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    _collection(dictionary)
    call_command("train_run", "--dictionary", "mini", "--collection", "gold", "--max-queries", "3", "--skip-pretrain",
                 "--params", '{"topk": 4}', "--inline", stdout=StringIO())
    run = TrainingRun.objects.get()
    assert run.state == TrainingRun.State.SUCCEEDED, run.error
    # auto scope, epochs 0 and lr 0 became the student's defaults on this CPU worker, recorded with the model.
    assert (run.params["train_scope"], run.params["epochs"], run.params["lr"]) == ("auto", 0, 0.0)
    config = run.encoder.config
    assert (config["train_scope"], config["encoder_layers"], config["epochs"], config["lr"]) == ("student", 3, 1, 2e-5)
    assert run.epochs == 1


@pytest.mark.slow
@pytest.mark.django_db
def test_train_run_inline_then_promote_index_and_cancel_run(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import CommandError, call_command

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    _collection(dictionary)
    _collection(dictionary, "dev", DEV_DOCS)
    out = StringIO()
    call_command("train_run", "--dictionary", "mini", "--collection", "gold", "--eval-collection", "dev", "--epochs", "1",
                 "--max-queries", "3", "--skip-pretrain", "--params", '{"topk": 4, "train_scope": "head"}', "--inline", stdout=out)
    run = TrainingRun.objects.get()
    assert run.state == TrainingRun.State.SUCCEEDED, run.error
    assert run.params["epochs"] == 1 and run.params["max_queries"] == 3 and run.encoder.config["training_queries"] == 3
    assert f"training run {run.pk} succeeded" in out.getvalue()
    assert Path(run.index_version.artifact_path).is_relative_to(tmp_path)

    call_command("promote_index", str(run.index_version_id), stdout=StringIO())
    assert IndexVersion.objects.get(pk=run.index_version_id).state == IndexVersion.State.ACTIVE

    call_command("train_run", "--dictionary", "mini", "--collection", "gold", stdout=StringIO())
    queued = TrainingRun.objects.filter(state="queued").get()
    out = StringIO()
    call_command("cancel_run", str(queued.pk), stdout=out)
    assert "cancelled" in out.getvalue()
    with pytest.raises(CommandError, match="already cancelled"):
        call_command("cancel_run", str(queued.pk), stdout=StringIO())
    with pytest.raises(CommandError, match="unknown training parameter"):
        call_command("train_run", "--dictionary", "mini", "--collection", "gold", "--params", '{"nope": 1}', stdout=StringIO())
    with pytest.raises(CommandError, match="no collection 'missing'"):
        call_command("train_run", "--dictionary", "mini", "--collection", "missing", stdout=StringIO())


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_running_run_stops_when_cancelled(training_worker) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    collection = _collection(dictionary)
    run = start_run(dictionary, [collection], TINY | {"epochs": 400, "step_delay_s": 0.2}, queue=training_worker.queue)
    deadline = time.monotonic() + 180
    while not TrainingRun.objects.filter(pk=run.pk, state="running", phase="biosyn", step__gte=1).exists():
        assert time.monotonic() < deadline, TrainingRun.objects.get(pk=run.pk).error
        time.sleep(0.1)
    assert cancel_run(run.pk).cancel_requested
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=60)
    assert run.state == TrainingRun.State.CANCELLED and run.error == "cancelled by an admin"
    assert run.step < run.total_steps and run.encoder_id is None and run.finished_at is not None


# --- the admin pages -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_training_pages_are_for_admins_only(bob_client, client, charlie) -> None:  # type: ignore[no-untyped-def]
    assert bob_client.get("/training/").status_code == 403
    client.force_login(charlie)
    assert client.get("/training/runs/new/").status_code == 403


@pytest.mark.django_db
def test_an_admin_starts_follows_cancels_a_run_and_promotes_an_index(alice_client, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from webapp.training.services import build_index, create_index_version

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    _collection(dictionary)
    page = alice_client.get("/training/runs/new/")
    assert page.status_code == 200 and b'value="20"' in page.content  # top-k: the paper's default

    form = {"dictionary": "mini", "collections": ["gold"], "epochs": 2, "topk": 20, "dense_ratio": 0.5, "lr": 1e-5,
            "batch_size": 16, "max_length": 25, "train_scope": "auto", "max_queries": 0}
    response = alice_client.post("/training/runs/new/", form)
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/training/runs/{run.pk}/"
    assert run.params["epochs"] == 2 and run.params["topk"] == 20 and run.created_by.username == "alice"
    assert alice_client.post("/training/runs/new/", form | {"collections": []}).status_code == 400

    TrainingRun.objects.filter(pk=run.pk).update(
        state="running", phase="biosyn", epoch=1, epochs=2, step=3, total_steps=6, fraction=0.5, heartbeat_at=timezone.now(),
        loss_history=[{"phase": "biosyn", "step": s, "loss": 2.0 / s} for s in range(1, 4)],
    )
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assert page.status_code == 200 and b"<polyline" in page.content and b'hx-trigger="every 2s"' in page.content
    fragment = alice_client.get(f"/training/runs/{run.pk}/", headers={"HX-Request": "true", "HX-Target": "run-progress"})
    assert b"<html" not in fragment.content and b'value="50"' in fragment.content
    assert b"Running" in alice_client.get("/training/").content

    alice_client.post(f"/training/runs/{run.pk}/cancel/")
    assert TrainingRun.objects.get(pk=run.pk).cancel_requested

    index = build_index(create_index_version(dictionary.latest_version(), None))
    TrainingRun.objects.filter(pk=run.pk).update(state="succeeded", index_version=index, metrics={"acc@1": 0.8, "acc@5": 0.9})
    listing = alice_client.get("/training/")
    assert b"0.800" in listing.content and b"0.900" in listing.content and b"Promote" in listing.content
    finished = alice_client.get(f"/training/runs/{run.pk}/")
    assert b'hx-trigger="every 2s"' not in finished.content
    alice_client.post(f"/training/indexes/{index.pk}/promote/")
    assert IndexVersion.objects.get(pk=index.pk).state == IndexVersion.State.ACTIVE

    response = alice_client.post(f"/training/indexes/{index.pk}/evaluate/", {"collection": "gold", "next": f"/training/runs/{run.pk}/"})
    assert response.status_code == 302 and response["Location"] == f"/training/runs/{run.pk}/"
    evaluation = Evaluation.objects.get(index_version=index)
    assert evaluation.state == "queued"  # the task is sent on commit, by the worker in production
    from webapp.training.evaluation import run_evaluation

    assert run_evaluation(evaluation.pk) == "succeeded"
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assert b'id="evaluations"' in page.content and b"1.000" in page.content  # sparse retrieval gets the tiny set right
