"""The learning loop: curator decisions trigger training runs, runs are measured on a frozen gold collection, and
an index serves its dictionary only once it passes the dictionary's promotion gate (:mod:`webapp.training.gate`).

The trigger (:class:`webapp.training.models.RetrainPolicy`): after each curator decision commits
(:data:`webapp.curation.signals.decision_committed`), :func:`after_decision` counts the dictionary's decisions and,
under a row lock on the policy, queues one run per threshold crossed (:func:`maybe_trigger`); the beat's nightly
task queues one for policies with ``nightly`` when there were new decisions (:func:`nightly_retrain`). Runs are
queued with :func:`webapp.training.runs.start_run`, the validation and queueing every run shares, and never while
another policy run of the dictionary is unfinished.

The pipeline: a run that succeeds with an index (a policy run, or any run of a dictionary whose gate auto-promotes)
queues ``tasks.loop.gate_run_task`` (:func:`after_run`, called by the training task); :func:`gate_run` queues the evaluations that are
missing, records the verdict on the run (``TrainingRun.gate_result``) once both are done, and promotes when it
passes and the gate auto-promotes. Each evaluation that ends queues the check again for the runs waiting on their
dictionary (:func:`after_evaluation`), and the beat re-checks waiting runs every few minutes (a lost message).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import QueueUnavailable, enqueue
from webapp.corpus.models import Collection
from webapp.curation.models import Decision
from webapp.curation.teaching import teaching_decisions
from webapp.linking.models import IndexVersion
from webapp.training.errors import RunError
from webapp.training.gate import (
    FAILED,
    NO_GATE,
    PASSED,
    WAITING,
    GateVerdict,
    check_gate,
    ensure_evaluations,
    record_promotion,
)
from webapp.training.models import Evaluation, PromotionGate, RetrainPolicy, TrainingRun
from webapp.training.params import clean_params
from webapp.training.runs import start_run
from webapp.training.services import ActivationError, promote_index
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)

# Runs a policy queues (the trigger says why), and the methods it may use: the ones that make a linker index from
# gold collections and decisions alone (hierarchy pre-training, fastText and the tagger make no index to gate).
POLICY_TRIGGERS = (TrainingRun.Trigger.DECISIONS, TrainingRun.Trigger.NIGHTLY)
POLICY_METHODS = (TrainingRun.Method.BIOSYN, TrainingRun.Method.LATTE, TrainingRun.Method.BNE, TrainingRun.Method.DAN)
# A curator's link decisions. Auto-accepted suggestions (via "auto") are the model's own output, not new evidence:
# they do not count towards a retrain.
COUNTED_ACTIONS = (Decision.Action.ACCEPT, Decision.Action.RELINK, Decision.Action.NIL, Decision.Action.REJECT)

# How far back the beat looks for gated runs never checked (older ones an admin promotes by hand).
RECHECK_WITHIN = timedelta(days=2)


# --- the retrain trigger -----------------------------------------------------------------------------------------


def counted_decisions(dictionary_id: int) -> Any:
    """The dictionary's curator decisions that count towards a retrain: link decisions, not undone, that teach
    (webapp.curation.teaching: not automatic, not a parent link, not an annotator's copy, not decided without
    teaching)."""
    return Decision.objects.filter(
        teaching_decisions(), document__collection__dictionary_id=dictionary_id, action__in=COUNTED_ACTIONS,
        undone_at__isnull=True,
    )


def policy_run_unfinished(dictionary_id: int) -> TrainingRun | None:
    return TrainingRun.objects.filter(
        dictionary_id=dictionary_id, trigger__in=POLICY_TRIGGERS, state__in=TrainingRun.UNFINISHED_STATES,
    ).first()


def _queue_policy_run(policy: RetrainPolicy, trigger: str) -> TrainingRun:
    """A run as the policy says (its method, params and gold collections), evaluated on the gate's collection when
    the dictionary has a gate; queued after commit by :func:`start_run`. The caller holds the policy's row lock."""
    gate = PromotionGate.objects.filter(dictionary_id=policy.dictionary_id).select_related("collection").first()
    run = start_run(policy.dictionary, policy.collections.all(), dict(policy.params), method=policy.method,
                    eval_collection=gate.collection if gate is not None else None)
    TrainingRun.objects.filter(pk=run.pk).update(trigger=trigger)
    run.trigger = trigger
    return run


