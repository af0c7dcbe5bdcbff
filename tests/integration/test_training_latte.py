"""LATTE training runs: a tiny MEDIC slice with known types and an annotated PubTator file are imported, a
dense index is built and activated, a LATTE run goes through a real worker, its index is promoted, and the
admin sees the latent types; without an active (dense) index a LATTE run is refused, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.integration.conftest import PROJECT_ROOT
from tests.integration.test_training_runs import _wait, training_worker  # noqa: F401 (a fixture)
from webapp.corpus.models import Collection, Mention
from webapp.curation.models import Decision, HardNegative
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.linking.registry import forget_all, get_active_linker
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.training.runs import start_run
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary

MEDIC_HEADER = (
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
)
# name, id, synonyms, slim mappings (the known types)
CONCEPTS = [
    ("Breast Neoplasms", "MESH:D001943", "breast cancer|breast tumor|mammary carcinoma", "Neoplasm"),
    ("Ovarian Neoplasms", "MESH:D010051", "ovarian cancer|ovary tumour", "Neoplasm"),
    ("Colorectal Neoplasms", "MESH:D015179", "colorectal cancer|colorectal carcinoma", "Neoplasm"),
    ("Multiple Myeloma", "MESH:D009101", "myeloma|plasma cell myeloma", "Neoplasm"),
    ("Diabetes Mellitus", "MESH:D003920", "diabetes|DM", "Metabolic disease"),
    ("Diabetes Mellitus, Type 2", "MESH:D003924", "type 2 diabetes|NIDDM|adult onset diabetes", "Metabolic disease"),
    ("Ataxia Telangiectasia", "MESH:D001260", "Louis-Bar syndrome|AT", "Nervous system disease"),
    ("Huntington Disease", "MESH:D006816", "Huntington chorea|huntingtons disease", "Nervous system disease"),
]
# (sentence, mention, concept): "AT" and "DM" are resolved by their context only.
SENTENCES = [
    ("Patients with {} developed tumours of the breast.", "breast cancer", "MESH:D001943"),
    ("The {} was treated with chemotherapy of the ovary.", "ovarian cancer", "MESH:D010051"),
    ("Insulin resistance and {} raised glucose.", "type 2 diabetes", "MESH:D003924"),
    ("Children with {} showed ataxia and telangiectasia.", "AT", "MESH:D001260"),
    ("High glucose and {} needed insulin.", "DM", "MESH:D003920"),
    ("Chorea in {} progressed.", "Huntington disease", "MESH:D006816"),
    ("Marrow plasma cells in {} were counted.", "myeloma", "MESH:D009101"),
    ("Colon biopsies showed {} in the bowel.", "colorectal cancer", "MESH:D015179"),
]
# Small enough to train on a CPU in seconds (tests/unit/test_rerank.py trains the same sizes).
TINY_LATTE = {"method": "latte", "epochs": 6, "latent_types": 16, "hidden": 16, "batch_size": 8, "lr": 3e-3,
              "min_type_count": 1, "top_k": 5, "folds": 3}
PREFERRED = {name for name, *_ in CONCEPTS}


def _pubtator(n: int, first: int = 0) -> str:
    blocks = []
    for d in range(first, first + n):
        pmid, title = str(9000 + d), f"Report {d}."
        sentences, lines, pos = [], [], len(title) + 1
        for s, (template, mention, cid) in enumerate(SENTENCES):
            if (d + s) % 3 == 0:
                continue
            start = pos + len(template.split("{}")[0])
            lines.append(f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{cid}")
            sentences.append(template.format(mention))
            pos += len(sentences[-1]) + 1
        blocks.append(f"{pmid}|t|{title}\n{pmid}|a|{' '.join(sentences)}\n" + "\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


def _import(tmp: Path) -> tuple[Dictionary, Collection]:
    medic = tmp / "CTD_diseases.tsv"
    medic.write_text(MEDIC_HEADER + "".join(f"{n}\t{i}\t\t\t\t\t\t{syn}\t{slim}\n" for n, i, syn, slim in CONCEPTS))
    call_command("import_dictionary", str(medic), "--slug", "latte-mini", "--title", "LATTE mini")
    corpus = tmp / "corpus.PubTator.txt"
    corpus.write_text(_pubtator(12))
    call_command("import_documents", str(corpus), "--collection", "latte-gold", "--dictionary", "latte-mini")
    return Dictionary.objects.get(slug="latte-mini"), Collection.objects.get(slug="latte-gold")


def _dense_index(dictionary: Dictionary) -> IndexVersion:
    """A zero-shot dense index (MiniLM) of the dictionary's release, as ``build_index --activate`` makes one."""
    from linker.encoders.transformer import default_base_model

    folder = default_base_model().resolve()
    encoder, _ = EncoderModel.objects.get_or_create(
        name="zero-shot-latte-test", defaults={"method": EncoderModel.Method.ZERO_SHOT, "base_model": str(folder),
                                               "artifact_path": str(folder)})
    version = dictionary.latest_version()
    assert version is not None
    return activate_index(build_index(create_index_version(version, encoder)).pk)


