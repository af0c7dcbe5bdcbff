"""Word-vector training runs: fastText makes word vectors from the collections' documents and the dictionary's
names and definitions; BNE and DAN runs start from them (or train fastText first) and make linkers that are
promoted and serve the candidate panel like BioSyn's. The form, the API and train_run take the new methods,
and refuse what does not fit, DAN above level 0 on a dictionary without hierarchy by name."""

from __future__ import annotations

import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.integration.test_training_runs import _wait, training_worker  # noqa: F401 (a fixture)
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.execution import run_training
from webapp.training.models import TrainingRun, WordVectorModel
from webapp.training.params import clean_params
from webapp.training.runs import start_run
from webapp.training.word_vector_inputs import fasttext_inputs, run_texts
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, Name

# id: (preferred name, synonyms, definition, parent)
CONCEPTS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "D:0": ("Disease", ("disorder",), "", ""),
    "D:1": ("Lung disease", ("pulmonary disease",), "A disease of the lungs.", "D:0"),
    "D:11": ("Asthma", ("bronchial asthma", "asthmatic airways"), "Chronic inflammation of the airways with wheezing.", "D:1"),
    "D:12": ("Pneumonia", ("lung infection",), "Infection that inflames the air sacs of the lungs.", "D:1"),
    "D:2": ("Heart disease", ("cardiac disease",), "A disease of the heart.", "D:0"),
    "D:21": ("Myocardial infarction", ("heart attack", "cardiac infarction"), "Death of heart muscle from lost blood supply.", "D:2"),
    "D:22": ("Heart failure", ("cardiac failure",), "The heart pumps too little blood.", "D:2"),
    "D:3": ("Metabolic disease", ("metabolism disorder",), "", "D:0"),
    "D:31": ("Type 2 diabetes", ("adult onset diabetes", "diabetes mellitus type 2"), "High blood sugar from insulin resistance.", "D:3"),
    "D:32": ("Obesity", ("adiposity",), "Excess body fat.", "D:3"),
}
DOCS = [
    ("1", "Patients with bronchial asthma and a lung infection were enrolled.", [("bronchial asthma", "D:11"), ("lung infection", "D:12")]),
    ("2", "A heart attack followed the cardiac failure in two patients.", [("heart attack", "D:21"), ("cardiac failure", "D:22")]),
    ("3", "Adult onset diabetes and adiposity were common among them.", [("Adult onset diabetes", "D:31"), ("adiposity", "D:32")]),
    ("4", "Wheezing asthma and pneumonia of the lungs were treated.", [("Wheezing asthma", "D:11"), ("pneumonia", "D:12")]),
    ("5", "The cardiac infarction and heart failure were fatal.", [("cardiac infarction", "D:21"), ("heart failure", "D:22")]),
    ("6", "Obesity and type 2 diabetes go together.", [("Obesity", "D:32"), ("type 2 diabetes", "D:31")]),
]
# Held out of training: what BNE runs are evaluated on (a training collection is refused).
DEV_DOCS = [("7", "Pulmonary disease and a cardiac disease were seen.", [("Pulmonary disease", "D:1"), ("cardiac disease", "D:2")])]
ABSTRACTS = ["Airway inflammation and wheezing in asthma.", "Infarction of the heart muscle after a blocked artery.",
             "Insulin resistance and high blood sugar in diabetes."]
# As small as a run can be: 16 dimensions, two epochs (fastText and the encoders).
TINY_FASTTEXT = {"method": "fasttext", "dim": 16, "epochs": 2}
TINY_BNE = {"method": "bne", "epochs": 2, "patience": 1, "batch_size": 8, "fasttext_dim": 16, "fasttext_epochs": 2}
TINY_DAN = {"method": "dan", "max_epochs": 2, "patience": 1, "batch_size": 8, "fasttext_dim": 16, "fasttext_epochs": 2,
            "max_minutes": 2, "validation_names": 4}


