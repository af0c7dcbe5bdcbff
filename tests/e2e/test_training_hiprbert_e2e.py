"""Hierarchy pre-training in a browser, as an admin meets it: the start form shows HiPrBERT's own fields with the
CPU student's defaults, a tiny run trains on a real worker while its page follows it to "Succeeded" with the
held-out hierarchy scores, and the new base encoder is offered to a BioSyn run, which trains from it.
Screenshots: training-hiprbert-*.png."""

from __future__ import annotations

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.test_training_hiprbert import TREE, _collection, _dictionary
from tests.integration.test_training_runs import _wait, training_worker  # noqa: F401 (a fixture)
from webapp.linking.models import EncoderModel
from webapp.training.models import TrainingRun

pytestmark = [pytest.mark.worker, pytest.mark.slow]


@pytest.fixture
def tree(transactional_db, alice, settings, training_worker):  # type: ignore[no-untyped-def]  # noqa: F811
    """A 31-disease hierarchy with a small gold collection; every task goes to this test's own worker."""
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.TASK_QUEUE_OVERRIDE = training_worker.queue
    dictionary = _dictionary("tree", TREE)
    return dictionary, _collection(dictionary), training_worker


def test_an_admin_pretrains_a_base_encoder_and_starts_biosyn_from_it(live_server, browser, tree, screenshots) -> None:  # type: ignore[no-untyped-def]
    dictionary, collection, worker = tree
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/runs/new/")
    page.check("input[name=method][value=hiprbert]")
    for own in ("#id_max_batches", "#id_hiprbert_batch_size", "#id_distances", "#id_holdout_share"):
        assert page.is_visible(own), own
    assert not page.is_visible("#id_topk")  # BioSyn's candidates are not this method's
    assert page.get_attribute("#id_max_batches", "placeholder") == "1000 on a CPU, all on a GPU"
    page.select_option("#id_hiprbert_scope", "student")
    page.fill("#id_max_batches", "2")
    page.fill("#id_hiprbert_batch_size", "16")
    page.fill("#id_holdout_share", "0.3")
    page.screenshot(path=str(screenshots / "training-hiprbert-start.png"), full_page=True)
    page.select_option("#id_collections", [collection.slug])
    # Leave the number field first (Tab): here, Playwright's click scrolled to the button, the field's change and
    # focusout on mousedown scrolled the page back to the field, and the mouse came up off the button.
    page.press("#id_holdout_share", "Tab")
    page.click("#start-run button[type=submit]")
    page.wait_for_url(lambda url: "/training/runs/new/" not in url)

    run = TrainingRun.objects.get(method="hiprbert")
    assert page.url.endswith(f"/training/runs/{run.pk}/")
    finished = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=300)
    assert finished.state == "succeeded", f"{finished.error}\n{finished.log_tail}\n{worker.log.read_text()[-3000:]}"
    # The page polls every 2 s: it reaches the finished state without a reload.
    page.locator("#run-progress h2", has_text="Succeeded").wait_for(timeout=20_000)
    page.reload()
    assert "Pre-trains a base encoder on the hierarchies of Tree" in page.inner_text(".page-header")
    scores = page.locator("table.hierarchy-scores").first
    assert "ROC AUC" in scores.inner_text() and "sibling" in scores.inner_text().lower()
    lr = page.inner_text('#run-params tr[data-param="lr"]')
    assert "1e-4" in lr, lr  # the student scope's learning rate, written as an admin types it
    page.screenshot(path=str(screenshots / "training-hiprbert-run.png"), full_page=True)

    # The base encoder is offered to a BioSyn run, which trains from it.
    encoder = EncoderModel.objects.get(pk=finished.encoder_id)
    page.goto(f"{live_server.url}/training/runs/new/")
    page.check("input[name=method][value=biosyn]")
    assert any(encoder.name in text for text in page.locator("#id_base_encoder option").all_inner_texts())
    page.select_option("#id_base_encoder", encoder.name)
    page.select_option("#id_collections", [collection.slug])
    page.select_option("#id_train_scope", "head")
    page.fill("#id_epochs", "1")
    page.click("#start-run button[type=submit]")
    page.wait_for_url(lambda url: "/training/runs/new/" not in url)
    biosyn = TrainingRun.objects.get(method="biosyn")
    assert encoder.name in page.inner_text(".page-header")  # "starting from base encoder …"
    done = _wait(biosyn.pk, ("succeeded", "failed", "cancelled"), timeout=300)
    assert done.state == "succeeded", f"{done.error}\n{done.log_tail}"
    assert EncoderModel.objects.get(pk=done.encoder_id).parent_id == encoder.pk
    page.locator("#run-progress h2", has_text="Succeeded").wait_for(timeout=20_000)
    page.screenshot(path=str(screenshots / "training-hiprbert-then-biosyn.png"), full_page=True)