def _panel_renders_latent_types() -> bool:
    """The candidate panel's latent-type element (another change of the curation pages); until it is there,
    the test checks the re-ranker the panel would show instead."""
    return "cand-latent" in (PROJECT_ROOT / "templates" / "curation" / "_panel.html").read_text()


@pytest.fixture
def imported(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    yield _import(tmp_path)
    forget_all()


def test_a_latte_run_needs_an_active_dense_index(imported, alice_client, alice) -> None:  # type: ignore[no-untyped-def]
    dictionary, collection = imported
    with pytest.raises(RunError, match="has no active index"):
        start_run(dictionary, [collection], TINY_LATTE, send=False)

    form = alice_client.post("/training/runs/new/", {"method": "latte", "dictionary": dictionary.slug,
                                                     "collections": [collection.slug]})
    assert form.status_code == 400 and b"has no active index" in form.content

    api = APIClient()
    api.force_authenticate(alice)
    response = api.post("/api/training-runs/", {"dictionary": dictionary.slug, "collections": [collection.slug],
                                                "method": "latte"}, format="json")
    assert response.status_code == 400 and "has no active index" in response.json()["detail"]
    in_params = api.post("/api/training-runs/", {"dictionary": dictionary.slug, "collections": [collection.slug],
                                                 "params": {"method": "latte"}}, format="json")
    assert in_params.status_code == 400 and "has no active index" in in_params.json()["detail"]

    activate_index(build_index(create_index_version(dictionary.latest_version(), None)).pk)  # sparse only
    with pytest.raises(RunError, match="is sparse-only"):
        start_run(dictionary, [collection], TINY_LATTE, send=False)
    assert not TrainingRun.objects.exists()

    page = alice_client.get(f"/training/models/{dictionary.slug}/latent-types/")
    assert page.status_code == 200 and b"has no re-ranker" in page.content


def test_latte_params_are_checked_and_biosyn_stays_the_default(imported) -> None:  # type: ignore[no-untyped-def]
    from webapp.training.params import clean_params

    assert clean_params({})["method"] == "biosyn" and clean_params({"method": "latte"})["latent_types"] == 2048
    with pytest.raises(RunError, match="unknown training parameter 'topk' for latte"):
        clean_params({"method": "latte", "topk": 3})
    with pytest.raises(RunError, match="latent_types must be at least 1"):
        clean_params({"latent_types": 0}, "latte")
    with pytest.raises(RunError, match="params say method 'latte' and the request 'biosyn'"):
        clean_params({"method": "latte"}, "biosyn")


def test_the_latent_types_page_is_for_admins(imported, bob_client) -> None:  # type: ignore[no-untyped-def]
    dictionary, _ = imported
    assert bob_client.get(f"/training/models/{dictionary.slug}/latent-types/").status_code == 403
    assert bob_client.get("/training/models/").status_code == 403


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_latte_run_trains_on_a_worker_and_its_promoted_model_shows_latent_types(  # type: ignore[no-untyped-def]
    training_worker, django_user_model, client, tmp_path, settings  # noqa: F811
) -> None:
    from django.contrib.auth.models import Group

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    dictionary, collection = _import(tmp_path)
    base = _dense_index(dictionary)
    # A curator relinked one mention (a hard negative for the concept turned down) before the run.
    admin = django_user_model.objects.create_user(username="ada", password="x")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    mention = Mention.objects.filter(document__collection=collection, text="DM").order_by("pk").first()
    assert mention is not None
    concept = Concept.objects.get(version__dictionary=dictionary, concept_id="MESH:D003920")
    decision = Decision.objects.create(document=mention.document, mention=mention, mention_text="DM", user=admin,
                                       action=Decision.Action.ACCEPT, concept=concept, concept_ref=concept.concept_id)
    HardNegative.objects.create(decision=decision, mention_text="DM",
                                concept=Concept.objects.get(version__dictionary=dictionary, concept_id="MESH:D003924"))

    dev = tmp_path / "dev.PubTator.txt"  # held out of training: a training collection is refused
    dev.write_text(_pubtator(3, first=12))
    call_command("import_documents", str(dev), "--collection", "latte-dev", "--dictionary", "latte-mini")
    run = start_run(dictionary, [collection], TINY_LATTE, eval_collection=Collection.objects.get(slug="latte-dev"), user=admin,
                    queue=training_worker.queue)
    assert run.method == "latte" and run.params["base_index"] == base.pk
    run = _wait(run.pk, ("succeeded", "failed", "cancelled"), timeout=300)
    assert run.state == TrainingRun.State.SUCCEEDED, f"{run.error}\n{run.log_tail}\n{training_worker.log.read_text()[-3000:]}"
    assert run.epoch == run.epochs == 6 and run.step == run.total_steps > 0
    assert {p["phase"] for p in run.loss_history} == {"latte"} and all(p["loss"] >= 0 for p in run.loss_history)
    assert "acc@1" in run.metrics and "rejected concepts" in run.log_tail

    encoder = EncoderModel.objects.get(pk=run.encoder_id)
    assert encoder.method == "latte" and encoder.parent_id == base.encoder_id
    assert encoder.config["known_types"] == 3 and encoder.config["dev"]["mentions"] > 0
    index = IndexVersion.objects.get(pk=run.index_version_id)
    assert index.state == "ready" and index.dictionary_version_id == base.dictionary_version_id
    assert (Path(index.artifact_path) / "rerank" / "latent_types.json").exists()

    client.force_login(admin)
    detail = client.get(f"/training/runs/{run.pk}/")
    assert b"<polyline" in detail.content and b"latte loss" in detail.content
    client.post(f"/training/indexes/{index.pk}/promote/")
    assert IndexVersion.objects.get(pk=index.pk).state == IndexVersion.State.ACTIVE

    active = get_active_linker(dictionary.slug)
    assert active is not None and active.index_version_id == index.pk
    reranker = active.linker.reranker
    assert reranker is not None
    # The held-out fold of this tiny run may keep the retriever's order: the re-ranker then serves its types only.
    assert active.linker.ranked_by == ("retriever" if reranker.keeps_retriever_order else "latte")
    assert sorted(reranker.known_type_labels) == ["Metabolic disease", "Neoplasm", "Nervous system disease"]

    page = client.get(f"/training/models/{dictionary.slug}/latent-types/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="latent-types"' in html
    populated = [t for t in reranker.latent_types if t.count > 0]
    assert f"{len(populated)} of 16 latent types hold dictionary names" in html
    assert any(name in html for name in PREFERRED)  # typical names are the dictionary's names
    assert f'data-latent-type="{populated[0].index}"' in html
    assert ("found no order better than the retriever" in html) == reranker.keeps_retriever_order
    models = client.get("/training/models/").content.decode()
    assert f"/training/models/{dictionary.slug}/latent-types/" in models and "LATTE" in models

    if _panel_renders_latent_types():
        panel = client.get(f"/curate/mentions/{mention.pk}/panel/")
        assert panel.status_code == 200 and "cand-latent" in panel.content.decode()
    forget_all()
