"""The promotion gate (:class:`webapp.training.models.PromotionGate`): whether a candidate index may serve its
dictionary instead of the active one.

The gate compares two SUCCEEDED evaluations on the gate's collection, the candidate index's and the active index's
(``metrics["acc@1"]`` and, when both have it, ``metrics["by_type"]``), and says in words which figure fails and by
how much (:func:`check_gate`). Promotion from a page, the API or a command goes through :func:`promote_through_gate`;
a dictionary without a gate promotes as before. The learning loop (:mod:`webapp.training.loop`) asks the same
verdict of each run it gates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import QueueUnavailable
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.training.errors import RunError
from webapp.training.evaluation import start_evaluation
from webapp.training.models import Evaluation, PromotionGate, TrainingRun
from webapp.training.services import ActivationError, promote_index
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)

# gate_result["state"]: where the verdict of a run's index is.
WAITING, PASSED, FAILED, NO_GATE = "waiting", "passed", "failed", "no-gate"
EPSILON = 1e-9  # a drop equal to the allowance passes (float noise in 0.885 - 0.880 must not refuse it)


class GateRefused(ActivationError):
    """Promotion refused: the index is below its dictionary's gate, or not measured yet. ``verdict`` says why."""

    def __init__(self, verdict: GateVerdict) -> None:
        super().__init__("; ".join(verdict.reasons))
        self.verdict = verdict


@dataclass(frozen=True)
class GateVerdict:
    """What the gate says of a candidate index: ``passed``, and in words why not (``reasons``) and what was
    compared (``checks``). ``waiting``: an evaluation is not done yet (queued or missing), so there is no verdict."""

    passed: bool
    reasons: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    waiting: bool = False
    candidate_evaluation: int | None = None
    active_evaluation: int | None = None
    active_index: int | None = None

    @property
    def state(self) -> str:
        return WAITING if self.waiting else PASSED if self.passed else FAILED

    def as_result(self, promoted: bool = False) -> dict[str, Any]:
        """The verdict as ``TrainingRun.gate_result`` keeps it."""
        return {
            "state": self.state, "passed": self.passed, "reasons": self.reasons, "checks": self.checks,
            "evaluation": self.candidate_evaluation, "active_evaluation": self.active_evaluation,
            "active_index": self.active_index, "promoted": promoted, "checked_at": timezone.now().isoformat(),
        }


