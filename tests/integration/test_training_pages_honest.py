"""The training pages say what is true: evaluation data held out of training (refused otherwise, through the
service, the start form, the index's Evaluate button, the API and the command; old figures flagged), the
parameters as a readable table with the scope's defaults resolved for the device, where a run trains, a loss
chart from the first report, and a start form without "0 means default" or placeholders for single choices."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from pytest_django.asserts import assertContains, assertNotContains
from rest_framework.test import APIClient

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.evaluation import start_evaluation
from webapp.training.held_out import check_held_out, index_overlap, run_overlap, trained_collections
from webapp.training.models import Evaluation, TrainingExample, TrainingRun
from webapp.training.param_table import parameter_rows
from webapp.training.params import clean_params
from webapp.training.runs import start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

CONCEPTS = {"MESH:D001249": "Asthma", "MESH:D006973": "Hypertension"}
TRAIN = [("101", "Asthma and hypertension were common.", [("Asthma", "MESH:D001249")]),
         ("102", "Hypertension worsened.", [("Hypertension", "MESH:D006973")])]
DEV = [("201", "Childhood asthma was studied.", [("asthma", "MESH:D001249")])]


def _dictionary(slug: str = "mini") -> Dictionary:
    d = Dictionary.objects.create(slug=slug, title=slug.capitalize())
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum=slug[0] * 64)
    for cid, name in CONCEPTS.items():
        c = Concept.objects.create(version=v, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=c, text=name, normalized=name.lower(), is_preferred=True)
    return d


def _gold(dictionary: Dictionary, slug: str, docs: list[tuple[str, str, list[tuple[str, str]]]]) -> Collection:
    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, cid in mentions:
            start = text.index(mention_text)
            m = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text)
            Link.objects.create(mention=m, concept=Concept.objects.get(version__dictionary=dictionary, concept_id=cid),
                                concept_ref=cid, origin=Link.Origin.GOLD)
    return collection


@pytest.fixture
def world() -> tuple[Dictionary, Collection, Collection]:
    d = _dictionary()
    return d, _gold(d, "train", TRAIN), _gold(d, "dev", DEV)


def _trained_index(dictionary: Dictionary, collections: list[Collection], parent: EncoderModel | None = None,
                   eval_collection: Collection | None = None, metrics: dict | None = None) -> tuple[TrainingRun, IndexVersion]:  # type: ignore[type-arg]
    """A succeeded BioSyn run as the worker records it (no training needed to show it)."""
    run = TrainingRun.objects.create(
        dictionary=dictionary, params=clean_params({}), state="succeeded", device="cpu", worker="box",
        eval_collection=eval_collection, metrics=metrics or {}, started_at=timezone.now(), finished_at=timezone.now(),
    )
    run.collections.set(collections)
    encoder = EncoderModel.objects.create(name=f"biosyn-run-{run.pk}", method="biosyn", base_model="base",
                                          artifact_path="/nowhere", parent=parent)
    index = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=dictionary.latest_version(),
                                        encoder=encoder, artifact_path="/nowhere", state="ready")
    TrainingRun.objects.filter(pk=run.pk).update(encoder=encoder, index_version=index)
    run.refresh_from_db()
    return run, index


# --- evaluation held out of training -------------------------------------------------------------------------


def test_the_service_refuses_a_training_collection_or_one_sharing_its_documents(world) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    with pytest.raises(RunError, match=r"^train is training data of this run: .*Acc@1 near 1\.000.*held out"):
        start_run(d, [train], {"epochs": 1}, eval_collection=train, send=False)
    # The same abstracts imported again under another slug (ids kept), or another id (texts kept).
    copy = _gold(d, "train-copy", TRAIN)
    renamed = _gold(d, "train-renamed", [("9" + pmid, text, m) for pmid, text, m in TRAIN])
    with pytest.raises(RunError, match=r"train-copy shares documents with the training data of this run: 2 with train \(101, 102\)"):
        start_run(d, [train], {"epochs": 1}, eval_collection=copy, send=False)
    with pytest.raises(RunError, match=r"2 with train \(9101, 9102\)"):
        start_run(d, [train], {"epochs": 1}, eval_collection=renamed, send=False)
    assert not TrainingRun.objects.exists()

    run = start_run(d, [train], {"epochs": 1}, eval_collection=dev, send=False)  # held out: queued
    assert run.eval_collection == dev
    check_held_out(None, [train])  # no evaluation, nothing to check


def test_the_start_form_refuses_it_by_the_evaluation_field(alice_client: Client, world) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post("/training/runs/new/", {"dictionary": "mini", "collections": ["train"],
                                                         "eval_collection": "train", "train_scope": "auto"})
    assert response.status_code == 400
    assert "train is training data of this run" in response.context["form"].errors["eval_collection"][0]
    assertContains(response, "evaluated on it, a model scores what it memorised", status_code=400)
    assert not TrainingRun.objects.exists()


def test_the_api_and_the_command_refuse_it_with_the_reason(alice, world) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(alice)
    refused = api.post("/api/training-runs/", {"dictionary": "mini", "collections": ["train"], "eval_collection": "train"},
                       format="json")
    assert refused.status_code == 400 and refused.json()["detail"].startswith("train is training data of this run")
    with pytest.raises(CommandError, match="train is training data of this run"):
        call_command("train_run", "--dictionary", "mini", "--collection", "train", "--eval-collection", "train",
                     stdout=StringIO())
    assert not TrainingRun.objects.exists()
    held_out = api.post("/api/training-runs/", {"dictionary": "mini", "collections": ["train"], "eval_collection": "dev"},
                        format="json")
    assert held_out.status_code == 202, held_out.json()


def test_an_index_is_not_evaluated_on_what_trained_it_nor_on_its_base_encoders_data(alice_client: Client, world) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    run, index = _trained_index(d, [train])
    with pytest.raises(RunError, match=f"^train is training data of index {index.pk}"):
        start_evaluation(index, train)
    response = alice_client.post(f"/training/indexes/{index.pk}/evaluate/", {"collection": "train",
                                                                             "next": f"/training/runs/{run.pk}/"},
                                 follow=True)
    assertContains(response, f"train is training data of index {index.pk}")
    assert not Evaluation.objects.exists()
    # The page offers the training collection greyed out, with the reason.
    assertContains(response, '<option value="train" disabled>train (trained on it)</option>', html=True)
    assert start_evaluation(index, dev).state == "queued"

    # A BioSyn encoder started from a base encoder whose pre-training took dev's gold mentions as names.
    hiprbert = TrainingRun.objects.create(dictionary=d, method="hiprbert", params=clean_params({}, "hiprbert"),
                                          state="succeeded")
    hiprbert.collections.set([dev])
    base = EncoderModel.objects.create(name="hier", method="hiprbert", base_model="base", artifact_path="/nowhere")
    TrainingRun.objects.filter(pk=hiprbert.pk).update(encoder=base)
    _, later = _trained_index(d, [train], parent=base)
    assert {c.slug for c in trained_collections(later.encoder)} == {"train", "dev"}
    with pytest.raises(RunError, match=f"^dev is training data of index {later.pk}"):
        start_evaluation(later, dev)


def test_a_run_page_with_nothing_held_out_says_so_instead_of_an_empty_choice(alice_client: Client, world) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    other = _dictionary("other")
    _gold(other, "elsewhere", DEV)  # another dictionary's gold: not offered
    run, index = _trained_index(d, [train, dev])
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assertNotContains(page, 'id="eval-collection"')
    assertNotContains(page, "elsewhere")
    assertContains(page, "No held-out gold collection to evaluate on: this index trained on dev, train")

    run, index = _trained_index(d, [train])
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assertContains(page, '<option value="dev">dev</option>', html=True)
    assertNotContains(page, "elsewhere")
    assertNotContains(page, 'id="no-held-out"')


def test_figures_measured_on_training_data_before_the_check_are_flagged(alice_client: Client, world, bob) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    run, index = _trained_index(d, [train], eval_collection=train,
                                metrics={"acc@1": 1.0, "acc@5": 1.0, "mrr": 1.0, "n": 2.0, "mentions": 2.0})
    Evaluation.objects.create(index_version=index, collection=train, state="succeeded", metrics={"acc@1": 1.0, "mentions": 2})
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assertContains(page, "Evaluated on its own training data: these figures measure memory, not linking.")
    assertContains(page, f"train is training data of run {run.pk}")
    assertContains(page, 'class="stats flagged"')
    assertContains(page, "evaluated on its own training data</span>")  # the evaluation's row
    assertContains(alice_client.get("/training/"), "own training data</span>")

    # Held out, but curators decided mentions of dev before the snapshot: a note, not a refusal.
    decision = Decision.objects.create(document=dev.documents.get(), mention_text="Childhood asthma", user=bob,
                                       action=Decision.Action.ACCEPT,
                                       concept=Concept.objects.get(concept_id="MESH:D001249"), concept_ref="MESH:D001249")
    TrainingExample.objects.create(run=run, text="childhood asthma", concept_id="MESH:D001249", source="curator",
                                   decision=decision)
    TrainingRun.objects.filter(pk=run.pk).update(eval_collection=dev)
    run.refresh_from_db()
    overlap = run_overlap(run)
    assert overlap is not None and not overlap.refused and overlap.curated == 1
    assert overlap.reason.startswith(f"1 training pair of run {run.pk} came from curator decisions on documents of dev")
    assertContains(alice_client.get(f"/training/runs/{run.pk}/"), 'class="overlap-note"')
    flag = index_overlap(index, dev)
    assert flag is not None and flag.label == "partly seen in training"
    assert index_overlap(index, _gold(d, "test", [("301", "Severe hypertension.", [])])) is None


# --- parameters, device, loss, figures ---------------------------------------------------------------------------


def _rows(method: str, params: dict, device: str = "") -> dict[str, tuple[str, bool, str]]:  # type: ignore[type-arg]
    return {r.name: (r.value, r.default, r.note) for r in parameter_rows(method, clean_params(params, method), device)}


def test_parameters_show_the_scopes_defaults_as_values_once_the_device_is_known() -> None:
    cpu = _rows("biosyn", {}, "cpu")
    assert cpu["epochs"] == ("1", True, "the student scope's default")
    assert cpu["lr"] == ("2e-5", True, "the student scope's default")
    assert cpu["train_scope"] == ("student (3 layers: the CPU choice)", True, "auto: chosen for a CPU")
    assert cpu["topk"] == ("20", True, "") and cpu["pretrain_max_pairs"][0] == "20,000"
    gpu = _rows("biosyn", {"topk": 10, "epochs": 3}, "cuda")
    assert gpu["epochs"] == ("3", False, "") and gpu["lr"] == ("1e-5", True, "the full scope's default")
    assert gpu["topk"] == ("10", False, "")
    queued = _rows("biosyn", {})
    assert queued["train_scope"] == ("auto: full on a GPU, student on a CPU", True, "")
    assert queued["epochs"] == ("the scope's default", True, "the scope's default: 10 on a GPU (full), 1 on a CPU (student)")
    assert queued["max_queries"][0] == "all" and "step_delay_s" not in queued and "method" not in queued
    hier = _rows("hiprbert", {}, "cpu")
    assert hier["max_batches"] == ("1,000", True, "the student scope's default") and hier["batch_size"][0] == "128"
    assert hier["lr"] == ("1e-4", True, "the student scope's default")  # 1,000 steps, not the paper's 120K
    assert _rows("hiprbert", {}, "cuda")["lr"] == ("2e-5", True, "the full scope's default")  # the paper's
    assert _rows("hiprbert", {"lr": 3e-5}, "cpu")["lr"] == ("3e-5", False, "")
    dan = _rows("dan", {"level": 0})
    assert dan["level"][0] == "0 (synonym sets: linking)" and dan["hierarchy"][0] == "the run's dictionary"
    main = [r.label for r in parameter_rows("biosyn", clean_params({}), "cpu") if r.main]
    assert main[:3] == ["Training scope", "Epochs", "Learning rate"]


def test_a_biosyn_run_from_a_hierarchy_base_says_its_synonym_pre_training_was_skipped() -> None:
    rows = {r.name: (r.value, r.default, r.note)
            for r in parameter_rows("biosyn", clean_params({}), "cpu", hierarchy_base=True)}
    assert rows["skip_pretrain"] == ("skipped", True, "the base encoder comes from hierarchy pre-training")
    assert rows["pretrain_epochs"] == ("—", True, "not used: synonym pre-training is skipped")
    assert rows["pretrain_max_pairs"][0] == "—"
    assert _rows("biosyn", {}, "cpu")["skip_pretrain"][0] == "yes, before BioSyn"  # from the default base model


def test_the_run_page_shows_a_parameter_table_the_device_and_one_mentions_card(alice_client: Client, world) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    run, _ = _trained_index(d, [train], eval_collection=dev,
                            metrics={"acc@1": 0.9, "acc@5": 0.95, "mrr": 0.92, "n": 200.0, "mentions": 200.0})
    page = alice_client.get(f"/training/runs/{run.pk}/")
    html = page.content.decode()
    assert "&#x27;amp&#x27;" not in html and "{'" not in html  # no raw dict
    assertContains(page, '<tr data-param="epochs"><td>Epochs</td><td class="value">1 <span class="badge">default</span></td>'
                         '<td class="note">the student scope&#x27;s default</td></tr>', html=True)
    assertContains(page, "Trained on the CPU of box.")
    cards = re.findall(r'<div class="stat[^"]*"><dt>([^<]+)</dt><dd>([^<]+)</dd>', html)
    assert cards == [("Acc@1", "0.900"), ("Acc@5", "0.950"), ("MRR", "0.920"), ("Mentions", "200")]
    assertNotContains(page, "own training data")


def test_a_queued_run_says_where_it_will_train(alice_client: Client, world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import socket

    from webapp.training import workers

    d, train, dev = world
    here = socket.gethostname()
    response = alice_client.post("/training/runs/new/", {"dictionary": "mini", "collections": ["train"],
                                                         "eval_collection": "dev", "train_scope": "auto"}, follow=True)
    run = TrainingRun.objects.get()
    assert run.params["epochs"] == 0 and run.params["lr"] == 0.0  # empty fields: the scope's defaults
    assertContains(response, f"Training run {run.pk} queued.")
    assertNotContains(response, "queued on the gpu queue")

    def workers_are(names: list[str] | None) -> str:
        monkeypatch.setattr(workers, "_queue_workers", lambda queue: names)
        return alice_client.get(f"/training/runs/{run.pk}/").content.decode()

    monkeypatch.setattr(workers, "local_cuda", lambda: False)
    page = workers_are([f"worker@{here}"])
    assert (f"Queued for a worker of the gpu queue: worker@{here} on this machine takes it. This machine has no GPU "
            "(CUDA), so the run will train on the CPU.") in page
    # Expected to train on the CPU: the parameters show the student's defaults already.
    assert "the student scope&#x27;s default" in page and "No training steps yet" in page
    assert "Recorded when a worker starts the run" in page
    assert "no worker takes that queue now, so the run waits" in workers_are([])
    TrainingRun.objects.create(dictionary=d, params=clean_params({}), state="succeeded", device="cuda:0", worker="gpu-box")
    page = workers_are(["gpu@gpu-box"])
    assert "gpu@gpu-box (its last run trained on a GPU); the first free one takes it." in page
    assert "10 on a GPU (full), 1 on a CPU (student)" in page  # which scope is not known yet
    assert "the device is shown here once a worker starts it" in workers_are(None)

    TrainingRun.objects.filter(pk=run.pk).update(state="running", device="cpu", worker="box", phase="biosyn")
    page = workers_are([])
    assert "Trains on the CPU of box." in page and "Queued for" not in page


def test_the_loss_chart_starts_with_the_first_report(alice_client: Client, world) -> None:  # type: ignore[no-untyped-def]
    d, train, dev = world
    run = start_run(d, [train], {"epochs": 1}, send=False)
    TrainingRun.objects.filter(pk=run.pk).update(state="running", device="cpu", worker="box", phase="biosyn")
    assertContains(alice_client.get(f"/training/runs/{run.pk}/"), "No training steps yet: the loss curve starts with the first one.")
    TrainingRun.objects.filter(pk=run.pk).update(loss_history=[{"phase": "biosyn", "step": 1, "loss": 2.5}])
    page = alice_client.get(f"/training/runs/{run.pk}/")
    html = page.content.decode()
    assert html.count('<circle class="dot"') == 1 and "<polyline" not in html
    assertContains(page, "biosyn loss over 1 report: 2.5000 → 2.5000")
    TrainingRun.objects.filter(pk=run.pk).update(loss_history=[
        {"phase": "synonym-pretrain", "step": s, "loss": 4.0 - s} for s in (1, 2, 3)] + [
        {"phase": "biosyn", "step": s, "loss": 3.0 / s} for s in (1, 2)])
    page = alice_client.get(f"/training/runs/{run.pk}/")
    assertContains(page, "<polyline")
    assertContains(page, "biosyn loss over 2 reports: 3.0000 → 1.5000 (min 1.5000, max 3.0000); before it, "
                         "synonym-pretrain: 3.0000 → 1.0000 over 3 reports.")
    assertContains(page, ">step 2</text>")


# --- the start form -------------------------------------------------------------------------------------------


def test_the_start_form_chooses_single_choices_and_shows_defaults_as_values(alice_client: Client, world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from webapp.training import workers

    monkeypatch.setattr(workers, "_queue_workers", lambda queue: [])
    page = alice_client.get("/training/runs/new/")
    html = page.content.decode()
    assert "---------" not in html
    dictionary = re.search(r'<select name="dictionary".*?</select>', html, re.S)
    assert dictionary and re.findall(r"<option[^>]*>[^<]*</option>", dictionary.group()) == [
        '<option value="mini" selected>Mini</option>']
    assertContains(page, '<option value="" selected>none: evaluate the index later</option>', html=True)
    assert re.search(r'<input type="number" name="epochs" placeholder="10 on a GPU, 1 on a CPU"[^>]*>', html)
    assert re.search(r'<input type="number" name="lr" placeholder="1e-5 on a GPU, 2e-5 on a CPU"[^>]*>', html)
    assert 'name="epochs" value=' not in html and 'name="lr" value=' not in html
    assert re.search(r'<input type="number" name="max_queries" placeholder="all"', html)
    # Every field says what it is for.
    from webapp.training.run_form import StartRunForm

    assert [name for name, field in StartRunForm().fields.items() if not field.help_text] == []
    assertContains(page, "no worker takes that queue now")
    # A second dictionary: now there is a choice to make.
    _dictionary("other")
    assertContains(alice_client.get("/training/runs/new/"), '<option value="" selected>Choose a dictionary</option>', html=True)
