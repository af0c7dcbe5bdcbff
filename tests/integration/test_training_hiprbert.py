"""Hierarchy pre-training (HiPrBERT) runs: a small disease hierarchy is read from the database, a run through a
real worker makes a base encoder (no index), a BioSyn run and an index build start from it; a dictionary
without a hierarchy is refused by the form, the API and (at run time) the linker, each naming it; a cycle in
the hierarchy trains without hanging."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.integration.test_training_runs import TINY, _wait, training_worker  # noqa: F401 (a fixture)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.execution import run_training
from webapp.training.hierarchy_inputs import dictionary_source, hierarchy_inputs
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

# id: (preferred name, synonyms, parents): 31 diseases under one root; lung cancer has two parents.
TREE: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "D:0": ("Disease", ("disorder",), ()),
    "D:1": ("Cancer", ("neoplasm", "tumour"), ("D:0",)),
    "D:11": ("Breast cancer", ("mammary carcinoma", "breast tumour"), ("D:1",)),
    "D:12": ("Ovarian cancer", ("ovary tumour",), ("D:1",)),
    "D:13": ("Colorectal cancer", ("bowel cancer",), ("D:1",)),
    "D:14": ("Lung cancer", ("lung carcinoma",), ("D:1", "D:3")),
    "D:15": ("Skin cancer", ("cutaneous neoplasm",), ("D:1",)),
    "D:2": ("Heart disease", ("cardiac disease", "cardiopathy"), ("D:0",)),
    "D:21": ("Myocardial infarction", ("heart attack",), ("D:2",)),
    "D:22": ("Heart failure", ("cardiac failure",), ("D:2",)),
    "D:23": ("Arrhythmia", ("irregular heartbeat",), ("D:2",)),
    "D:24": ("Cardiomyopathy", ("heart muscle disease",), ("D:2",)),
    "D:25": ("Angina", ("chest pain on exertion",), ("D:2",)),
    "D:3": ("Lung disease", ("pulmonary disease",), ("D:0",)),
    "D:31": ("Asthma", ("bronchial asthma",), ("D:3",)),
    "D:32": ("Pneumonia", ("lung infection",), ("D:3",)),
    "D:33": ("Emphysema", ("pulmonary emphysema",), ("D:3",)),
    "D:34": ("Bronchitis", ("inflamed bronchi",), ("D:3",)),
    "D:35": ("Pulmonary fibrosis", ("lung scarring",), ("D:3",)),
    "D:4": ("Metabolic disease", ("metabolism disorder",), ("D:0",)),
    "D:41": ("Diabetes mellitus", ("diabetes",), ("D:4",)),
    "D:42": ("Type 2 diabetes", ("adult onset diabetes", "NIDDM"), ("D:41",)),
    "D:43": ("Obesity", ("adiposity",), ("D:4",)),
    "D:44": ("Gout", ("hyperuricaemic arthritis",), ("D:4",)),
    "D:45": ("Hypothyroidism", ("underactive thyroid",), ("D:4",)),
    "D:5": ("Nervous system disease", ("neurological disorder",), ("D:0",)),
    "D:51": ("Epilepsy", ("seizure disorder",), ("D:5",)),
    "D:52": ("Migraine", ("migraine headache",), ("D:5",)),
    "D:53": ("Parkinson disease", ("paralysis agitans",), ("D:5",)),
    "D:54": ("Multiple sclerosis", ("disseminated sclerosis",), ("D:5",)),
    "D:55": ("Dementia", ("cognitive decline",), ("D:5",)),
}
# A gold corpus whose mentions add names: "heart trouble" is no synonym of D:2 in the dictionary.
DOCS = [
    ("1", "Heart trouble and wheezy lungs were noted.", [("Heart trouble", "D:2"), ("wheezy lungs", "D:31")]),
    ("2", "She had sugar sickness for years.", [("sugar sickness", "D:41")]),
]
# As small as a run can be: two batches of 16 names, one epoch, the CPU student.
TINY_HIPRBERT = {"method": "hiprbert", "train_scope": "student", "epochs": 1, "max_batches": 2, "batch_size": 16}


def _dictionary(slug: str, tree: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]) -> Dictionary:
    dictionary = Dictionary.objects.create(slug=slug, title=slug.title())
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="obo", checksum=slug * 8)
    concepts = {}
    for cid, (preferred, synonyms, _) in tree.items():
        concepts[cid] = Concept.objects.create(version=version, concept_id=cid, preferred_name=preferred)
        for i, text in enumerate((preferred, *synonyms)):
            Name.objects.create(concept=concepts[cid], text=text, normalized=text.lower(), is_preferred=i == 0)
    HierarchyEdge.objects.bulk_create([
        HierarchyEdge(version=version, child=concepts[cid], parent=concepts[parent])
        for cid, (_, _, parents) in tree.items() for parent in parents
    ])
    return dictionary


def _collection(dictionary: Dictionary) -> Collection:
    collection = Collection.objects.create(slug=f"{dictionary.slug}-gold", title="gold", dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in DOCS:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, cid in mentions:
            start = text.index(mention_text)
            mention = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text)
            Link.objects.create(mention=mention, concept=Concept.objects.get(version__dictionary=dictionary, concept_id=cid),
                                concept_ref=cid, origin=Link.Origin.GOLD)
    return collection


def _flat(slug: str = "flat") -> Dictionary:
    """A dictionary of synonyms only: no parent links."""
    return _dictionary(slug, {cid: (name, syns, ()) for cid, (name, syns, _) in list(TREE.items())[:6]})


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts the test after ``seconds``."""
    def expire(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- without a worker ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_dictionary_becomes_a_hierarchy_source_in_two_queries(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary("tree", TREE)
    version = dictionary.latest_version()
    assert version is not None
    with django_assert_num_queries(2):
        source, _ = dictionary_source(dictionary, version)
    assert source.name == "tree" and len(source.names) == 31 and source.edge_count == 31
    assert source.names["D:42"] == ["type 2 diabetes", "adult onset diabetes", "niddm"]  # preferred first, normalised
    assert source.parents["D:14"] == ("D:1", "D:3")
    assert source.distance("D:11", "D:12") == 1 and source.distance("D:1", "D:11") == 2 and source.distance("D:11", "D:51") == 3


@pytest.mark.django_db
def test_the_gold_mentions_of_the_chosen_collections_become_extra_names(tmp_path: Path) -> None:
    dictionary = _dictionary("tree", TREE)
    collection = _collection(dictionary)
    run = start_run(dictionary, [collection], TINY_HIPRBERT, send=False)
    assert run.params["dictionaries"] == [dictionary.pk] and run.params["max_batches"] == 2
    inputs = hierarchy_inputs(run, tmp_path / "out")
    (source,) = inputs.hierarchies
    assert "heart trouble" in source.names["D:2"] and "sugar sickness" in source.names["D:41"]
    assert inputs.metadata["corpus_names_added"] == {"tree": 3} and inputs.metadata["collections"] == ["tree-gold"]


@pytest.mark.django_db
def test_a_dictionary_without_hierarchy_is_refused_by_the_form_and_the_api_naming_it(alice, alice_client) -> None:  # type: ignore[no-untyped-def]
    flat, tree = _flat(), _dictionary("tree", TREE)
    message = "dictionary &#x27;flat&#x27; has no hierarchy (no parent links in release 1)"
    form = alice_client.post("/training/runs/new/", {"method": "hiprbert", "dictionary": "flat"})
    assert form.status_code == 400 and message.encode() in form.content
    assert "dictionary 'flat' has no hierarchy" in form.context["form"].errors["dictionary"][0]
    extra = alice_client.post("/training/runs/new/", {"method": "hiprbert", "dictionary": "tree", "extra_dictionaries": ["flat"]})
    assert extra.status_code == 400 and "has no hierarchy" in extra.context["form"].errors["extra_dictionaries"][0]

    api = APIClient()
    api.force_authenticate(alice)
    refused = api.post("/api/training-runs/", {"dictionary": "flat", "method": "hiprbert"}, format="json")
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("dictionary 'flat' has no hierarchy (no parent links in release 1)")
    also = api.post("/api/training-runs/", {"dictionary": "tree", "extra_dictionaries": ["flat"], "params": {"method": "hiprbert"}},
                    format="json")
    assert also.status_code == 400 and "'flat' has no hierarchy" in also.json()["detail"]
    with pytest.raises(RunError, match="'flat' has no hierarchy"):
        start_run(flat, [], TINY_HIPRBERT, send=False)
    assert not TrainingRun.objects.exists()

    # Both dictionaries with a hierarchy, no collection: queued (a BioSyn run still needs a collection).
    ok = api.post("/api/training-runs/", {"dictionary": "tree", "method": "hiprbert", "params": {"max_batches": 3}}, format="json")
    assert ok.status_code == 202 and ok.json()["params"]["dictionaries"] == [tree.pk]
    assert api.post("/api/training-runs/", {"dictionary": "tree"}, format="json").status_code == 400


@pytest.mark.django_db
def test_hiprbert_params_are_checked() -> None:
    from webapp.training.params import clean_params

    defaults = clean_params({}, "hiprbert")
    assert (defaults["train_scope"], defaults["max_batches"], defaults["batch_size"], defaults["distances"]) == ("auto", None, None, "hierarchy")
    with pytest.raises(RunError, match="distances must be one of hierarchy, synonym"):
        clean_params({"distances": "tree"}, "hiprbert")
    with pytest.raises(RunError, match="holdout_share must be between 0 and 0.5"):
        clean_params({"holdout_share": 0.9}, "hiprbert")
    with pytest.raises(RunError, match="train_scope must be one of auto, full, student"):
        clean_params({"train_scope": "head"}, "hiprbert")
    with pytest.raises(RunError, match="max_batches must be a whole number"):
        clean_params({"max_batches": 2.5}, "hiprbert")
    with pytest.raises(RunError, match="unknown training parameter 'topk' for hiprbert"):
        clean_params({"topk": 3}, "hiprbert")


@pytest.mark.django_db
def test_the_start_form_offers_the_method_with_the_scope_defaults(alice_client) -> None:  # type: ignore[no-untyped-def]
    _dictionary("tree", TREE)
    _flat()
    page = alice_client.get("/training/runs/new/?method=hiprbert").content.decode()
    assert "Flat (no hierarchy)" in page  # the hint in "More dictionaries"
    assert 'value="hiprbert"' in page and "Hierarchy pre-training (HiPrBERT)" in page
    assert "1000 on a CPU" in page and 'name="holdout_share"' in page and 'name="extra_dictionaries"' in page
    assert 'value="hiprbert" id="id_method_2" checked' in page  # preselected by the query string
    response = alice_client.post("/training/runs/new/", {"method": "hiprbert", "dictionary": "tree", "max_batches": 4,
                                                         "hiprbert_batch_size": 8, "hiprbert_lr": 5e-5, "distances": "synonym",
                                                         "holdout_share": 0.1})
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and run.method == "hiprbert" and run.collections.count() == 0
    assert (run.params["max_batches"], run.params["batch_size"], run.params["lr"], run.params["distances"],
            run.params["holdout_share"]) == (4, 8, 5e-5, "synonym", 0.1)
    refused = alice_client.post("/training/runs/new/", {"method": "hiprbert", "dictionary": "tree", "hiprbert_lr": 0})
    assert refused.status_code == 400 and TrainingRun.objects.count() == 1
    assert "The learning rate must be above 0" in refused.content.decode()


@pytest.mark.django_db
def test_only_a_hiprbert_encoder_with_its_folder_is_a_base_encoder(alice, alice_client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tree = _dictionary("tree", TREE)
    collection = _collection(tree)
    (tmp_path / "base").mkdir()
    base = EncoderModel.objects.create(name="hiprbert-run-7", method="hiprbert", base_model="minilm",
                                       artifact_path=str(tmp_path / "base"), config={"dictionaries": ["tree"]})
    EncoderModel.objects.create(name="biosyn-run-8", method="biosyn", base_model="minilm", artifact_path=str(tmp_path))
    EncoderModel.objects.create(name="hiprbert-run-9", method="hiprbert", base_model="minilm", artifact_path=str(tmp_path / "gone"))
    api = APIClient()
    api.force_authenticate(alice)
    body = {"dictionary": "tree", "collections": [collection.slug], "params": TINY}
    linker = api.post("/api/training-runs/", body | {"base_encoder": "biosyn-run-8"}, format="json")
    assert linker.status_code == 400 and "is a BioSyn (synonym marginalisation), not a base encoder" in linker.json()["base_encoder"][0]
    gone = api.post("/api/training-runs/", body | {"base_encoder": "hiprbert-run-9"}, format="json")
    assert gone.status_code == 400 and "its folder" in gone.json()["base_encoder"][0] and "is gone" in gone.json()["base_encoder"][0]
    both = api.post("/api/training-runs/", body | {"base_encoder": base.name, "base_model": str(tmp_path)}, format="json")
    assert both.status_code == 400 and "not both" in both.json()["detail"]
    ok = api.post("/api/training-runs/", body | {"base_encoder": base.name}, format="json")
    assert ok.status_code == 202 and ok.json()["base_model"] == str(tmp_path / "base")

    page = alice_client.get("/training/runs/new/").content.decode()
    assert "hiprbert-run-7 (tree; " in page and "biosyn-run-8" not in page and "the default base model (" in page
    form = alice_client.post("/training/runs/new/", {"dictionary": "tree", "collections": [collection.slug],
                                                     "base_encoder": base.name, "base_model": str(tmp_path)})
    assert form.status_code == 400 and "not both" in form.context["form"].errors["base_model"][0]

    models = alice_client.get("/training/models/").content.decode()
    assert "hiprbert-run-7" in models and "(missing: it cannot be started from)" in models
    # The run queued from it above is listed under it, with no figures yet.
    started = TrainingRun.objects.get(base_model=str(tmp_path / "base"))
    assert "Runs started from it" in models and f'href="/training/runs/{started.pk}/">run {started.pk}</a>' in models
    TrainingRun.objects.filter(pk=started.pk).update(state="succeeded", metrics={"acc@1": 0.9123, "acc@5": 0.97})
    models = alice_client.get("/training/models/").content.decode()
    assert "<td class=\"num\">0.912</td><td class=\"num\">0.970</td>" in models
    refused = alice_client.post("/training/indexes/build/", {"dictionary": "tree", "encoder": "hiprbert-run-9"})
    assert refused.status_code == 400 and "is gone" in refused.context["build_form"].errors["encoder"][0]
    assert not IndexVersion.objects.exists()
    alice_client.post("/training/indexes/build/", {"dictionary": "tree", "encoder": base.name})
    index = IndexVersion.objects.get()
    assert (index.encoder_id, index.state, index.dictionary_id) == (base.pk, IndexVersion.State.BUILDING, tree.pk)

    # The same build through the API (queued on the gpu queue after commit).
    built = api.post("/api/index-versions/", {"dictionary": "tree", "encoder": base.name}, format="json")
    assert built.status_code == 202 and (built.json()["encoder"], built.json()["state"]) == (base.name, "building")
    assert api.get(f"/api/index-versions/{built.json()['id']}/").json()["label"].startswith("tree@1/hiprbert-run-7/")
    missing = api.post("/api/index-versions/", {"dictionary": "tree", "encoder": "hiprbert-run-9"}, format="json")
    assert missing.status_code == 400 and "is gone" in missing.json()["encoder"][0]


@pytest.mark.django_db
def test_index_versions_and_base_encoders_are_for_admins(bob, bob_client) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(bob)
    assert api.get("/api/index-versions/").status_code == 403
    assert api.post("/api/index-versions/", {"dictionary": "tree"}, format="json").status_code == 403
    assert bob_client.post("/training/indexes/build/", {"dictionary": "tree", "encoder": "x"}).status_code == 403


@pytest.mark.slow
@pytest.mark.django_db
def test_at_run_time_the_linker_refuses_a_dictionary_without_hierarchy(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    tree = _dictionary("tree", TREE)
    run = start_run(tree, [], TINY_HIPRBERT, send=False)
    HierarchyEdge.objects.filter(version__dictionary=tree).delete()  # the edges went between queueing and running
    assert run_training(run.pk) == TrainingRun.State.FAILED
    run.refresh_from_db()
    assert run.error.startswith("NoHierarchyError: dictionary 'tree' has no hierarchy")
    assert run.encoder_id is None and not EncoderModel.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db
def test_a_hierarchy_with_a_cycle_trains_without_hanging(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    cycle = {"C:a": ("Alpha fever", ("a fever",), ("C:b",)), "C:b": ("Beta fever", ("b fever",), ("C:a",)),
             "C:c": ("Gamma fever", ("c fever",), ("C:a",)), "C:d": ("Delta rash", ("d rash",), ("C:c",))}
    dictionary = _dictionary("cycle", cycle)
    run = start_run(dictionary, [], TINY_HIPRBERT | {"batch_size": 8}, send=False)
    started = time.monotonic()
    with _deadline(240):
        state = run_training(run.pk)
    run.refresh_from_db()
    assert state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}"
    assert "cycle 4 concepts, 8 names, 4 parent links" in run.log_tail and time.monotonic() - started < 240
    assert run.encoder is not None and run.encoder.method == "hiprbert" and run.index_version_id is None


# --- through a real worker -------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_hiprbert_run_makes_a_base_encoder_that_biosyn_and_an_index_start_from(  # type: ignore[no-untyped-def]
    training_worker, django_user_model, client, settings  # noqa: F811
) -> None:
    from django.contrib.auth.models import Group

    settings.TASK_QUEUE_OVERRIDE = training_worker.queue  # the index build the page queues goes to this worker
    admin = django_user_model.objects.create_user(username="ada", password="x")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    client.force_login(admin)
    dictionary = _dictionary("tree", TREE)
    collection = _collection(dictionary)

    run = start_run(dictionary, [collection], TINY_HIPRBERT | {"holdout_share": 0.3}, user=admin, queue=training_worker.queue)
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=300)
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert {p["phase"] for p in run.loss_history} == {"hierarchy-pretrain"} and run.step == run.total_steps == 2
    assert run.index_version_id is None and not IndexVersion.objects.exists()
    encoder = EncoderModel.objects.get(pk=run.encoder_id)
    folder = Path(encoder.artifact_path)
    assert encoder.method == "hiprbert" and (folder / "hierarchy.json").exists() and (folder / "encoder.json").exists()
    assert "pretrain" not in encoder.config and encoder.config["sources"][0]["edges"] > 0
    assert encoder.config["corpus_names_added"] == {"tree": 3} and encoder.config["params"]["max_batches"] == 2
    assert "tree/auc_0_3" in run.metrics and 0.0 <= run.metrics["tree/auc_0_3"] <= 1.0

    detail = client.get(f"/training/runs/{run.pk}/").content.decode()
    assert "Pre-trains a base encoder on the hierarchies of Tree" in detail and "no index to promote" in detail
    assert "ROC AUC" in detail and "Parent links" in detail and "Snapshot" not in detail
    models = client.get("/training/models/").content.decode()
    assert encoder.name in models and "Build an index of" in models and "ROC AUC" in models

    # A BioSyn run from the base encoder, through the API's base_encoder choice.
    api = APIClient()
    api.force_authenticate(admin)
    started = api.post("/api/training-runs/", {"dictionary": "tree", "collections": [collection.slug],
                                               "base_encoder": encoder.name, "params": TINY}, format="json")
    assert started.status_code == 202, started.json()
    assert started.json()["base_model"] == str(folder)
    biosyn = _wait(started.json()["id"], ("succeeded", "failed", "cancelled"), timeout=300)
    assert biosyn.state == TrainingRun.State.SUCCEEDED, f"{biosyn.error}\n{biosyn.log_tail}"
    trained = EncoderModel.objects.get(pk=biosyn.encoder_id)
    assert trained.method == "biosyn" and trained.parent_id == encoder.pk and trained.base_model == str(folder)
    assert IndexVersion.objects.get(pk=biosyn.index_version_id).state == IndexVersion.State.READY

    # An index of the dictionary with the base encoder itself, from the models page.
    response = client.post("/training/indexes/build/", {"dictionary": "tree", "encoder": encoder.name})
    assert response.status_code == 302
    index = IndexVersion.objects.get(encoder=encoder)
    deadline = time.monotonic() + 180
    while index.state == IndexVersion.State.BUILDING and time.monotonic() < deadline:
        time.sleep(0.2)
        index.refresh_from_db()
    assert index.state == IndexVersion.State.READY, index.error
    assert index.name_count >= 62 and f"{encoder.name}/index-{index.pk}" in client.get("/training/models/").content.decode()