def _dictionary(slug: str = "fast", edges: bool = True) -> Dictionary:
    dictionary = Dictionary.objects.create(slug=slug, title=slug.title())
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="obo", checksum=slug * 8)
    concepts = {}
    for cid, (preferred, synonyms, definition, _) in CONCEPTS.items():
        concepts[cid] = Concept.objects.create(version=version, concept_id=cid, preferred_name=preferred, definition=definition)
        for i, text in enumerate((preferred, *synonyms)):
            Name.objects.create(concept=concepts[cid], text=text, normalized=text.lower(), is_preferred=i == 0)
    if edges:
        HierarchyEdge.objects.bulk_create([HierarchyEdge(version=version, child=concepts[cid], parent=concepts[parent])
                                           for cid, (*_, parent) in CONCEPTS.items() if parent])
    return dictionary


def _gold(dictionary: Dictionary, slug: str = "fast-gold", docs: list[tuple[str, str, list[tuple[str, str]]]] = DOCS) -> Collection:
    collection = Collection.objects.create(slug=slug, title="Gold", dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, cid in mentions:
            start = text.index(mention_text)
            mention = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text,
                                             mention_type="Disease")
            Link.objects.create(mention=mention, concept=Concept.objects.get(version__dictionary=dictionary, concept_id=cid),
                                concept_ref=cid, origin=Link.Origin.GOLD)
    return collection


def _abstracts() -> Collection:
    """Documents without any annotation: text for fastText, nothing for BioSyn."""
    collection = Collection.objects.create(slug="abstracts", title="Abstracts")
    for i, text in enumerate(ABSTRACTS):
        Document.objects.create(collection=collection, external_id=f"a{i}", text=text)
    return collection


# --- without a worker ------------------------------------------------------------------------------------


def test_the_params_of_the_word_vector_methods_are_checked() -> None:
    assert clean_params({}, "fasttext") == {"method": "fasttext", "dim": 200, "epochs": 10, "window": 6, "min_count": 2,
                                                  "include_names": True, "include_definitions": True}
    bne = clean_params({"max_minutes": 0, "objectives": ["syn", "ctx"]}, "bne")
    assert (bne["max_minutes"], bne["objectives"], bne["epochs"], bne["patience"]) == (None, ["syn", "ctx"], 30, 3)
    dan = clean_params({"level": 2}, "dan")
    assert (dan["level"], dan["hierarchy"], dan["max_epochs"], dan["patience"], dan["max_minutes"]) == (2, 0, 50, 10, 30.0)
    for method, params, message in [
        ("fasttext", {"dim": 0}, "dim must be between 1 and 1000"),
        ("fasttext", {"epochs": 2.5}, "epochs must be a whole number"),
        ("fasttext", {"objectives": ["syn"]}, "unknown training parameter 'objectives' for fasttext"),
        ("bne", {"objectives": ["syn", "wiki"]}, r"BNE objectives must be a non-empty subset of \('syn', 'def', 'ctx'\)"),
        ("bne", {"objectives": []}, "BNE objectives must be a non-empty subset"),
        ("bne", {"patience": 0}, "patience must be between 1 and"),
        ("bne", {"max_minutes": -1}, "max_minutes must be a number of minutes"),
        ("bne", {"level": 1}, "unknown training parameter 'level' for bne"),
        ("dan", {"level": -1}, "level must not be negative"),
        ("dan", {"top": 7}, "top must be a concept id"),
        ("dan", {"hierarchy": "medic"}, "hierarchy must be a number"),
        ("dan", {"lr": float("nan")}, "lr must be a finite number"),
    ]:
        with pytest.raises(RunError, match=message):
            clean_params(params, method)


@pytest.mark.django_db
def test_fasttext_trains_on_the_documents_and_the_dictionarys_definitions_and_names(tmp_path: Path) -> None:
    dictionary = _dictionary()
    run = start_run(dictionary, [_gold(dictionary), _abstracts()], TINY_FASTTEXT, send=False)
    texts, counts = run_texts(run, include_definitions=True)
    assert counts == {"documents": 9, "definitions": 8}
    assert DOCS[0][1] in texts and ABSTRACTS[0] in texts and "Excess body fat." in texts
    inputs = fasttext_inputs(run, tmp_path / "out")
    assert len(inputs.texts) == 17 and "bronchial asthma" in inputs.table.raw_names and inputs.pairs == ()
    assert run_texts(run, include_definitions=False)[1] == {"documents": 9, "definitions": 0}
    # No collection is needed: the dictionary's names and definitions are text enough.
    alone = start_run(dictionary, [], {"method": "fasttext", "include_names": False}, send=False)
    assert run_texts(alone, include_definitions=True)[1] == {"documents": 0, "definitions": 8}
    with pytest.raises(RunError, match="nothing to evaluate"):
        start_run(dictionary, [], {"method": "fasttext"}, eval_collection=Collection.objects.get(slug="fast-gold"), send=False)


