"""The promotion gate (webapp.training.gate): its verdict in words, promotion refused below it from the page, and
the admin's settings page for the gate and the retrain policy."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.training.gate import GateRefused, check_gate, promote_through_gate
from webapp.training.loop import save_gate, save_policy
from webapp.training.models import Evaluation, PromotionGate, RetrainPolicy, TrainingRun
from webapp.vocab.models import Dictionary, DictionaryVersion

pytestmark = pytest.mark.django_db


def _setup() -> tuple[Dictionary, Collection, Collection, IndexVersion]:
    """A dictionary with an active index, a gold dev collection (the gate's) and a gold training collection."""
    d = Dictionary.objects.create(slug="ncbi", title="NCBI")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="a" * 64)
    dev = Collection.objects.create(slug="ncbi-dev", title="NCBI dev", dictionary=d, has_gold=True)
    train = Collection.objects.create(slug="ncbi-train", title="NCBI train", dictionary=d, has_gold=True)
    active = IndexVersion.objects.create(dictionary=d, dictionary_version=v, state=IndexVersion.State.ACTIVE)
    return d, dev, train, active


def _candidate(d: Dictionary, method: str = "biosyn") -> tuple[IndexVersion, TrainingRun]:
    index = IndexVersion.objects.create(dictionary=d, dictionary_version=d.versions.get(), state=IndexVersion.State.READY)
    run = TrainingRun.objects.create(dictionary=d, method=method, state=TrainingRun.State.SUCCEEDED, index_version=index)
    return index, run


def _evaluated(index: IndexVersion, collection: Collection, acc1: float, by_type: dict[str, Any] | None = None) -> Evaluation:
    metrics: dict[str, Any] = {"acc@1": acc1, "acc@5": min(1.0, acc1 + 0.05), "mrr": acc1, "mentions": 200.0}
    if by_type is not None:
        metrics["by_type"] = by_type
    return Evaluation.objects.create(index_version=index, collection=collection, state=Evaluation.State.SUCCEEDED,
                                     metrics=metrics)


def _gate(d: Dictionary, dev: Collection, **kw: Any) -> PromotionGate:
    return PromotionGate.objects.create(dictionary=d, collection=dev, **({"max_acc1_drop": 0.005} | kw))


def test_a_worse_index_is_refused_with_the_figures_in_words() -> None:
    d, dev, _, active = _setup()
    gate = _gate(d, dev)
    candidate, _ = _candidate(d)
    _evaluated(active, dev, 0.885)
    _evaluated(candidate, dev, 0.872)
    verdict = check_gate(candidate, gate)
    assert not verdict.passed and not verdict.waiting
    assert verdict.reasons == ["Acc@1 on ncbi-dev 0.872 is 1.3 points below the active index's 0.885 (allowed 0.5)"]
    assert verdict.active_index == active.pk


def test_a_better_index_and_one_within_the_allowance_pass() -> None:
    d, dev, _, active = _setup()
    gate = _gate(d, dev)
    better, _ = _candidate(d)
    close, _ = _candidate(d)
    _evaluated(active, dev, 0.885)
    _evaluated(better, dev, 0.891)
    _evaluated(close, dev, 0.880)  # exactly half a point below: allowed
    verdict = check_gate(better, gate)
    assert verdict.passed and verdict.reasons == []
    assert verdict.checks == ["Acc@1 on ncbi-dev 0.891 is 0.6 points above the active index's 0.885"]
    assert check_gate(close, gate).passed


def test_a_mention_type_that_drops_too_far_is_refused_and_small_types_are_not_checked() -> None:
    d, dev, _, active = _setup()
    gate = _gate(d, dev, max_type_drop=0.02, min_type_mentions=20)
    candidate, _ = _candidate(d)
    _evaluated(active, dev, 0.880, {"DiseaseClass": {"acc@1": 0.800, "mentions": 40},
                                    "SpecificDisease": {"acc@1": 0.900, "mentions": 150},
                                    "Modifier": {"acc@1": 0.900, "mentions": 10}})
    _evaluated(candidate, dev, 0.884, {"DiseaseClass": {"acc@1": 0.750, "mentions": 40},
                                       "SpecificDisease": {"acc@1": 0.910, "mentions": 150},
                                       "Modifier": {"acc@1": 0.500, "mentions": 10}})
    verdict = check_gate(candidate, gate)
    assert not verdict.passed
    assert verdict.reasons == [
        "Acc@1 of DiseaseClass mentions (40) on ncbi-dev 0.750 is 5.0 points below the active index's 0.800 (allowed 2.0)"
    ]
    assert not any("Modifier" in c for c in verdict.checks)  # 10 mentions < 20: too noisy to gate on