def _record_trigger(policy: RetrainPolicy, run: TrainingRun | None, count: int, error: str = "") -> None:
    policy.decisions_seen = count
    policy.last_triggered_at = timezone.now()
    policy.last_run = run
    policy.last_error = error
    policy.save(update_fields=["decisions_seen", "last_triggered_at", "last_run", "last_error", "updated_at"])


def maybe_trigger(dictionary_id: int) -> TrainingRun | None:
    """Queue a run when the dictionary's decisions reached the policy's next threshold (``decisions_seen`` +
    ``every_decisions``); returns it, or None.

    Under the policy's row lock: concurrent decisions wait here one after another, and each counts the decisions
    committed when it holds the lock (READ COMMITTED reads anew per statement), so the first to reach the threshold
    queues the run and moves ``decisions_seen`` on, and the others find it moved. While a policy run of the
    dictionary is unfinished nothing is queued and the count is left as it is: the first decision after that run
    ends queues the next one. A run the policy cannot start (a collection deleted, the gate's collection among the
    training data) is not retried at every decision: the reason is kept on the policy and the count moves on."""
    with transaction.atomic():
        policy = (RetrainPolicy.objects.select_for_update(of=("self",)).select_related("dictionary")
                  .filter(dictionary_id=dictionary_id, enabled=True, every_decisions__gt=0).first())
        if policy is None:
            return None
        assert policy.every_decisions is not None
        count = counted_decisions(dictionary_id).count()
        if count < policy.decisions_seen + policy.every_decisions or policy_run_unfinished(dictionary_id):
            return None
        try:
            with transaction.atomic():
                run = _queue_policy_run(policy, TrainingRun.Trigger.DECISIONS)
        except RunError as exc:
            logger.warning("retrain policy of %s: no run queued: %s", policy.dictionary.slug, exc)
            _record_trigger(policy, None, count, f"{count} decisions: no run queued: {exc}")
            return None
        _record_trigger(policy, run, count)
        return run


def after_decision(dictionary_id: int | None) -> None:
    """What a committed decision sets off (:data:`webapp.curation.signals.decision_committed`, connected in
    training's app ``ready``): the decision is committed already, so nothing here may fail it; a broker that is
    down leaves the run failed with the reason (start_run's)."""
    if dictionary_id is None:
        return
    try:
        maybe_trigger(dictionary_id)
    except QueueUnavailable as exc:
        logger.error("retrain policy of dictionary %s: the run could not be queued: %s", dictionary_id, exc)
    except Exception:
        logger.exception("retrain policy of dictionary %s: the trigger failed", dictionary_id)


def nightly_retrain() -> list[int]:
    """Queue a run for each enabled nightly policy whose dictionary had new decisions since its last run was queued
    (and has no policy run unfinished); returns the ids of the runs queued."""
    queued = []
    for policy_id in RetrainPolicy.objects.filter(enabled=True, nightly=True).values_list("pk", flat=True):
        try:
            with transaction.atomic():
                policy = RetrainPolicy.objects.select_for_update(of=("self",)).select_related("dictionary").get(pk=policy_id)
                decisions = counted_decisions(policy.dictionary_id)
                new = decisions.filter(created_at__gt=policy.last_triggered_at) if policy.last_triggered_at else decisions
                if not new.exists() or policy_run_unfinished(policy.dictionary_id):
                    continue
                count = decisions.count()
                try:
                    with transaction.atomic():
                        run = _queue_policy_run(policy, TrainingRun.Trigger.NIGHTLY)
                except RunError as exc:
                    logger.warning("retrain policy of %s: no nightly run: %s", policy.dictionary.slug, exc)
                    _record_trigger(policy, None, count, f"nightly: no run queued: {exc}")
                    continue
                _record_trigger(policy, run, count)
                queued.append(run.pk)
        except QueueUnavailable as exc:  # the run is failed with the reason; the other policies still get theirs
            logger.error("retrain policy %s: the nightly run could not be queued: %s", policy_id, exc)
    return queued


def next_trigger(policy: RetrainPolicy, count: int) -> tuple[int, int] | None:
    """(the decision count at which the next run is queued, decisions to go), None without a count threshold."""
    if not policy.enabled or not policy.every_decisions:
        return None
    at = policy.decisions_seen + policy.every_decisions
    return at, max(0, at - count)


# --- the pipeline ------------------------------------------------------------------------------------------------


def gated(run: TrainingRun) -> bool:
    """Whether the loop measures and may promote this run's index: a policy run, or any run of a dictionary whose
    gate promotes automatically."""
    if run.index_version_id is None:
        return False
    if run.trigger in POLICY_TRIGGERS:
        return True
    return PromotionGate.objects.filter(dictionary_id=run.dictionary_id, auto_promote=True).exists()