@pytest.mark.django_db
def test_the_start_form_shows_the_chosen_methods_fields_and_queues_each(alice_client) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    gold, abstracts = _gold(dictionary), _abstracts()
    dev = _gold(dictionary, "fast-dev", DEV_DOCS)
    page = alice_client.get("/training/runs/new/?method=fasttext").content.decode()
    assert 'value="fasttext" id="id_method_3" checked' in page
    for name in ("text_collections", "include_names", "include_definitions", "vector_dim", "vector_epochs", "word_vectors",
                 "bne_epochs", "objectives", "level", "hierarchy", "dan_epochs"):
        assert f'name="{name}"' in page
    assert 'data-methods="fasttext bne dan"' in page and 'data-methods="bne dan"' in page
    assert '<option value="" selected>none: train fastText on the run&#x27;s texts first</option>' in page

    fasttext = alice_client.post("/training/runs/new/", {
        "method": "fasttext", "dictionary": "fast", "text_collections": ["abstracts"], "include_definitions": "on",
        "vector_dim": 16, "vector_epochs": 2, "collections": ["fast-gold"], "eval_collection": "fast-gold"})
    assert fasttext.status_code == 302, fasttext.context["form"].errors
    run = TrainingRun.objects.get()
    assert (run.method, list(run.collections.all()), run.eval_collection) == ("fasttext", [abstracts], None)
    assert (run.params["dim"], run.params["epochs"], run.params["include_names"], run.params["include_definitions"]) == (16, 2, False, True)
    nothing = alice_client.post("/training/runs/new/", {"method": "fasttext", "dictionary": "fast"})
    assert nothing.status_code == 400 and "Choose documents to train on" in nothing.context["form"].errors["text_collections"][0]

    bne = alice_client.post("/training/runs/new/", {
        "method": "bne", "dictionary": "fast", "collections": ["fast-gold"], "eval_collection": "fast-dev",
        "bne_epochs": 2, "bne_patience": 1, "objectives": ["syn", "def"], "vector_dim": 16, "vector_epochs": 2,
        "text_collections": ["abstracts"]})
    assert bne.status_code == 302, bne.context["form"].errors
    run = TrainingRun.objects.get(method="bne")
    assert (run.params["epochs"], run.params["patience"], run.params["objectives"], run.params["fasttext_dim"]) == (2, 1, ["syn", "def"], 16)
    assert list(run.collections.all()) == [gold] and run.eval_collection == dev and run.word_vectors is None
    assert run.params["include_definitions"] is False  # the box was not ticked
    none_ticked = alice_client.post("/training/runs/new/", {"method": "bne", "dictionary": "fast", "collections": ["fast-gold"]})
    assert none_ticked.status_code == 400 and "Tick at least one objective" in none_ticked.context["form"].errors["objectives"][0]
    no_gold = alice_client.post("/training/runs/new/", {"method": "dan", "dictionary": "fast", "objectives": ["syn"]})
    assert no_gold.status_code == 400 and no_gold.context["form"].errors["collections"]

    dan = alice_client.post("/training/runs/new/", {"method": "dan", "dictionary": "fast", "collections": ["fast-gold"],
                                                    "level": 1, "dan_epochs": 3, "dan_max_minutes": 0})
    assert dan.status_code == 302, dan.context["form"].errors
    run = TrainingRun.objects.get(method="dan")
    assert (run.params["level"], run.params["hierarchy"], run.params["max_epochs"], run.params["max_minutes"]) == (1, dictionary.pk, 3, 0.0)
    detail = alice_client.get(f"/training/runs/{run.pk}/").content.decode()
    assert "the ancestors at level 1 of the hierarchy of Fast" in detail and "fastText word vectors trained first" in detail