def test_without_figures_per_type_only_acc1_is_checked() -> None:
    d, dev, _, active = _setup()
    gate = _gate(d, dev, max_type_drop=0.0)
    candidate, _ = _candidate(d)
    _evaluated(active, dev, 0.80)
    _evaluated(candidate, dev, 0.81)
    verdict = check_gate(candidate, gate)
    assert verdict.passed
    assert verdict.checks[-1] == "mention types not checked: an evaluation has no figures per type"


def test_missing_evaluations_are_named_and_no_active_index_passes() -> None:
    d, dev, _, active = _setup()
    gate = _gate(d, dev)
    candidate, _ = _candidate(d)
    verdict = check_gate(candidate, gate)
    assert not verdict.passed and verdict.waiting
    assert verdict.reasons == [f"the candidate (index {candidate.pk}) has no evaluation on ncbi-dev yet",
                               f"the active index (index {active.pk}) has no evaluation on ncbi-dev yet"]
    Evaluation.objects.create(index_version=candidate, collection=dev, state=Evaluation.State.FAILED, error="boom")
    _evaluated(active, dev, 0.9)
    verdict = check_gate(candidate, gate)
    assert not verdict.waiting and verdict.reasons == [
        f"the evaluation of the candidate (index {candidate.pk}) on ncbi-dev failed: boom"]
    IndexVersion.objects.filter(pk=active.pk).update(state=IndexVersion.State.RETIRED)
    assert check_gate(candidate, gate).passed


def test_promotion_below_the_gate_is_refused_on_the_page_and_recorded_on_the_run(alice_client) -> None:  # type: ignore[no-untyped-def]
    d, dev, _, active = _setup()
    _gate(d, dev)
    candidate, run = _candidate(d)
    _evaluated(active, dev, 0.885)
    _evaluated(candidate, dev, 0.872)
    response = alice_client.post(f"/training/indexes/{candidate.pk}/promote/", {"next": f"/training/runs/{run.pk}/"},
                                 follow=True)
    page = response.content.decode()
    assert "was not promoted: the promotion gate refuses it: Acc@1 on ncbi-dev 0.872 is 1.3 points below the " \
           "active index&#x27;s 0.885 (allowed 0.5)." in page
    assert IndexVersion.objects.get(pk=candidate.pk).state == IndexVersion.State.READY
    assert IndexVersion.objects.get(pk=active.pk).state == IndexVersion.State.ACTIVE
    run.refresh_from_db()
    assert run.gate_result["state"] == "failed" and run.gate_result["promoted"] is False
    assert 'id="gate-verdict" data-state="failed"' in page  # the run's page shows the verdict


def test_promotion_that_passes_switches_and_a_dictionary_without_a_gate_promotes_as_before(alice_client) -> None:  # type: ignore[no-untyped-def]
    d, dev, _, active = _setup()
    candidate, run = _candidate(d)
    index, verdict = promote_through_gate(candidate.pk)  # no gate: as before, nothing recorded
    assert index.state == IndexVersion.State.ACTIVE and verdict.passed
    assert TrainingRun.objects.get(pk=run.pk).gate_result == {}

    _gate(d, dev)
    second, run2 = _candidate(d)
    _evaluated(candidate, dev, 0.80)
    _evaluated(second, dev, 0.82)
    alice_client.post(f"/training/indexes/{second.pk}/promote/")
    assert IndexVersion.objects.get(pk=second.pk).state == IndexVersion.State.ACTIVE
    run2.refresh_from_db()
    assert run2.gate_result["state"] == "passed" and run2.gate_result["promoted"] is True


def test_promotion_without_evaluations_is_refused_and_they_are_queued(settings) -> None:  # type: ignore[no-untyped-def]
    settings.TASK_QUEUE_OVERRIDE = "test-nobody-listens"
    d, dev, _, active = _setup()
    _gate(d, dev)
    candidate, run = _candidate(d)
    with pytest.raises(GateRefused, match="has no evaluation on ncbi-dev yet") as refused:
        promote_through_gate(candidate.pk)
    assert refused.value.verdict.waiting
    assert set(Evaluation.objects.filter(collection=dev).values_list("index_version_id", "state")) == {
        (candidate.pk, "queued"), (active.pk, "queued")}
    assert TrainingRun.objects.get(pk=run.pk).gate_result["state"] == "waiting"


# --- the settings page -------------------------------------------------------------------------------------------


