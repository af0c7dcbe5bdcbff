"""Mention-tagger training runs: the form, the API and the params take the method "tagger"; a run goes through a real
worker to a ready detector version with span figures, which, activated, is the tagger that finds spans."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.integration.test_training_runs import _wait, training_worker  # noqa: F401 (a fixture)
from webapp.corpus.models import Collection, Document, Mention
from webapp.linking.models import DetectorVersion
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.training.params import clean_params, default_params
from webapp.training.runs import start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

DOCS = [
    ("1", "Patients with asthma and hypertension were enrolled.", ["asthma", "hypertension"]),
    ("2", "A myocardial infarction followed the diabetes.", ["myocardial infarction", "diabetes"]),
    ("3", "Obesity and asthma are common in the clinic.", ["Obesity", "asthma"]),
    ("4", "She had pneumonia after the heart failure.", ["pneumonia", "heart failure"]),
    ("5", "No disease was found in the control group.", []),
    ("6", "Migraine and epilepsy were treated with aspirin.", ["Migraine", "epilepsy"]),
]
DEV_DOCS = [("7", "Asthma and diabetes were noted in two patients.", ["Asthma", "diabetes"])]
# As small as a run can be: one epoch over short windows.
TINY = {"method": "tagger", "epochs": 1, "max_length": 64, "stride": 16, "batch_size": 4, "mention_types": ["Disease"]}


def _dictionary() -> Dictionary:
    dictionary = Dictionary.objects.create(slug="tags", title="Tags")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="obo", checksum="t" * 64)
    concept = Concept.objects.create(version=version, concept_id="T:1", preferred_name="Disease")
    # The dictionary's own names: the tagger reads their matches as features.
    for name in ("Asthma", "Diabetes mellitus", "Heart failure"):
        Name.objects.create(concept=concept, text=name, normalized=name.lower())
    return dictionary


def _gold(dictionary: Dictionary, slug: str, docs: list[tuple[str, str, list[str]]]) -> Collection:
    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text in mentions:
            start = text.index(mention_text)
            Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text,
                                   mention_type="Disease")
        if pmid == "6":  # another type: left out of a Disease tagger's spans
            start = text.index("aspirin")
            Mention.objects.create(document=doc, start=start, end=start + 7, text="aspirin", mention_type="Chemical")
    return collection


# --- without a worker ------------------------------------------------------------------------------------


def test_the_tagger_params_default_to_the_linkers_config_and_are_checked() -> None:
    from linker.methods.tagger import TaggerRecipeConfig

    config = TaggerRecipeConfig()
    params = default_params("tagger")
    assert (params["method"], params["epochs"], params["lr"], params["max_length"]) == (
        "tagger", config.epochs, config.lr, config.max_length)
    assert params["mention_types"] == [] and params["device"] == ""
    assert clean_params({"mention_types": [" Disease", "Chemical", "Disease"]}, "tagger")["mention_types"] == ["Chemical", "Disease"]
    for params, message in [
        ({"epochs": 2.5}, "epochs must be a whole number"),
        ({"mention_types": "Disease"}, "mention_types must be a list"),
        ({"mention_types": [""]}, "mention_types must be a list"),
        ({"topk": 3}, "unknown training parameter 'topk' for tagger"),
        ({"lr": float("inf")}, "lr must be a finite number"),
    ]:
        with pytest.raises(RunError, match=message):
            clean_params(params, "tagger")


@pytest.mark.django_db
def test_the_start_form_and_the_api_queue_a_tagger_run_held_out_of_its_evaluation(alice, alice_client) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    gold, dev = _gold(dictionary, "tag-gold", DOCS), _gold(dictionary, "tag-dev", DEV_DOCS)
    page = alice_client.get("/training/runs/new/?method=tagger").content.decode()
    assert 'value="tagger"' in page and 'data-methods="tagger"' in page
    for name in ("tagger_mention_types", "tagger_epochs", "tagger_lr", "tagger_batch_size", "tagger_max_length",
                 "tagger_stride", "tagger_max_documents"):
        assert f'name="{name}"' in page

    short = alice_client.post("/training/runs/new/", {"method": "tagger", "dictionary": "tags", "collections": ["tag-gold"],
                                                      "tagger_max_length": 64, "tagger_stride": 64})
    assert short.status_code == 400 and "lower the stride" in short.context["form"].errors["tagger_stride"][0]
    own = alice_client.post("/training/runs/new/", {"method": "tagger", "dictionary": "tags", "collections": ["tag-gold"],
                                                    "eval_collection": "tag-gold", "tagger_epochs": 1})
    assert own.status_code == 400 and "tag-gold is training data of this run" in own.context["form"].errors["eval_collection"][0]
    assert not TrainingRun.objects.exists()

    queued = alice_client.post("/training/runs/new/", {
        "method": "tagger", "dictionary": "tags", "collections": ["tag-gold"], "eval_collection": "tag-dev",
        "tagger_mention_types": "Disease, Chemical", "tagger_epochs": 2, "tagger_max_length": 64,
        "tagger_stride": 16, "tagger_max_documents": 0})
    assert queued.status_code == 302, queued.context["form"].errors
    run = TrainingRun.objects.get()
    assert (run.method, list(run.collections.all()), run.eval_collection) == ("tagger", [gold], dev)
    assert (run.params["mention_types"], run.params["epochs"], run.params["max_length"], run.params["stride"]) == (
        ["Chemical", "Disease"], 2, 64, 16)
    assert run.params["max_documents"] is None  # 0: every document
    detail = alice_client.get(f"/training/runs/{run.pk}/").content.decode()
    assert "Trains a mention tagger on the spans of tag-gold" in detail and "Chemical, Disease" in detail
    assert 'data-param="mention_types"' in detail

    api = APIClient()
    api.force_authenticate(alice)
    started = api.post("/api/training-runs/", {"dictionary": "tags", "collections": ["tag-gold"], "eval_collection": "tag-dev",
                                               "method": "tagger", "params": TINY}, format="json")
    assert started.status_code == 202, started.json()
    assert started.json()["params"]["max_length"] == 64 and started.json()["detector_version"] is None
    refused = api.post("/api/training-runs/", {"dictionary": "tags", "collections": ["tag-gold"], "eval_collection": "tag-gold",
                                               "method": "tagger"}, format="json")
    assert refused.status_code == 400 and "training data of this run" in refused.json()["detail"]
    bad = api.post("/api/training-runs/", {"dictionary": "tags", "collections": ["tag-gold"], "method": "tagger",
                                           "params": {"mention_types": "Disease"}}, format="json")
    assert bad.status_code == 400 and "mention_types must be a list" in bad.json()["detail"]


# --- through a real worker -------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_tagger_run_makes_a_ready_detector_that_finds_spans_once_activated(  # type: ignore[no-untyped-def]
    training_worker, django_user_model, client  # noqa: F811
) -> None:
    from django.contrib.auth.models import Group

    from webapp.linking.taggers import forget_all, get_active_tagger
    from webapp.training.detectors import activate_detector

    admin = django_user_model.objects.create_user(username="ada", password="x")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    client.force_login(admin)
    dictionary = _dictionary()
    gold, dev = _gold(dictionary, "tag-gold", DOCS), _gold(dictionary, "tag-dev", DEV_DOCS)

    run = start_run(dictionary, [gold], TINY, eval_collection=dev, user=admin, queue=training_worker.queue)
    seen: list[str] = []
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=300, seen=seen)
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert seen == [s for s in ("queued", "running", "succeeded") if s in seen] and run.started_at and run.finished_at
    assert "spans: 10 gold, 0 curator-added, 0 moved, 0 confirmed detector spans" in run.log_tail
    assert "6 documents (6 of the gold collections" in run.log_tail and "evaluated on 1 documents with 2 spans" in run.log_tail
    assert f"succeeded: detector tagger-run-{run.pk}" in run.log_tail
    assert run.encoder is None and run.index_version is None

    detector = DetectorVersion.objects.get(run=run)
    assert (detector.state, detector.label, detector.dictionary, detector.mention_types) == (
        "ready", f"tagger-run-{run.pk}", dictionary, ["Disease"])
    for key in ("precision", "recall", "f1", "f1_overlap"):
        assert 0.0 <= detector.metrics[key] <= 1.0 and run.metrics[key] == detector.metrics[key]
    assert detector.training_data["gold"] == 10 and detector.training_data["documents"] == 6

    api = APIClient()
    api.force_authenticate(admin)
    assert api.get(f"/api/training-runs/{run.pk}/").json()["detector_version"] == detector.pk
    page = client.get(f"/training/runs/{run.pk}/").content.decode()
    assert "F1 (overlap)" in page and "Acc@1" not in page and "Activate this detector" in page
    assert "10 gold spans" in page
    assert "detector</a>" in client.get("/training/").content.decode()

    forget_all()
    assert get_active_tagger("tags") is None
    activate_detector(detector.pk, admin)
    active = get_active_tagger("tags")
    assert active is not None and active.label == detector.label and active.mention_types == ("Disease",)
    # It reads dictionary features: the release's names plus the training mentions' texts.
    assert "dictionary features: 3 dictionary names" in run.log_tail
    assert active.tagger.gazetteer is not None and "Heart failure" in active.tagger.gazetteer.names
    text = "Asthma and obesity were seen."
    [spans] = active.tagger.predict([text])
    assert all(text[s.start:s.end] == s.text and s.source == "tagger" for s in spans)
    forget_all()
