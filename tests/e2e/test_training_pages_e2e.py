"""The training pages in a browser, as a new admin on a machine without a GPU meets them: the start form (styled
fields, the one dictionary chosen, defaults shown, where the run will train), an evaluation on the training
collection refused by its field, a queued run, a finished run (parameter table, loss chart, one card per figure)
and an old run evaluated on its own training data, flagged. Screenshots: training-*.png."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from django.utils import timezone

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.corpus.models import Collection, Document
from webapp.training.models import TrainingRun
from webapp.training.params import clean_params
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name


@pytest.fixture
def world(transactional_db, alice, settings, tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    """A MEDIC-like dictionary, NCBI-like train and dev collections, a finished run, an old one evaluated on its
    training collection; the workbench's own worker (scripts/run) on this machine, which has no GPU."""
    from django.db import connections

    from webapp.training import workers

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    monkeypatch.setattr(workers, "_queue_workers", lambda queue: [f"worker@{socket.gethostname()}"])
    monkeypatch.setattr(workers, "local_cuda", lambda: False)
    dictionary = Dictionary.objects.create(slug="medic", title="MEDIC (CTD)")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="2012", source_format="medic", checksum="m" * 64)
    concept = Concept.objects.create(version=version, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=concept, text="Asthma", normalized="asthma", is_preferred=True)
    train = Collection.objects.create(slug="ncbi-train", title="NCBI Disease train", dictionary=dictionary, has_gold=True)
    dev = Collection.objects.create(slug="ncbi-dev", title="NCBI Disease dev", dictionary=dictionary, has_gold=True)
    Document.objects.create(collection=train, external_id="10021369", text="Asthma in adults.")
    Document.objects.create(collection=dev, external_id="9745032", text="Childhood asthma.")
    now = timezone.now()
    history = ([{"phase": "synonym-pretrain", "step": s, "loss": round(3.2 * 0.9 ** s + 0.4, 4)} for s in range(1, 60)]
               + [{"phase": "biosyn", "step": s, "loss": round(2.1 * 0.93 ** s + 0.25 + 0.04 * (s % 3), 4)} for s in range(1, 91)])
    done = TrainingRun.objects.create(
        dictionary=dictionary, params=clean_params({}), eval_collection=dev, state="succeeded", device="cpu",
        worker=socket.gethostname(), phase="done", epoch=1, epochs=1, step=90, total_steps=90, fraction=1.0,
        loss_history=history, metrics={"acc@1": 0.8958, "acc@5": 0.9812, "mrr": 0.9314, "n": 917.0, "mentions": 917.0},
        snapshot_at=now, started_at=now, finished_at=now,
    )
    done.collections.set([train])
    old = TrainingRun.objects.create(
        dictionary=dictionary, params=clean_params({"epochs": 2}), eval_collection=train, state="succeeded",
        device="cpu", worker=socket.gethostname(), phase="done", epoch=2, epochs=2, step=40, total_steps=40,
        fraction=1.0, loss_history=[{"phase": "biosyn", "step": 1, "loss": 1.8}],
        metrics={"acc@1": 1.0, "acc@5": 1.0, "mrr": 1.0, "n": 5134.0, "mentions": 5134.0},
        snapshot_at=now, started_at=now, finished_at=now,
    )
    old.collections.set([train])
    return done, old


def test_a_new_admin_starts_a_run_and_reads_its_pages(live_server, browser, world, screenshots) -> None:  # type: ignore[no-untyped-def]
    done, old = world
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/runs/new/")
    # The one dictionary is chosen; epochs and learning rate show the scope's defaults, not 0.
    assert page.input_value("#id_dictionary") == "medic"
    assert page.locator("#id_dictionary option").all_inner_texts() == ["MEDIC (CTD)"]
    assert page.get_attribute("#id_epochs", "placeholder") == "10 on a GPU, 1 on a CPU" and page.input_value("#id_epochs") == ""
    # Number inputs are as wide as the selects beside them, not the browser's stubs.
    assert page.locator("#id_epochs").bounding_box()["width"] == page.locator("#id_train_scope").bounding_box()["width"]
    placement = page.inner_text("#run-placement")
    assert "This machine has no GPU (CUDA), so the run will train on the CPU." in placement
    page.screenshot(path=str(screenshots / "training-start-form.png"), full_page=True)

    # Evaluating on the training collection is refused by its field, with the reason.
    page.select_option("#id_collections", ["ncbi-train"])
    page.select_option("#id_eval_collection", "ncbi-train")
    page.click("#start-run button[type=submit]")
    error = page.locator("#id_eval_collection ~ .field-error")
    error.wait_for()
    assert error.inner_text().startswith("ncbi-train is training data of this run")
    page.locator("#id_eval_collection").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "training-start-refused.png"))

    page.select_option("#id_eval_collection", "ncbi-dev")
    page.click("#start-run button[type=submit]")
    page.wait_for_url(lambda url: "/training/runs/new/" not in url)
    run = TrainingRun.objects.exclude(pk__in=[done.pk, old.pk]).get()
    assert page.url.endswith(f"/training/runs/{run.pk}/")
    assert page.inner_text(".messages") == f"Training run {run.pk} queued."
    assert "will train on the CPU" in page.inner_text("#run-device")
    assert page.is_visible("text=No training steps yet")
    assert page.inner_text('#run-params tr[data-param="epochs"]').split("\t")[1].startswith("1")  # the student's
    page.screenshot(path=str(screenshots / "training-run-queued.png"), full_page=True)

    page.goto(f"{live_server.url}/training/runs/{done.pk}/")
    assert page.is_visible("#loss-chart svg") and page.locator("#loss-chart polyline").count() == 1
    assert page.locator("#run-metrics dt").all_inner_texts() == ["ACC@1", "ACC@5", "MRR", "MENTIONS"]
    assert "Trained on the CPU of" in page.inner_text("#run-device")
    assert page.is_visible('#run-params tr[data-param="lr"]') and not page.is_visible('#run-params-more')
    page.screenshot(path=str(screenshots / "training-run-succeeded.png"), full_page=True)

    page.goto(f"{live_server.url}/training/runs/{old.pk}/")
    warning = page.inner_text("#run-overlap")
    assert warning.startswith("Evaluated on its own training data: these figures measure memory, not linking.")
    page.screenshot(path=str(screenshots / "training-run-own-training-data.png"), full_page=True)

    page.goto(f"{live_server.url}/training/")
    assert page.locator("#run-table .badge-danger", has_text="own training data").count() == 1
    page.screenshot(path=str(screenshots / "training-runs.png"), full_page=True)