@pytest.mark.django_db
def test_dan_above_level_0_is_refused_on_a_dictionary_without_hierarchy_naming_it(alice, alice_client) -> None:  # type: ignore[no-untyped-def]
    flat, tree = _dictionary("flat", edges=False), _dictionary("tree")
    gold = _gold(flat, "flat-gold")
    message = "dictionary 'flat' has no hierarchy (no parent links in release 1)"
    form = alice_client.post("/training/runs/new/", {"method": "dan", "dictionary": "flat", "collections": ["flat-gold"], "level": 1})
    assert form.status_code == 400 and form.context["form"].errors["hierarchy"][0].startswith(message)
    assert "dictionary &#x27;flat&#x27; has no hierarchy" in form.content.decode()
    chosen = alice_client.post("/training/runs/new/", {"method": "dan", "dictionary": "tree", "collections": ["flat-gold"],
                                                       "level": 2, "hierarchy": "flat"})
    assert chosen.status_code == 400 and chosen.context["form"].errors["hierarchy"][0].startswith(message)

    api = APIClient()
    api.force_authenticate(alice)
    refused = api.post("/api/training-runs/", {"dictionary": "flat", "collections": ["flat-gold"], "method": "dan",
                                               "params": {"level": 1}}, format="json")
    assert refused.status_code == 400 and refused.json()["detail"].startswith(message)
    other = api.post("/api/training-runs/", {"dictionary": "tree", "collections": ["flat-gold"], "method": "dan",
                                             "params": {"level": 1, "hierarchy": flat.pk}}, format="json")
    assert other.status_code == 400 and other.json()["detail"].startswith(message)
    with pytest.raises(RunError, match="'flat' has no hierarchy"):
        start_run(flat, [gold], {"method": "dan", "level": 3}, send=False)
    assert not TrainingRun.objects.exists()

    # Level 0 (synonym sets) needs no hierarchy; level 1 over the flat dictionary's names with tree's hierarchy does.
    ok = api.post("/api/training-runs/", {"dictionary": "flat", "collections": ["flat-gold"], "method": "dan"}, format="json")
    assert ok.status_code == 202 and ok.json()["params"]["level"] == 0
    over = api.post("/api/training-runs/", {"dictionary": "flat", "collections": ["flat-gold"], "method": "dan",
                                            "params": {"level": 1, "hierarchy": tree.pk}}, format="json")
    assert over.status_code == 202 and over.json()["params"]["hierarchy"] == tree.pk


