"""The learning loop end to end through a real Celery worker: curator decisions reach the retrain policy's
threshold -> a run is queued and trained -> the new index and the active one are evaluated on the gate's collection
-> the gate's verdict is recorded on the run and the index that passes is promoted."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.conftest import running_worker
from tests.integration.test_training_runs import DEV_DOCS, TINY, _collection, _dictionary
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services.decisions import decide
from webapp.linking.models import IndexVersion
from webapp.training.models import Evaluation, PromotionGate, RetrainPolicy, TrainingRun
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _wait_for(what: str, check, timeout: float = 420.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"still waiting for {what} after {timeout} s")


def test_decisions_trigger_a_run_that_is_evaluated_gated_and_promoted(django_user_model, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    queue = f"test-loop-{uuid.uuid4().hex[:8]}"
    settings.TASK_QUEUE_OVERRIDE = queue  # every task of the loop, queued here or by the worker, goes to this worker
    curator = django_user_model.objects.create_user("curator", password="x")
    dictionary = _dictionary()
    gold = _collection(dictionary)
    dev = _collection(dictionary, "dev", DEV_DOCS)
    # The index serving now: tf-idf only, built here.
    serving = create_index_version(dictionary.latest_version(), None)
    build_index(serving)
    activate_index(serving.pk)
    # Open mentions a curator decides: each carries the serving index's top suggestion.
    work = Collection.objects.create(slug="work", title="Work", dictionary=dictionary)
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    mentions = []
    for i, text in enumerate(["wheezy chest disease", "tight chest"]):
        doc = Document.objects.create(collection=work, external_id=f"w{i}", text=text)
        m = Mention.objects.create(document=doc, start=0, end=len(text), text=text, status=Mention.Status.SUGGESTED)
        Link.objects.create(mention=m, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=1,
                            score=1.0, model_version=serving.label)
        mentions.append(m)
    # A gate that lets a tiny CPU run through (up to 100 points lower) and promotes it; a policy every 2 decisions.
    PromotionGate.objects.create(dictionary=dictionary, collection=dev, max_acc1_drop=1.0, auto_promote=True)
    policy = RetrainPolicy.objects.create(dictionary=dictionary, every_decisions=2, method="biosyn", params=TINY)
    policy.collections.set([gold])

    with running_worker(queue, tmp_path / "worker.log", TASK_QUEUE_OVERRIDE=queue, ARTIFACT_ROOT=str(settings.ARTIFACT_ROOT)) as worker:
        decide(user=curator, mention_id=mentions[0].pk, action="accept", seen_updated_at=mentions[0].updated_at)
        assert not TrainingRun.objects.exists()  # 1 of 2
        decide(user=curator, mention_id=mentions[1].pk, action="accept", seen_updated_at=mentions[1].updated_at)
        run = TrainingRun.objects.get()  # queued by the second decision's commit
        assert run.trigger == TrainingRun.Trigger.DECISIONS and run.eval_collection_id == dev.pk

        def checked() -> TrainingRun | None:
            r = TrainingRun.objects.get(pk=run.pk)
            assert r.state not in ("failed", "cancelled"), f"{r.error}\n{r.log_tail}\n{worker.log.read_text()[-3000:]}"
            return r if r.gate_result.get("state") in ("passed", "failed") else None

        run = _wait_for("the gate's verdict", checked)

    log = worker.log.read_text()
    assert run.state == TrainingRun.State.SUCCEEDED, log[-3000:]
    verdict = run.gate_result
    assert verdict["state"] == "passed" and verdict["promoted"] is True, (verdict, log[-3000:])
    # The verdict compares the two evaluations on the gate's collection that the worker wrote.
    mine = Evaluation.objects.get(pk=verdict["evaluation"])
    theirs = Evaluation.objects.get(pk=verdict["active_evaluation"])
    assert (mine.index_version_id, mine.collection_id, mine.state) == (run.index_version_id, dev.pk, "succeeded")
    assert (theirs.index_version_id, theirs.collection_id, theirs.state) == (serving.pk, dev.pk, "succeeded")
    assert verdict["active_index"] == serving.pk
    assert verdict["checks"][0].startswith(f"Acc@1 on dev {mine.metrics['acc@1']:.3f} ")
    assert IndexVersion.objects.get(pk=run.index_version_id).state == IndexVersion.State.ACTIVE
    assert IndexVersion.objects.get(pk=serving.pk).state == IndexVersion.State.RETIRED
    # The curators' decisions were the run's training data.
    assert set(run.examples.filter(source="curator").values_list("mention_text", flat=True)) == {
        "wheezy chest disease", "tight chest"}
    policy.refresh_from_db()
    assert policy.last_run_id == run.pk and policy.decisions_seen == 2