def _points(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def _compare(label: str, candidate: float, active: float, allowed: float) -> tuple[str, bool]:
    """One figure in words, and whether it is within the allowance."""
    drop = active - candidate
    if drop > 0:
        said = (f"{label} {candidate:.3f} is {_points(drop)} points below the active index's {active:.3f} "
                f"(allowed {_points(allowed)})")
    elif drop < 0:
        said = f"{label} {candidate:.3f} is {_points(-drop)} points above the active index's {active:.3f}"
    else:
        said = f"{label} {candidate:.3f} equals the active index's"
    return said, drop <= allowed + EPSILON


def compare_metrics(candidate: dict[str, Any], active: dict[str, Any], gate: PromotionGate,
                    collection: str) -> tuple[list[str], list[str]]:
    """(reasons it fails, every check in words) of a candidate's metrics against the active index's on the gate's
    collection: overall Acc@1, then each mention type with at least ``min_type_mentions`` gold mentions when the gate
    has a per-type allowance and both evaluations have ``by_type``."""
    reasons, checks = [], []
    said, ok = _compare(f"Acc@1 on {collection}", float(candidate["acc@1"]), float(active["acc@1"]), gate.max_acc1_drop)
    checks.append(said)
    if not ok:
        reasons.append(said)
    mine, theirs = candidate.get("by_type"), active.get("by_type")
    if gate.max_type_drop is None:
        return reasons, checks
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        checks.append("mention types not checked: an evaluation has no figures per type")
        return reasons, checks
    for mention_type in sorted(set(mine) & set(theirs)):
        figures, other = mine[mention_type], theirs[mention_type]
        mentions = int(figures.get("mentions") or 0)
        if mentions < gate.min_type_mentions or "acc@1" not in figures or "acc@1" not in other:
            continue
        name = mention_type or "untyped"
        said, ok = _compare(f"Acc@1 of {name} mentions ({mentions}) on {collection}", float(figures["acc@1"]),
                            float(other["acc@1"]), gate.max_type_drop)
        checks.append(said)
        if not ok:
            reasons.append(said)
    return reasons, checks


def evaluation_of(index: IndexVersion, collection: Collection) -> Evaluation | None:
    """The index's evaluation on the collection that counts: the latest succeeded one, else the latest unfinished one,
    else the latest failed one (None: never evaluated there)."""
    evaluations = Evaluation.objects.filter(index_version=index, collection=collection).order_by("-created_at", "-id")
    for state in (Evaluation.State.SUCCEEDED, None):
        found = evaluations.filter(state=state).first() if state else evaluations.first()
        if found is not None:
            return found
    return None


def _missing(index: IndexVersion, who: str, evaluation: Evaluation | None, collection: Collection) -> str | None:
    """Why the evaluation cannot be read yet (or failed), in words; None when it succeeded."""
    if evaluation is None:
        return f"{who} (index {index.pk}) has no evaluation on {collection.slug} yet"
    if evaluation.state in (Evaluation.State.QUEUED, Evaluation.State.RUNNING):
        return f"the evaluation of {who} (index {index.pk}) on {collection.slug} is {evaluation.state}"
    if evaluation.state == Evaluation.State.FAILED:
        return f"the evaluation of {who} (index {index.pk}) on {collection.slug} failed: {evaluation.error}"
    if "acc@1" not in evaluation.metrics:
        return f"the evaluation of {who} (index {index.pk}) on {collection.slug} has no Acc@1 (no gold mentions?)"
    return None


def check_gate(index: IndexVersion, gate: PromotionGate | None = None) -> GateVerdict:
    """The gate's verdict on ``index`` (its dictionary's gate unless one is given); a dictionary without a gate, or
    without an active index, passes; the active index itself passes."""
    if gate is None:
        gate = PromotionGate.objects.select_related("collection").filter(dictionary_id=index.dictionary_id).first()
    if gate is None:
        return GateVerdict(True, checks=[f"{index.dictionary.slug} has no promotion gate"])
    active = IndexVersion.objects.filter(dictionary_id=index.dictionary_id, state=IndexVersion.State.ACTIVE).first()
    if active is None:
        return GateVerdict(True, checks=[f"{index.dictionary.slug} has no active index: nothing to compare with"])
    if active.pk == index.pk:
        return GateVerdict(True, checks=[f"index {index.pk} is the active index"], active_index=active.pk)
    collection = gate.collection
    mine, theirs = evaluation_of(index, collection), evaluation_of(active, collection)
    missing = [m for m in (_missing(index, "the candidate", mine, collection),
                           _missing(active, "the active index", theirs, collection)) if m]
    ids = {"candidate_evaluation": mine.pk if mine else None, "active_evaluation": theirs.pk if theirs else None,
           "active_index": active.pk}
    if missing:
        pending = any(e is None or e.state in (Evaluation.State.QUEUED, Evaluation.State.RUNNING) for e in (mine, theirs))
        return GateVerdict(False, reasons=missing, waiting=pending, **ids)
    assert mine is not None and theirs is not None
    reasons, checks = compare_metrics(mine.metrics, theirs.metrics, gate, collection.slug)
    return GateVerdict(not reasons, reasons=reasons, checks=checks, **ids)


def ensure_evaluations(index: IndexVersion, gate: PromotionGate, user: Any = None) -> list[Evaluation]:
    """Queue the evaluations the gate needs that neither succeeded nor are under way: the candidate's and the
    active index's on the gate's collection. Returns those queued."""
    queued = []
    active = IndexVersion.objects.filter(dictionary_id=index.dictionary_id, state=IndexVersion.State.ACTIVE).first()
    for each in (index, active):
        if each is None:
            continue
        found = evaluation_of(each, gate.collection)
        if found is None or found.state == Evaluation.State.FAILED and each.pk != index.pk:
            # The active index's failed evaluation is tried again (a worker lost, say); a candidate's is its verdict.
            queued.append(start_evaluation(each, gate.collection, user=user))
    return queued


def record_verdict(index: IndexVersion, result: dict[str, Any]) -> None:
    """Keep the verdict on the run(s) that made the index."""
    TrainingRun.objects.filter(index_version=index).update(gate_result=result)


def record_promotion(index: IndexVersion, verdict: GateVerdict, user: Any = None) -> None:
    """The audit log's account of a promotion through the gate (``user`` None: the learning loop's own)."""
    record(actions.MODEL_PROMOTED, actor=user, obj=index, label=index.label,
           before={"active_index": verdict.active_index},
           after={"gate": verdict.state, "checks": verdict.checks[:10], "evaluation": verdict.candidate_evaluation},
           link=reverse("training:models"))


def promote_through_gate(index_id: int, user: Any = None) -> tuple[IndexVersion, GateVerdict]:
    """Promote an index if its dictionary's gate lets it (:func:`promote_index`: the atomic switch, then re-linking).

    The check and the switch happen under the dictionary's row lock (the lock activation takes), so the index is
    compared with the index it replaces. Below the gate: :class:`GateRefused` with the verdict, recorded on the run
    that made the index; evaluations the gate needs and lacks are queued, so a second try can pass."""
    index = IndexVersion.objects.select_related("dictionary").get(pk=index_id)
    with transaction.atomic():
        Dictionary.objects.select_for_update().get(pk=index.dictionary_id)
        gate = PromotionGate.objects.select_related("collection").filter(dictionary_id=index.dictionary_id).first()
        verdict = check_gate(index, gate)
        if verdict.passed:
            index = promote_index(index.pk, user=user)
            record_promotion(index, verdict, user)
    # Recorded after the dictionary's lock is let go: the gate task locks a run first, then the dictionary.
    if gate is not None:
        record_verdict(index, verdict.as_result(promoted=verdict.passed))
    if verdict.passed:
        return index, verdict
    if gate is not None:
        if verdict.waiting:
            try:
                with transaction.atomic():
                    ensure_evaluations(index, gate, user=user)
            except (RunError, QueueUnavailable) as exc:
                logger.warning("index %s: the gate's evaluations could not be queued: %s", index.pk, exc)
    raise GateRefused(verdict)