@pytest.mark.django_db
def test_the_api_takes_the_new_methods_and_refuses_what_does_not_fit(alice, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dictionary = _dictionary()
    _gold(dictionary), _abstracts()
    api = APIClient()
    api.force_authenticate(alice)
    base = {"dictionary": "fast", "collections": ["fast-gold"]}
    for body, field, message in [
        (base | {"method": "fasttext", "eval_collection": "fast-gold"}, "detail", "nothing to evaluate"),
        (base | {"method": "bne", "word_vectors": "nope"}, "word_vectors", "no word-vector model named 'nope'"),
        (base | {"method": "biosyn", "params": {"dim": 3}}, "detail", "unknown training parameter 'dim' for biosyn"),
        (base | {"method": "bne", "params": {"objectives": "syn"}}, "detail", "objectives must be a list"),
        (base | {"method": "dan", "base_model": str(tmp_path)}, "detail", "DAN runs on word vectors: it takes no base encoder"),
        ({"dictionary": "fast", "method": "bne"}, "detail", "choose at least one gold collection"),
        ({"dictionary": "fast", "method": "fasttext", "params": {"method": "bne"}}, "detail", "params say method 'bne'"),
    ]:
        response = api.post("/api/training-runs/", body, format="json")
        assert response.status_code == 400, (body, response.json())
        got = response.json()[field]
        assert message in (got if isinstance(got, str) else got[0]), (body, got)
    assert not TrainingRun.objects.exists()
    queued = api.post("/api/training-runs/", {"dictionary": "fast", "collections": ["abstracts"], "method": "fasttext",
                                              "params": {"dim": 16}}, format="json")
    assert queued.status_code == 202 and queued.json()["method"] == "fasttext" and queued.json()["params"]["dim"] == 16
    assert queued.json()["trained_word_vectors"] is None and queued.json()["word_vectors"] is None


@pytest.mark.slow
@pytest.mark.django_db
def test_train_run_inline_makes_word_vectors_listed_on_the_models_page(settings, tmp_path: Path, alice_client) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    _abstracts()
    out = StringIO()
    call_command("train_run", "--dictionary", "fast", "--collection", "abstracts", "--method", "fasttext",
                 "--params", '{"dim": 16, "epochs": 2}', "--inline", stdout=out)
    run = TrainingRun.objects.get()
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}"
    vectors = WordVectorModel.objects.get()
    assert f"succeeded: word vectors fasttext-run-{run.pk} ({vectors.words} words of dimension 16" in out.getvalue()
    assert (vectors.source, vectors.dim, vectors.run, vectors.dictionary, vectors.subwords) == ("trained", 16, run, dictionary, True)
    assert 0.5 < vectors.name_coverage <= 1.0 and run.metrics == {"name_coverage": vectors.name_coverage}
    assert run.encoder_id is None and run.index_version_id is None and not EncoderModel.objects.exists()
    # Progress: the word-vector phase's epochs, as fastText reports them.
    assert (run.epoch, run.epochs, run.fraction) == (2, 2, 1.0)
    assert "word-vectors epoch 2/2" in run.log_tail and "texts: 3 documents, 8 definitions, and the dictionary names" in run.log_tail

    detail = alice_client.get(f"/training/runs/{run.pk}/").content.decode()
    assert f"Word vectors <a class=\"mono\" href=\"/training/models/#vectors-fasttext-run-{run.pk}\">" in detail
    assert "Start a BNE run from them" in detail and "Snapshot" not in detail
    models = alice_client.get("/training/models/").content.decode()
    assert f'id="vectors-fasttext-run-{run.pk}"' in models and f'trained by <a href="/training/runs/{run.pk}/">run #{run.pk}</a>' in models
    assert alice_client.get("/training/").content.decode().count('href="/training/models/#word-vectors"') == 1