def after_run(run_id: int, state: str) -> None:
    """Called by the training task once the run ended: a gated run that succeeded has its gate checked on the
    default queue (after any transaction the caller holds commits). A message lost here is the beat's to find
    (:func:`recheck_waiting`)."""
    if state != TrainingRun.State.SUCCEEDED:
        return
    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is not None and gated(run):
        enqueue("tasks.loop.gate_run_task", run.pk)


def gate_run(run_id: int) -> str:
    """The task body: the gate's verdict on a succeeded run's index, recorded on the run (gate_result), and its
    promotion when it passes and the gate auto-promotes. Evaluations that are missing are queued and the run waits
    (state "waiting"): each one that ends checks again (:func:`after_evaluation`). Idempotent: a run with a final
    verdict is left as it is, and the run's row lock makes two checks at once take turns."""
    with transaction.atomic():
        run = (TrainingRun.objects.select_for_update(of=("self",)).select_related("index_version", "dictionary")
               .get(pk=run_id))
        index = run.index_version
        if run.state != TrainingRun.State.SUCCEEDED or index is None:
            return "not gated"
        if run.gate_result.get("state") in (PASSED, FAILED, NO_GATE):
            return str(run.gate_result["state"])
        gate = PromotionGate.objects.select_related("collection").filter(dictionary_id=run.dictionary_id).first()
        if gate is None:
            run.gate_result = {"state": NO_GATE, "passed": None, "promoted": False, "checked_at": timezone.now().isoformat(),
                               "reasons": [f"{run.dictionary.slug} has no promotion gate: an admin promotes"]}
            run.save(update_fields=["gate_result"])
            return NO_GATE
        if index.state == IndexVersion.State.ACTIVE:  # an admin promoted it meanwhile
            run.gate_result = check_gate(index, gate).as_result(promoted=False)
            run.save(update_fields=["gate_result"])
            return PASSED
        verdict = check_gate(index, gate)
        if verdict.waiting:
            try:
                with transaction.atomic():
                    ensure_evaluations(index, gate)
            except RunError as exc:  # e.g. the gate's collection trained this index: nothing can measure it
                verdict = GateVerdict(False, reasons=[str(exc)], active_index=verdict.active_index)
        promoted = False
        if verdict.passed and gate.auto_promote:
            try:
                promote_index(index.pk)
                record_promotion(index, verdict)
                promoted = True
            except ActivationError as exc:
                verdict = GateVerdict(False, reasons=[f"passed, but not promoted: {exc}"], checks=verdict.checks,
                                      candidate_evaluation=verdict.candidate_evaluation,
                                      active_evaluation=verdict.active_evaluation, active_index=verdict.active_index)
        run.gate_result = verdict.as_result(promoted=promoted)
        run.save(update_fields=["gate_result"])
        return verdict.state


def after_evaluation(evaluation_id: int) -> None:
    """An evaluation ended: check again the runs of its dictionary whose verdict waits."""
    dictionary_id = (Evaluation.objects.filter(pk=evaluation_id)
                     .values_list("index_version__dictionary_id", flat=True).first())
    if dictionary_id is None:
        return
    for run_id in waiting_runs(dictionary_id):
        enqueue("tasks.loop.gate_run_task", run_id)


def waiting_runs(dictionary_id: int | None = None) -> list[int]:
    runs = TrainingRun.objects.filter(state=TrainingRun.State.SUCCEEDED, gate_result__state=WAITING)
    if dictionary_id is not None:
        runs = runs.filter(dictionary_id=dictionary_id)
    return list(runs.values_list("pk", flat=True))


def recheck_waiting(within: timedelta = RECHECK_WITHIN) -> list[int]:
    """The beat's slow path: queue the check again of every run whose verdict waits, and of gated runs that
    succeeded within ``within`` without one (the task's message lost, a worker died between an evaluation and
    its check). Cheap when nothing waits."""
    ids = waiting_runs()
    unchecked = TrainingRun.objects.filter(
        state=TrainingRun.State.SUCCEEDED, index_version__isnull=False, gate_result={},
        finished_at__gte=timezone.now() - within,
    ).exclude(pk__in=ids)
    ids += [run.pk for run in unchecked if gated(run)]
    for run_id in ids:
        enqueue("tasks.loop.gate_run_task", run_id)
    return ids