def test_the_gate_form_saves_points_as_fractions_and_names_what_is_wrong(alice_client) -> None:  # type: ignore[no-untyped-def]
    d, dev, train, _ = _setup()
    url = f"/training/loop/{d.slug}/"
    assert alice_client.get(url).status_code == 200
    bad = alice_client.post(url, {"form": "gate", "collection": "ncbi-dev", "max_acc1_drop": "-1", "min_type_mentions": "0"})
    assert bad.status_code == 400
    page = bad.content.decode()
    assert "Ensure this value is greater than or equal to 0" in page and "greater than or equal to 1" in page
    other = Collection.objects.create(slug="elsewhere", title="Elsewhere", has_gold=False)
    bad = alice_client.post(url, {"form": "gate", "collection": other.slug, "max_acc1_drop": "0.5", "min_type_mentions": "20"})
    assert "That is not a gold collection of this dictionary." in bad.content.decode()
    ok = alice_client.post(url, {"form": "gate", "collection": "ncbi-dev", "max_acc1_drop": "0.5", "max_type_drop": "2",
                                 "min_type_mentions": "25", "auto_promote": "on"})
    assert ok.status_code == 302
    gate = PromotionGate.objects.get(dictionary=d)
    assert (gate.collection_id, gate.max_acc1_drop, gate.max_type_drop, gate.min_type_mentions, gate.auto_promote) == (
        dev.pk, 0.005, 0.02, 25, True)
    listing = alice_client.get("/training/").content.decode()
    assert ("Acc@1 on ncbi-dev may drop 0.5 points; each mention type with at least 25 mentions 2 points; a run "
            "that passes is promoted at once") in listing


def test_the_policy_form_checks_its_collections_params_and_schedule(alice_client, bob) -> None:  # type: ignore[no-untyped-def]
    d, dev, train, _ = _setup()
    _gate(d, dev)
    url = f"/training/loop/{d.slug}/"
    base = {"form": "policy", "enabled": "on", "method": "biosyn", "collections": ["ncbi-train"]}
    page = alice_client.post(url, base).content.decode()
    assert "Say when to retrain: every N decisions, nightly, or both (or switch it off)." in page
    page = alice_client.post(url, base | {"every_decisions": "50", "params": "{epochs: 2}"}).content.decode()
    assert "Not JSON: Expecting property name enclosed in double quotes at line 1, column 2." in page
    page = alice_client.post(url, base | {"every_decisions": "50", "params": '{"epoks": 2}'}).content.decode()
    assert "unknown training parameter &#x27;epoks&#x27; for biosyn" in page
    page = alice_client.post(url, base | {"every_decisions": "50", "collections": ["ncbi-train", "ncbi-dev"]}).content.decode()
    assert "ncbi-dev is the promotion gate&#x27;s collection: a run must not train on what it is measured on" in page
    assert not RetrainPolicy.objects.exists()
    response = alice_client.post(url, base | {"every_decisions": "50", "nightly": "on", "params": '{"epochs": 2}'})
    assert response.status_code == 302
    policy = RetrainPolicy.objects.get(dictionary=d)
    assert (policy.every_decisions, policy.nightly, policy.method, policy.params["epochs"]) == (50, True, "biosyn", 2)
    assert policy.params["topk"] == 20  # the method's defaults fill the rest
    assert list(policy.collections.values_list("slug", flat=True)) == ["ncbi-train"]
    listing = alice_client.get("/training/").content.decode()
    assert "BioSyn on ncbi-train, every 50 decisions and nightly" in listing
    assert "next run at 50 decisions: 50 to go (0 now)" in listing
    # Curators may not change it.
    alice_client.force_login(bob)
    assert alice_client.post(url, base | {"every_decisions": "5"}).status_code in (302, 403)
    assert RetrainPolicy.objects.get(dictionary=d).every_decisions == 50


def test_the_services_refuse_what_the_forms_would() -> None:
    from webapp.training.errors import RunError

    d, dev, train, _ = _setup()
    with pytest.raises(RunError, match="choose one of biosyn, latte, bne, dan, not 'tagger'"):
        save_policy(d, enabled=True, every_decisions=5, nightly=False, method="tagger", params={}, collections=[train])
    save_policy(d, enabled=True, every_decisions=5, nightly=False, method="biosyn", params={}, collections=[train])
    with pytest.raises(RunError, match="ncbi-train is training data of the retrain policy"):
        save_gate(d, train, 0.0, None, 20, False)


def test_the_promote_command_goes_through_the_gate_unless_told_to_skip_it() -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    d, dev, _, active = _setup()
    _gate(d, dev)
    candidate, _run = _candidate(d)
    _evaluated(active, dev, 0.885)
    _evaluated(candidate, dev, 0.872)
    with pytest.raises(CommandError, match=r"not promoted: the promotion gate refuses it: Acc@1 on ncbi-dev 0.872 is 1.3 "
                                           r"points below .*--skip-gate overrides it"):
        call_command("promote_index", str(candidate.pk), stdout=StringIO())
    assert IndexVersion.objects.get(pk=candidate.pk).state == IndexVersion.State.READY
    call_command("promote_index", str(candidate.pk), "--skip-gate", stdout=StringIO())
    assert IndexVersion.objects.get(pk=candidate.pk).state == IndexVersion.State.ACTIVE
