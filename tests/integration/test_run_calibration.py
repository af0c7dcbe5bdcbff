"""A run's linker is calibrated after training (issue #15): on its evaluation collection's gold mentions and the
curators' NIL decisions; the run page says on what, and the index then serves a confidence with each top-1."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from linker.calibration import Calibration
from tests.integration.test_training_runs import TINY, _collection, _dictionary
from webapp.corpus.models import Collection, Document, Mention
from webapp.curation.models import Decision
from webapp.training.calibration import nil_decisions
from webapp.training.execution import run_training
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# 24 held-out mentions: names of the dictionary (the linker gets them right) and vague or unknown words (it cannot).
SURE = ["asthma", "hypertension", "heart attack", "type 2 diabetes", "bronchial asthma", "high blood pressure"]
VAGUE = ["the disease", "a chronic condition", "this syndrome", "the disorder", "gout", "an infection"]
EVAL_DOCS = [(f"e{i}", f"Seen: {text}.", [(text, cid)]) for i, (text, cid) in enumerate(
    [(t, c) for t, c in zip(SURE * 2, ["MESH:D001249", "MESH:D006973", "MESH:D009203", "MESH:D003924", "MESH:D001249",
                                         "MESH:D006973"] * 2, strict=True)]
    + [(t, "MESH:D009203") for t in VAGUE * 2])]


def test_a_run_is_calibrated_on_its_evaluation_collection_and_the_nil_decisions(settings, tmp_path: Path, bob, alice_client) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    gold = _collection(dictionary)
    dev = _collection(dictionary, "dev", EVAL_DOCS)
    notes = Collection.objects.create(slug="notes", title="notes", dictionary=dictionary)
    document = Document.objects.create(collection=notes, external_id="n1", text="A zebra fever was seen.")
    nil = Mention.objects.create(document=document, start=2, end=13, text="zebra fever", mention_type="Disease")
    run = start_run(dictionary, [gold], params=TINY, eval_collection=dev, send=False)
    Decision.objects.create(document=document, mention=nil, mention_text="zebra fever", action=Decision.Action.NIL, user=bob)
    assert [d.mention_text for d in nil_decisions(run)] == []  # made after the snapshot: not this run's
    TrainingRun.objects.filter(pk=run.pk).update(snapshot_at=timezone.now())
    run.refresh_from_db()
    assert [d.mention_text for d in nil_decisions(run)] == ["zebra fever"]
    assert run_training(run.pk) == TrainingRun.State.SUCCEEDED
    run.refresh_from_db()

    calibration = Calibration.load(Path(run.index_version.artifact_path))
    assert calibration is not None
    right = calibration.fitted_on["right"]  # the 12 names, and any vague word that happens to land on its gold
    assert (calibration.fitted_on["examples"], calibration.fitted_on["nil"]) == (25, 1) and 12 <= right < 24
    figures = run.encoder.config["calibration"]
    assert figures["collection"] == "dev" and [row["threshold"] for row in figures["auto_accept"]] == [0.8, 0.9, 0.95, 0.98, 0.99]
    assert "calibrated on 24 gold mentions of dev and 1 NIL decisions" in run.log_tail
    page = alice_client.get(f"/training/runs/{run.pk}/").content.decode()
    assert f"Confidence calibrated on dev: 25 examples, {right} right at rank 1, 1 NIL" in page
    assert "1 NIL decision (they teach the confidence" in page


def test_a_run_without_an_evaluation_collection_says_it_has_no_calibration(settings, tmp_path: Path, alice_client) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    run = start_run(dictionary, [_collection(dictionary)], params=TINY, send=False)
    assert run_training(run.pk) == TrainingRun.State.SUCCEEDED
    run.refresh_from_db()
    assert Calibration.load(Path(run.index_version.artifact_path)) is None
    assert "no calibration: no evaluation collection" in run.log_tail
    assert "no evaluation collection was chosen to fit it on" in alice_client.get(f"/training/runs/{run.pk}/").content.decode()