# --- the admin's settings ----------------------------------------------------------------------------------------


@transaction.atomic
def save_gate(dictionary: Dictionary, collection: Collection, max_acc1_drop: float, max_type_drop: float | None,
              min_type_mentions: int, auto_promote: bool, user: Any = None) -> PromotionGate:
    """Create or change a dictionary's gate (drops as fractions: 0.005 is half a point)."""
    if collection.dictionary_id not in (None, dictionary.pk) or not collection.has_gold:
        raise RunError(f"{collection.slug} is not a gold collection of {dictionary.slug}")
    for name, value in (("the Acc@1 drop", max_acc1_drop), ("the per-type drop", max_type_drop)):
        if value is not None and not 0 <= value <= 1:
            raise RunError(f"{name} must be between 0 and 100 points")
    policy = RetrainPolicy.objects.filter(dictionary=dictionary).first()
    if policy is not None and policy.collections.filter(pk=collection.pk).exists():
        raise RunError(f"{collection.slug} is training data of the retrain policy: the gate needs a collection no run "
                       f"trains on")
    fields = {"max_acc1_drop": max_acc1_drop, "max_type_drop": max_type_drop, "min_type_mentions": min_type_mentions,
              "auto_promote": auto_promote}
    old = PromotionGate.objects.select_for_update().filter(dictionary=dictionary).select_related("collection").first()
    before = {"collection": old.collection.slug, **{k: getattr(old, k) for k in fields}} if old is not None else None
    gate, _ = PromotionGate.objects.update_or_create(dictionary=dictionary, defaults={
        "collection": collection, **fields, "updated_by": user if getattr(user, "pk", None) else None,
    })
    record(actions.SETTINGS_CHANGED, actor=user, obj=gate, label=f"promotion gate of {dictionary.slug}", before=before,
           after={"collection": collection.slug, **fields}, link=reverse("training:loop", args=[dictionary.slug]))
    return gate


@transaction.atomic
def save_policy(dictionary: Dictionary, *, enabled: bool, every_decisions: int | None, nightly: bool, method: str,
                params: dict[str, Any] | None, collections: Iterable[Collection], user: Any = None) -> RetrainPolicy:
    """Create or change a dictionary's retrain policy; ``params`` are cleaned to the method's defaults (unknown
    names refused). A new policy counts from the decisions made so far: its first run comes after
    ``every_decisions`` more, not at once for the dictionary's whole history."""
    if method not in POLICY_METHODS:
        raise RunError(f"a retrain policy trains a linker: choose one of {', '.join(POLICY_METHODS)}, not {method!r}")
    if every_decisions is not None and every_decisions < 1:
        raise RunError("every N decisions: N must be at least 1 (or empty: never by count)")
    chosen = list(collections)
    if not chosen:
        raise RunError("choose at least one gold collection as training data")
    for c in chosen:
        if not c.has_gold or c.dictionary_id not in (None, dictionary.pk):
            raise RunError(f"{c.slug} is not a gold collection of {dictionary.slug}")
    gate = PromotionGate.objects.filter(dictionary=dictionary).select_related("collection").first()
    if gate is not None and gate.collection in chosen:
        raise RunError(f"{gate.collection.slug} is the promotion gate's collection: a run must not train on what it "
                       f"is measured on")
    cleaned = clean_params({k: v for k, v in (params or {}).items() if k != "method"}, method)
    policy = RetrainPolicy.objects.select_for_update().filter(dictionary=dictionary).first()
    before = _policy_account(policy) if policy is not None else None
    if policy is None:
        policy = RetrainPolicy(dictionary=dictionary, decisions_seen=counted_decisions(dictionary.pk).count())
    policy.enabled, policy.every_decisions, policy.nightly = enabled, every_decisions, nightly
    policy.method, policy.params = method, cleaned
    policy.updated_by = user if getattr(user, "pk", None) else None
    policy.save()
    policy.collections.set(chosen)
    record(actions.SETTINGS_CHANGED, actor=user, obj=policy, label=f"retrain policy of {dictionary.slug}", before=before,
           after=_policy_account(policy), link=reverse("training:loop", args=[dictionary.slug]))
    return policy


def _policy_account(policy: RetrainPolicy) -> dict[str, Any]:
    """A policy's settings as the audit log keeps them."""
    return {"enabled": policy.enabled, "every_decisions": policy.every_decisions, "nightly": policy.nightly,
            "method": policy.method, "params": policy.params,
            "collections": sorted(policy.collections.values_list("slug", flat=True))}
