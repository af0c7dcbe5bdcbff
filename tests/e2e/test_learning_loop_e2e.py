"""The learning loop in a browser: an admin sets a dictionary's promotion gate (a wrong value named by its field)
and its retrain policy, sees both on the training page, and a promotion below the gate is refused with the gate's
reasons on the run's page. Screenshots: loop-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.training.models import Evaluation, PromotionGate, RetrainPolicy, TrainingRun
from webapp.training.params import clean_params
from webapp.vocab.models import Dictionary, DictionaryVersion


@pytest.fixture
def world(transactional_db, alice, settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A dictionary with an active index and a candidate from a policy run, both evaluated on ncbi-dev (the
    candidate 1.3 points lower overall and 5 points lower on DiseaseClass)."""
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    d = Dictionary.objects.create(slug="medic", title="MEDIC (CTD)")
    v = DictionaryVersion.objects.create(dictionary=d, release="2012", source_format="medic", checksum="m" * 64)
    Collection.objects.create(slug="ncbi-train", title="NCBI Disease train", dictionary=d, has_gold=True)
    dev = Collection.objects.create(slug="ncbi-dev", title="NCBI Disease dev", dictionary=d, has_gold=True)
    Dictionary.objects.create(slug="hpo", title="Human Phenotype Ontology")
    active = IndexVersion.objects.create(dictionary=d, dictionary_version=v, state=IndexVersion.State.ACTIVE)
    candidate = IndexVersion.objects.create(dictionary=d, dictionary_version=v, state=IndexVersion.State.READY)
    by_type = {"SpecificDisease": {"acc@1": 0.91, "mentions": 560}, "DiseaseClass": {"acc@1": 0.80, "mentions": 120}}
    Evaluation.objects.create(index_version=active, collection=dev, state="succeeded",
                              metrics={"acc@1": 0.885, "acc@5": 0.94, "mentions": 917.0, "by_type": by_type})
    worse = {"SpecificDisease": {"acc@1": 0.905, "mentions": 560}, "DiseaseClass": {"acc@1": 0.75, "mentions": 120}}
    Evaluation.objects.create(index_version=candidate, collection=dev, state="succeeded",
                              metrics={"acc@1": 0.872, "acc@5": 0.93, "mentions": 917.0, "by_type": worse})
    now = timezone.now()
    run = TrainingRun.objects.create(dictionary=d, params=clean_params({}), eval_collection=dev, state="succeeded",
                                     device="cpu", phase="done", fraction=1.0, index_version=candidate,
                                     trigger=TrainingRun.Trigger.DECISIONS, metrics={"acc@1": 0.872, "mentions": 917.0},
                                     snapshot_at=now, started_at=now, finished_at=now)
    return d, run, candidate


def test_an_admin_sets_the_gate_and_policy_and_a_worse_index_is_refused(live_server, browser, world, screenshots) -> None:  # type: ignore[no-untyped-def]
    d, run, candidate = world
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/")
    row = page.locator('#loop-table tr[data-dictionary="medic"]')
    assert "none: admins promote as they see fit" in row.inner_text()
    row.get_by_role("link", name="Gate and policy").click()
    page.wait_for_url(f"**/training/loop/{d.slug}/")

    gate = page.locator("#gate-form")
    gate.get_by_label("Gold collection").select_option("ncbi-dev")
    gate.get_by_label("Largest Acc@1 drop (points)").fill("-1")
    gate.get_by_role("button", name="Save the gate").click()
    assert "Ensure this value is greater than or equal to 0." in page.locator("#gate-form").inner_text()
    page.screenshot(path=str(screenshots / "loop-gate-refused-value.png"), full_page=True)
    gate = page.locator("#gate-form")
    gate.get_by_label("Largest Acc@1 drop (points)").fill("0.5")
    gate.get_by_label("Largest drop per mention type (points)").fill("2")
    gate.get_by_label("Promote a run that passes without an admin").check()
    gate.get_by_role("button", name="Save the gate").click()
    assert "Promotion gate of medic saved." in page.locator(".messages").inner_text()
    assert PromotionGate.objects.get(dictionary=d).max_acc1_drop == 0.005

    policy = page.locator("#policy-form")
    policy.get_by_label("Every N new decisions").fill("50")
    policy.get_by_label("Nightly, when there were new decisions").check()
    policy.get_by_label("ncbi-train (NCBI Disease train)").check()
    policy.get_by_role("button", name="Save the policy").click()
    assert "Retrain policy of medic saved." in page.locator(".messages").inner_text()
    assert RetrainPolicy.objects.get(dictionary=d).every_decisions == 50
    page.screenshot(path=str(screenshots / "loop-settings.png"), full_page=True)

    page.goto(f"{live_server.url}/training/")
    text = page.locator('#loop-table tr[data-dictionary="medic"]').inner_text()
    assert "Acc@1 on ncbi-dev may drop 0.5 points" in text
    assert "BioSyn on ncbi-train, every 50 decisions and nightly" in text and "50 to go" in text
    assert page.locator(f'#run-table tr:has(a[href="/training/runs/{run.pk}/"]) .trigger').inner_text() == "policy: decisions"
    page.screenshot(path=str(screenshots / "loop-training-page.png"), full_page=True)

    page.goto(f"{live_server.url}/training/runs/{run.pk}/")
    page.get_by_role("button", name="Promote to active").click()
    message = page.locator(".messages").inner_text()
    assert "was not promoted: the promotion gate refuses it: Acc@1 on ncbi-dev 0.872 is 1.3 points below" in message
    assert "Acc@1 of DiseaseClass mentions (120) on ncbi-dev 0.750 is 5.0 points below the active index's 0.800 (allowed 2.0)" in message
    assert page.locator("#gate-verdict").get_attribute("data-state") == "failed"
    assert IndexVersion.objects.get(pk=candidate.pk).state == "ready"
    page.screenshot(path=str(screenshots / "loop-promotion-refused.png"), full_page=True)
