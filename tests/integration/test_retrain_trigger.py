"""The retrain trigger (webapp.training.loop): curator decisions that reach the policy's threshold queue exactly one
run, also when they commit at the same moment on separate connections; nightly runs; the gate's check of a run."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.decisions import decide
from webapp.linking.models import IndexVersion
from webapp.training.loop import gate_run, maybe_trigger, nightly_retrain, recheck_waiting
from webapp.training.models import Evaluation, PromotionGate, RetrainPolicy, TrainingRun
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

TEXTS = ["asthma", "wheezing", "bronchial asthma", "asthmatic attack", "airway disease", "reactive airways",
         "status asthmaticus", "asthma attack"]


@pytest.fixture
def unconsumed_queue(settings):  # type: ignore[no-untyped-def]
    """Runs and evaluations queued here wait in a private queue nobody reads (no worker in these tests)."""
    settings.TASK_QUEUE_OVERRIDE = f"test-unread-{uuid.uuid4().hex[:8]}"
    return settings.TASK_QUEUE_OVERRIDE


def _world(django_user_model, every: int | None = 3, nightly: bool = False):  # type: ignore[no-untyped-def]
    """A dictionary with a release, a gold training collection, a collection of open suggested mentions (one per
    text of TEXTS, each in its own document), curators, and a retrain policy."""
    from django.contrib.auth.models import Group

    group, _ = Group.objects.get_or_create(name="curator")
    users = []
    for n in range(len(TEXTS)):
        user = django_user_model.objects.create_user(f"curator{n}", password="pw")
        user.groups.add(group)
        users.append(user)
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="c" * 64)
    asthma = Concept.objects.create(version=v, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    gold = Collection.objects.create(slug="gold", title="Gold", dictionary=d, has_gold=True)
    work = Collection.objects.create(slug="work", title="Work", dictionary=d)
    mentions = []
    for i, text in enumerate(TEXTS):
        document = Document.objects.create(collection=work, external_id=f"d{i}", text=text)
        m = Mention.objects.create(document=document, start=0, end=len(text), text=text, status=Mention.Status.SUGGESTED)
        Link.objects.create(mention=m, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=1,
                            score=9.0, model_version="mini@1/sparse/index-1")
        mentions.append(m)
    policy = RetrainPolicy.objects.create(dictionary=d, every_decisions=every, nightly=nightly,
                                          params={"epochs": 1, "skip_pretrain": True})
    policy.collections.set([gold])
    return d, policy, users, mentions


def _decide_at_once(users: list, mentions: list[Mention]) -> None:  # type: ignore[type-arg]
    """Each curator accepts one mention in its own thread (its own connection and transaction), all released together."""
    barrier = threading.Barrier(len(mentions))
    errors: list[BaseException] = []

    def one(user: object, mention: Mention) -> None:
        try:
            barrier.wait(timeout=30)
            decide(user=user, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=pair) for pair in zip(users, mentions, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


@pytest.mark.django_db(transaction=True)
def test_concurrent_decisions_crossing_a_threshold_queue_exactly_one_run(django_user_model, unconsumed_queue) -> None:  # type: ignore[no-untyped-def]
    d, policy, users, mentions = _world(django_user_model, every=2)
    # Eight decisions at once cross the threshold at 2 (and 4, 6, 8): every one of them may see the count reached,
    # but only the first to hold the policy's lock queues a run, and no other while that run is unfinished.
    _decide_at_once(users, mentions)
    assert Decision.objects.filter(undone_at__isnull=True).count() == 8
    runs = list(TrainingRun.objects.filter(dictionary=d))
    assert len(runs) == 1, [(r.pk, r.trigger) for r in runs]
    run = runs[0]
    assert (run.trigger, run.state, run.method) == ("decisions", "queued", "biosyn")
    assert run.params["epochs"] == 1 and list(run.collections.values_list("slug", flat=True)) == ["gold"]
    policy.refresh_from_db()
    assert policy.last_run_id == run.pk and 2 <= policy.decisions_seen <= 8 and policy.last_error == ""


@pytest.mark.django_db(transaction=True)
def test_each_threshold_queues_one_run_once_the_previous_policy_run_ended(django_user_model, unconsumed_queue) -> None:  # type: ignore[no-untyped-def]
    d, policy, users, mentions = _world(django_user_model, every=3)
    for user, mention in zip(users[:2], mentions[:2], strict=True):
        decide(user=user, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at)
    assert not TrainingRun.objects.exists()  # 2 < 3
    _decide_at_once(users[2:5], mentions[2:5])  # 3, 4, 5 at once: the threshold at 3 crossed once
    first = TrainingRun.objects.get()
    policy.refresh_from_db()
    seen = policy.decisions_seen
    assert seen >= 3
    m = mentions[5]
    decide(user=users[5], mention_id=m.pk, action="nil", seen_updated_at=m.updated_at)
    assert TrainingRun.objects.count() == 1  # the first policy run is unfinished: nothing more is queued
    first.fail("stopped by the test")
    for user, mention in zip(users[6:], mentions[6:], strict=True):
        decide(user=user, mention_id=mention.pk, action="reject", seen_updated_at=mention.updated_at)
    # 8 decisions now: queued again only if 8 reached seen + 3.
    expected = 2 if 8 >= seen + 3 else 1
    assert TrainingRun.objects.count() == expected
    assert set(TrainingRun.objects.values_list("trigger", flat=True)) == {"decisions"}


@pytest.mark.django_db
def test_undone_and_automatic_decisions_do_not_count_and_a_bad_policy_says_why(django_user_model, unconsumed_queue) -> None:  # type: ignore[no-untyped-def]
    d, policy, users, mentions = _world(django_user_model, every=2)
    doc = mentions[0].document
    Decision.objects.create(document=doc, mention_text="a", action="accept", user=users[0], via=Decision.Via.AUTO)
    Decision.objects.create(document=doc, mention_text="b", action="accept", user=users[0], undone_at=timezone.now(),
                            undone_by=users[0])
    Decision.objects.create(document=doc, mention_text="c", action="accept", user=users[0])
    Decision.objects.create(document=doc, mention_text="d", action="add_mention", user=users[0])
    assert maybe_trigger(d.pk) is None  # one decision counts
    Decision.objects.create(document=doc, mention_text="e", action="relink", user=users[0])
    # The policy's collection is gone: no run, the reason kept, the count moved on (not retried at each decision).
    policy.collections.clear()
    assert maybe_trigger(d.pk) is None
    policy.refresh_from_db()
    assert policy.last_error == "2 decisions: no run queued: choose at least one gold collection as training data"
    assert policy.decisions_seen == 2 and not TrainingRun.objects.exists()


@pytest.mark.django_db
def test_the_nightly_task_queues_a_run_only_after_new_decisions(django_user_model, unconsumed_queue) -> None:  # type: ignore[no-untyped-def]
    from tasks.loop import nightly_retrain_task
    from webapp.celery import app

    [entry] = [e for e in app.conf.beat_schedule.values() if e["task"] == "tasks.loop.nightly_retrain_task"]
    assert entry["options"]["queue"] == "interactive"  # it only queues runs: short work
    d, policy, users, mentions = _world(django_user_model, every=None, nightly=True)
    assert nightly_retrain() == []  # no decisions yet
    Decision.objects.create(document=mentions[0].document, mention_text="asthma", action="accept", user=users[0])
    [run_id] = nightly_retrain_task()
    run = TrainingRun.objects.get(pk=run_id)
    assert run.trigger == "nightly" and run.state == "queued"
    assert nightly_retrain() == []  # that run is unfinished
    run.fail("stopped by the test")
    assert nightly_retrain() == []  # and no decision came since it was queued
    Decision.objects.create(document=mentions[1].document, mention_text="wheezing", action="accept", user=users[1])
    assert len(nightly_retrain()) == 1
    policy.refresh_from_db()
    assert policy.decisions_seen == 2


@pytest.mark.django_db
def test_a_policy_runs_index_is_checked_queued_evaluations_then_promoted(django_user_model, unconsumed_queue) -> None:  # type: ignore[no-untyped-def]
    d, policy, users, mentions = _world(django_user_model)
    dev = Collection.objects.create(slug="dev", title="Dev", dictionary=d, has_gold=True)
    gate = PromotionGate.objects.create(dictionary=d, collection=dev, max_acc1_drop=0.0, auto_promote=True)
    version = d.versions.get()
    active = IndexVersion.objects.create(dictionary=d, dictionary_version=version, state=IndexVersion.State.ACTIVE)
    new = IndexVersion.objects.create(dictionary=d, dictionary_version=version, state=IndexVersion.State.READY)
    run = TrainingRun.objects.create(dictionary=d, state="succeeded", index_version=new, trigger="decisions",
                                     finished_at=timezone.now())
    assert recheck_waiting() == [run.pk]  # succeeded, gated, never checked: the beat queues its check

    assert gate_run(run.pk) == "waiting"  # neither index evaluated on dev: both queued
    run.refresh_from_db()
    assert run.gate_result["state"] == "waiting" and not run.gate_result["promoted"]
    queued = Evaluation.objects.filter(collection=dev, state="queued")
    assert set(queued.values_list("index_version_id", flat=True)) == {active.pk, new.pk}
    assert gate_run(run.pk) == "waiting" and queued.count() == 2  # not queued twice

    queued.filter(index_version=active).update(state="succeeded", metrics={"acc@1": 0.70, "mentions": 10.0})
    queued.filter(index_version=new).update(state="succeeded", metrics={"acc@1": 0.75, "mentions": 10.0})
    assert gate_run(run.pk) == "passed"
    run.refresh_from_db()
    assert run.gate_result["promoted"] is True
    assert run.gate_result["checks"] == ["Acc@1 on dev 0.750 is 5.0 points above the active index's 0.700"]
    assert IndexVersion.objects.get(pk=new.pk).state == "active"
    assert IndexVersion.objects.get(pk=active.pk).state == "retired"
    assert gate_run(run.pk) == "passed"  # final: checked once
    gate.delete()
    other = TrainingRun.objects.create(dictionary=d, state="succeeded", index_version=new, trigger="nightly")
    assert gate_run(other.pk) == "no-gate"