# --- through a real worker -------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_word_vectors_then_a_bne_linker_that_serves_the_candidate_panel(  # type: ignore[no-untyped-def]
    training_worker, django_user_model, client, settings  # noqa: F811
) -> None:
    from django.contrib.auth.models import Group

    from webapp.linking.registry import forget_all, get_active_linker
    from webapp.training.services import promote_index

    settings.TASK_QUEUE_OVERRIDE = training_worker.queue  # the re-linking a promotion queues goes to this worker
    admin = django_user_model.objects.create_user(username="ada", password="x")
    for role in ("admin", "curator"):
        admin.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(admin)
    dictionary = _dictionary()
    gold, abstracts = _gold(dictionary), _abstracts()
    _gold(dictionary, "fast-dev", DEV_DOCS)

    # 1. fastText on the documents of both collections and the dictionary's names and definitions.
    run = start_run(dictionary, [gold, abstracts], TINY_FASTTEXT, user=admin, queue=training_worker.queue)
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=240)
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    vectors = WordVectorModel.objects.get(run=run)
    assert vectors.dim == 16 and vectors.words > 20 and (run.epoch, run.epochs) == (2, 2)

    # 2. BNE from those word vectors, through the API, evaluated on a held-out gold collection.
    api = APIClient()
    api.force_authenticate(admin)
    started = api.post("/api/training-runs/", {"dictionary": "fast", "collections": ["fast-gold"], "eval_collection": "fast-dev",
                                               "method": "bne", "word_vectors": vectors.name,
                                               "params": TINY_BNE | {"method": "bne"}}, format="json")
    assert started.status_code == 202, started.json()
    assert started.json()["word_vectors"] == vectors.name
    bne = _wait(started.json()["id"], ("succeeded", "failed", "cancelled"), timeout=300)
    assert bne.state == TrainingRun.State.SUCCEEDED, f"{bne.error}\n{bne.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert f"starts from word vectors {vectors.name}" in bne.log_tail
    assert {p["phase"] for p in bne.loss_history} <= {"bne"} and "acc@1" in bne.metrics
    encoder = EncoderModel.objects.get(pk=bne.encoder_id)
    assert (encoder.method, encoder.kind, encoder.kind_label) == ("bne", "bne", "BNE")
    assert encoder.config["word_vectors"]["dim"] == 16 and "history" not in encoder.config
    index = IndexVersion.objects.get(pk=bne.index_version_id)
    assert index.state == IndexVersion.State.READY and index.encoder == encoder and index.name_count >= 23

    # 3. Promoted, it serves the candidate panel: a mention's candidates come from the BNE linker.
    forget_all()
    promote_index(index.pk)
    active = get_active_linker("fast")
    assert active is not None and active.index_version_id == index.pk and active.linker.encoder.kind == "bne"
    mention = Mention.objects.get(text="heart attack")
    panel = client.get(f"/curate/mentions/{mention.pk}/panel/")
    assert panel.status_code == 200
    body = panel.content.decode()
    assert "D:21" in body and "Myocardial infarction" in body and index.label in body
    models = client.get("/training/models/").content.decode()
    assert f"bne-run-{bne.pk}" in models and '<span class="badge">BNE</span>' in models
    assert client.get(f"/training/runs/{bne.pk}/").content.decode().count("(BNE), index") == 1

    # 4. DAN (level 0) without word vectors: fastText is trained on the gold documents first.
    dan = start_run(dictionary, [gold], TINY_DAN, user=admin, queue=training_worker.queue)
    deadline, phases = time.monotonic() + 300, set()
    while time.monotonic() < deadline:
        current = TrainingRun.objects.get(pk=dan.pk)
        phases.add(current.phase)
        if current.is_finished:
            break
        time.sleep(0.05)
    dan = _wait(dan.pk, ("succeeded", "failed", "cancelled"), timeout=10)
    assert dan.state == TrainingRun.State.SUCCEEDED, f"{dan.error}\n{dan.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert "fastText trained first on 6 documents and 8 definitions" in dan.log_tail and "word-vectors epoch 2/2" in dan.log_tail
    # A tiny run can pass its training phases between two polls (a CI run on 2026-11-28 saw only index and done, and
    # its loss history is empty): the log's "word-vectors epoch" line, asserted above, shows that phase ran.
    assert "word-vectors" in phases or "dan" in phases or "word-vectors epoch" in dan.log_tail
    trained = EncoderModel.objects.get(pk=dan.encoder_id)
    assert trained.kind == "dan" and trained.base_model == "fastText on the run's texts" and dan.word_vectors is None
    assert IndexVersion.objects.get(pk=dan.index_version_id).state == IndexVersion.State.READY
    forget_all()


@pytest.mark.slow
@pytest.mark.django_db
def test_an_index_build_loads_a_bne_encoder_by_its_kind(settings, tmp_path: Path, alice_client) -> None:  # type: ignore[no-untyped-def]
    """The models page's and the API's index builds read the encoder's kind (not a transformer here)."""
    from webapp.training.services import build_index, queue_index_build

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    gold = _gold(dictionary)
    run = start_run(dictionary, [gold], TINY_BNE | {"epochs": 1}, send=False)
    assert run_training(run.pk) == TrainingRun.State.SUCCEEDED, TrainingRun.objects.get(pk=run.pk).error
    encoder = EncoderModel.objects.get(method="bne")
    page = alice_client.get(f"/training/runs/{run.pk}/").content.decode()
    assert 'id="encoder-scores"' in page and "What the BNE encoder scored on its held-out names" in page
    rebuilt = build_index(queue_index_build(dictionary, encoder))
    assert rebuilt.state == IndexVersion.State.READY and rebuilt.encoder == encoder
    from linker.linker import Linker

    assert Linker.load(rebuilt.artifact_path).encoder.kind == "bne"
