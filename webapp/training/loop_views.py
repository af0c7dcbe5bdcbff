"""Admin pages of the learning loop: a dictionary's promotion gate and retrain policy (webapp.training.loop), and
what the training page says of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from webapp.core.decorators import admin_required
from webapp.training.errors import RunError
from webapp.training.gate import GateRefused
from webapp.training.loop import (
    counted_decisions,
    next_trigger,
    policy_run_unfinished,
    save_gate,
    save_policy,
)
from webapp.training.loop_forms import GateForm, PolicyForm
from webapp.training.models import PromotionGate, RetrainPolicy, TrainingRun
from webapp.vocab.models import Dictionary


@dataclass(frozen=True)
class LoopRow:
    """One dictionary's line on the training page."""

    dictionary: Dictionary
    gate: PromotionGate | None
    policy: RetrainPolicy | None
    decisions: int | None
    next_at: tuple[int, int] | None
    unfinished: TrainingRun | None

    @property
    def gate_text(self) -> str:
        return gate_summary(self.gate) if self.gate is not None else ""

    @property
    def policy_text(self) -> str:
        """"BioSyn on ncbi-train every 50 decisions and nightly", or "" without a policy."""
        p = self.policy
        if p is None:
            return ""
        when = " and ".join(w for w in (f"every {p.every_decisions} decisions" if p.every_decisions else "",
                                        "nightly" if p.nightly else "") if w)
        collections = ", ".join(c.slug for c in p.collections.all())
        return f"{TrainingRun.Method(p.method).label.split(' (')[0]} on {collections}, {when or 'never'}"

    @property
    def next_text(self) -> str:
        """"next run at 150 decisions: 12 to go (138 now)"; what holds it back when something does."""
        p = self.policy
        if p is None or not p.enabled:
            return "switched off" if p is not None else ""
        if self.unfinished is not None:
            return f"run #{self.unfinished.pk} is {self.unfinished.state}: no other run is queued until it ends"
        if self.next_at is None:
            return ""
        at, to_go = self.next_at
        return f"next run at {at} decisions: {to_go} to go ({self.decisions} now)"


def _points(fraction: float) -> str:
    return f"{100 * fraction:.2f}".rstrip("0").rstrip(".")


def gate_summary(gate: PromotionGate) -> str:
    """The gate in one sentence, in points as its verdicts speak."""
    said = f"Acc@1 on {gate.collection.slug} may drop {_points(gate.max_acc1_drop)} points"
    if gate.max_type_drop is not None:
        said += (f"; each mention type with at least {gate.min_type_mentions} mentions "
                 f"{_points(gate.max_type_drop)} points")
    return said + ("; a run that passes is promoted at once" if gate.auto_promote else "; an admin promotes")


def loop_rows() -> list[LoopRow]:
    """Each dictionary with its gate and policy; the decision count only where a policy counts them."""
    rows = []
    gates = {g.dictionary_id: g for g in PromotionGate.objects.select_related("collection")}
    policies = {p.dictionary_id: p for p in RetrainPolicy.objects.prefetch_related("collections")}
    for d in Dictionary.objects.order_by("slug"):
        policy = policies.get(d.pk)
        count = counted_decisions(d.pk).count() if policy is not None else None
        rows.append(LoopRow(d, gates.get(d.pk), policy, count,
                            next_trigger(policy, count) if policy is not None and count is not None else None,
                            policy_run_unfinished(d.pk) if policy is not None else None))
    return rows


def refusal_message(index_label: str, exc: GateRefused) -> str:
    verdict = exc.verdict
    said = f"{index_label} was not promoted: the promotion gate refuses it: " + "; ".join(verdict.reasons) + "."
    if verdict.waiting:
        said += " The missing evaluations are queued: promote again once they are done."
    return said


@require_http_methods(["GET", "POST"])
@admin_required
def loop_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """The gate and the policy of one dictionary, each its own form (``form`` says which one a POST is)."""
    dictionary = get_object_or_404(Dictionary, slug=slug)
    which = request.POST.get("form", "") if request.method == "POST" else ""
    gate_form = GateForm(dictionary, request.POST if which == "gate" else None)
    policy_form = PolicyForm(dictionary, request.POST if which == "policy" else None)
    status = 200
    if which == "remove-gate":
        PromotionGate.objects.filter(dictionary=dictionary).delete()
        messages.success(request, f"{dictionary.slug} has no promotion gate now: admins promote as they see fit.")
        return redirect("training:loop", slug=slug)
    if which == "gate" and gate_form.is_valid():
        try:
            save_gate(dictionary, user=request.user, **gate_form.fractions())
        except RunError as exc:
            gate_form.add_error(None, str(exc))
        else:
            messages.success(request, f"Promotion gate of {dictionary.slug} saved.")
            return redirect("training:loop", slug=slug)
    if which == "policy" and policy_form.is_valid():
        data = policy_form.cleaned_data
        try:
            save_policy(dictionary, enabled=data["enabled"], every_decisions=data["every_decisions"],
                        nightly=data["nightly"], method=data["method"], params=data["params"],
                        collections=data["collections"], user=request.user)
        except RunError as exc:
            policy_form.add_error(None, str(exc))
        else:
            messages.success(request, f"Retrain policy of {dictionary.slug} saved.")
            return redirect("training:loop", slug=slug)
    if which and (gate_form.errors or policy_form.errors):
        status = 400
    [row] = [r for r in loop_rows() if r.dictionary.pk == dictionary.pk]
    context: dict[str, Any] = {"dictionary": dictionary, "gate_form": gate_form, "policy_form": policy_form, "row": row,
                               "runs": TrainingRun.objects.filter(dictionary=dictionary).exclude(gate_result={})[:10]}
    return render(request, "training/loop_settings.html", context, status=status)
