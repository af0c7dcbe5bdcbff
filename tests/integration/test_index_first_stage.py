"""The combined linker on the web side: an index of a transformer with a fast DAN first stage, built from the models
page, the API or build_index; it serves the candidate panel and learns curator synonyms once promoted. A first stage
that does not fit (a transformer, one without a transformer to stand in front of, one of another dictionary) is
refused by name and leaves no index version. The models page offers every encoder with its kind and preselects the
dictionary's newest fast encoder as the first stage of a transformer build."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from tests.integration.test_training_runs import training_worker  # noqa: F401 (a fixture)
from tests.integration.test_training_word_vectors import CONCEPTS, _dictionary, _gold
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.models import TrainingRun
from webapp.vocab.models import Dictionary

LAMBDA = 0.7  # the transformer linker's own sparse weight, which the combined index keeps


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny transformer linker (MiniLM's first layer, λ = 0.7) and a DAN encoder over 16-d fastText vectors."""
    import torch

    from linker.config import LinkerConfig
    from linker.data import ConceptRecord, Synonym
    from linker.encoders.dan import DANConfig, DANEncoder
    from linker.encoders.transformer import TransformerEncoder
    from linker.encoders.wordvec import FastTextConfig, WordVectors
    from linker.linker import Linker
    from linker.retrieval import RetrievalConfig

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("encoders")
    records = [ConceptRecord(cid, preferred, tuple(Synonym(s) for s in synonyms))
               for cid, (preferred, synonyms, _, _) in CONCEPTS.items()]
    texts = [r.preferred_name for r in records] + [s.text for r in records for s in r.synonyms]
    vectors = WordVectors.train(texts * 5, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000))
    DANEncoder(vectors, DANConfig(hidden=32)).save(root / "dan")
    config = LinkerConfig(retrieval=RetrievalConfig(sparse_weight=LAMBDA))
    Linker.build(records, TransformerEncoder(layers=(0,)), config).save(root / "biosyn")
    (root / "hiprbert").mkdir()
    (root / "bne").mkdir()  # only its kind is read: a BNE build is refused a first stage before anything loads
    return {"dan": root / "dan", "biosyn": root / "biosyn", "hiprbert": root / "hiprbert", "bne": root / "bne"}


def _encoder(name: str, method: str, folder: Path, dictionary: Dictionary | None = None, age_days: int = 0) -> EncoderModel:
    """An encoder row; with ``dictionary``, the succeeded run that trained it there (how an encoder records one)."""
    encoder = EncoderModel.objects.create(name=name, method=method, base_model="tiny", artifact_path=str(folder))
    if age_days:
        EncoderModel.objects.filter(pk=encoder.pk).update(created_at=timezone.now() - timedelta(days=age_days))
        encoder.refresh_from_db()
    if dictionary is not None:
        TrainingRun.objects.create(dictionary=dictionary, method=method if method != "zero_shot" else "biosyn",
                                   state=TrainingRun.State.SUCCEEDED, encoder=encoder)
    return encoder


def _select(page: str, name: str) -> str:
    match = re.search(rf'<select name="{name}".*?</select>', page, re.S)
    assert match, f"no select {name!r} on the page"
    return match.group(0)


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user)
    return api


# --- without a worker ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_first_stage_that_does_not_fit_is_refused_by_name_and_makes_no_index(alice, alice_client, folders) -> None:  # type: ignore[no-untyped-def]
    fast, other = _dictionary("fast"), _dictionary("other")
    _encoder("biosyn-tiny", "biosyn", folders["biosyn"], fast)
    _encoder("dan-tiny", "dan", folders["dan"], fast)
    _encoder("bne-tiny", "bne", folders["bne"], fast)
    _encoder("dan-other", "dan", folders["dan"], other)
    api = _api(alice)
    cases = [
        ({"encoder": "biosyn-tiny", "first_stage": "biosyn-tiny"}, "--encoder",
         "first stage 'biosyn-tiny' is a Transformer encoder; a first stage is a fast BNE or DAN encoder"),
        ({"first_stage": "dan-tiny"}, "--sparse-only",
         "a first stage stands in front of a transformer encoder, and a sparse-only (tf-idf) index has none: choose a "
         "transformer encoder, or no first stage"),
        ({"encoder": "bne-tiny", "first_stage": "dan-tiny"}, "--encoder",
         "encoder 'bne-tiny' is a BNE encoder, fast already: a BNE linker needs no first stage"),
        ({"encoder": "biosyn-tiny", "first_stage": "dan-other"}, "--encoder",
         "first stage 'dan-other' was trained on dictionary 'other', not 'fast'"),
    ]
    for body, flag, message in cases:
        response = api.post("/api/index-versions/", {"dictionary": "fast", **body}, format="json")
        assert response.status_code == 400, (body, response.json())
        assert response.json()["first_stage"] == [message]

        form = alice_client.post("/training/indexes/build/", {"dictionary": "fast", **body})
        assert form.status_code == 400 and form.context["build_form"].errors["first_stage"] == [message]
        assert message.replace("'", "&#x27;") in form.content.decode()

        args = ["--dictionary", "fast", "--first-stage", body["first_stage"]]
        args += [flag, body["encoder"]] if flag == "--encoder" else [flag]
        with pytest.raises(CommandError, match=re.escape(message)):
            call_command("build_index", *args, stdout=StringIO())
    unknown = api.post("/api/index-versions/", {"dictionary": "fast", "encoder": "biosyn-tiny", "first_stage": "nope"},
                       format="json")
    assert unknown.status_code == 400 and unknown.json()["first_stage"] == ["no encoder model named 'nope'"]
    assert not IndexVersion.objects.exists()

    # What fits is accepted (queued after commit, which this test's transaction never reaches).
    ok = api.post("/api/index-versions/", {"dictionary": "fast", "encoder": "biosyn-tiny", "first_stage": "dan-tiny"},
                  format="json")
    assert ok.status_code == 202, ok.json()
    assert (ok.json()["encoder_kind"], ok.json()["first_stage"], ok.json()["first_stage_kind"]) == ("transformer", "dan-tiny", "dan")
    assert IndexVersion.objects.get().first_stage.name == "dan-tiny"


@pytest.mark.django_db
def test_the_build_form_offers_every_encoder_by_kind_and_preselects_the_newest_first_stage(alice_client, folders) -> None:  # type: ignore[no-untyped-def]
    fast, _ = _dictionary("fast"), _dictionary("plain")
    _encoder("hiprbert-base", "hiprbert", folders["hiprbert"], age_days=5)
    _encoder("dan-older", "dan", folders["dan"], fast, age_days=3)
    _encoder("bne-tiny", "bne", folders["bne"], fast, age_days=2)
    _encoder("biosyn-tiny", "biosyn", folders["biosyn"], fast, age_days=1)
    _encoder("dan-tiny", "dan", folders["dan"], fast)
    day = timezone.now().strftime("%Y-%m-%d")

    page = alice_client.get("/training/models/").content.decode()
    encoders = _select(page, "encoder")
    for label in ("hiprbert-base (Transformer base encoder, ", "biosyn-tiny (Transformer, fast, ", "bne-tiny (BNE, fast, ",
                  f"dan-tiny (DAN, fast, {day})", "none: tf-idf only"):
        assert label in encoders, label
    # The newest transformer of the first dictionary is chosen, with the dictionary's newest fast encoder in front.
    assert '<option value="biosyn-tiny" selected>' in encoders
    first_stage = _select(page, "first_stage")
    assert '<option value="dan-tiny" selected>' in first_stage and "dan-older" in first_stage and "bne-tiny" in first_stage
    assert "biosyn-tiny" not in first_stage and "hiprbert-base" not in first_stage
    assert ("Preselected: the newest DAN encoder of Fast. The transformer then encodes only mentions that are not a "
            "dictionary name; top candidates unchanged.") in page

    # Another choice re-renders the form (htmx): a BNE build takes no first stage, nor does a dictionary without one.
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "index-build"}
    bne = alice_client.get("/training/models/?dictionary=fast&encoder=bne-tiny", **htmx).content.decode()
    assert "<h1>" not in bne and '<option value="bne-tiny" selected>' in bne
    assert '<option value="" selected>none: the transformer encodes every mention</option>' in bne and "Preselected" not in bne
    assert " disabled" in _select(bne, "first_stage") and "Only for a transformer encoder: a BNE linker is fast already." in bne
    plain = alice_client.get("/training/models/?dictionary=plain&encoder=biosyn-tiny", **htmx).content.decode()
    assert '<option value="plain" selected>' in plain and '<option value="" selected>none: the transformer' in plain
    sparse = alice_client.get("/training/models/?dictionary=fast&encoder=", **htmx).content.decode()
    assert '<option value="" selected>none: tf-idf only</option>' in sparse and "Preselected" not in sparse
    assert "a tf-idf-only index has none to stand in front of" in sparse


@pytest.mark.slow
@pytest.mark.django_db
def test_build_index_keeps_the_transformers_lambda_and_saves_the_first_stage(settings, tmp_path: Path, folders) -> None:  # type: ignore[no-untyped-def]
    from linker.encoders.base import encoder_kind

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    fast = _dictionary("fast")
    _encoder("biosyn-tiny", "biosyn", folders["biosyn"], fast)
    _encoder("dan-tiny", "dan", folders["dan"], fast)
    out = StringIO()
    call_command("build_index", "--dictionary", "fast", "--encoder", "biosyn-tiny", "--first-stage", "dan-tiny", stdout=out)
    index = IndexVersion.objects.get()
    assert index.state == IndexVersion.State.READY and index.first_stage_label == "first stage: dan-tiny (DAN)"
    assert "with biosyn-tiny, first stage: dan-tiny (DAN)" in out.getvalue()
    folder = Path(index.artifact_path)
    assert encoder_kind(folder / "first_stage" / "encoder") == "dan" and (folder / "first_stage" / "index").is_dir()
    retrieval = json.loads((folder / "config.json").read_text())["config"]["retrieval"]
    assert (retrieval["cascade"], retrieval["sparse_weight"]) == ("exact", LAMBDA)


# --- through a real worker -------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_transformer_index_with_a_dan_first_stage_serves_the_panel_and_learns_synonyms(  # type: ignore[no-untyped-def]
    training_worker, django_user_model, client, settings, folders  # noqa: F811
) -> None:
    from django.contrib.auth.models import Group

    from webapp.linking.registry import forget_all, get_active_linker
    from webapp.training.services import promote_index

    settings.TASK_QUEUE_OVERRIDE = training_worker.queue  # the build and the re-linking go to this worker
    admin = django_user_model.objects.create_user(username="ada", password="x")
    for role in ("admin", "curator"):
        admin.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(admin)
    dictionary = _dictionary("fast")
    _gold(dictionary)
    notes = Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)
    doc = Document.objects.create(collection=notes, external_id="n1", text="A wheezy chest again.")
    wheezy = Mention.objects.create(document=doc, start=2, end=14, text="wheezy chest")
    _encoder("biosyn-tiny", "biosyn", folders["biosyn"], dictionary)
    _encoder("dan-tiny", "dan", folders["dan"], dictionary)

    # 1. Built from the models page's form, on the worker.
    response = client.post("/training/indexes/build/", {"dictionary": "fast", "encoder": "biosyn-tiny", "first_stage": "dan-tiny"})
    assert response.status_code == 302 and response.url == "/training/models/#index-versions"
    index = IndexVersion.objects.get()
    deadline = time.monotonic() + 180
    while index.state == IndexVersion.State.BUILDING and time.monotonic() < deadline:
        time.sleep(0.2)
        index.refresh_from_db()
    assert index.state == IndexVersion.State.READY, f"{index.error}\n{training_worker.log.read_text()[-3000:]}"
    assert (Path(index.artifact_path) / "first_stage" / "encoder").is_dir() and index.name_count >= 23
    listing = client.get("/training/models/").content.decode()
    row = re.search(rf'<tr id="index-{index.pk}".*?</tr>', listing, re.S)
    assert row and "first stage: dan-tiny (DAN)" in row.group(0) and "Promote" in row.group(0)
    api = _api(admin).get(f"/api/index-versions/{index.pk}/").json()
    assert (api["encoder"], api["first_stage"], api["first_stage_kind"], api["state"]) == ("biosyn-tiny", "dan-tiny", "dan", "ready")

    # 2. Promoted, it serves the candidate panel: the right concept first for a name and for a text that is none.
    forget_all()
    promote_index(index.pk)
    active = get_active_linker("fast")
    assert active is not None and active.index_version_id == index.pk
    linker = active.linker
    assert linker.first_stage is not None and linker.config.retrieval.cascade == "exact"
    for text, expected in (("heart attack", "D:21"), ("Wheezing asthma", "D:11")):
        mention = Mention.objects.get(text=text)
        panel = client.get(f"/curate/mentions/{mention.pk}/panel/")
        assert panel.status_code == 200 and index.label in panel.content.decode()
        # The panel's first candidate (its GET stores nothing: the worker re-links the open mentions, waited for below).
        top = panel.content.decode().split('data-concept-id="')[1].split('"')[0]
        assert top == expected, text
    assert "first stage: dan-tiny (DAN)" in client.get("/training/models/").content.decode().split('id="index-versions"')[0]

    # 3. A curator's decision: its synonym reaches both of the live index's encoders and is found at once.
    assert linker.link_mentions(["wheezy chest"], k=1)[0][0].name != "wheezy chest"
    # The promotion re-links open mentions on the worker; a decision on the version seen before that lands
    # is rightly refused (409), so the curator's view is the re-linked one.
    deadline = time.monotonic() + 60
    while not Link.objects.filter(mention=wheezy, origin=Link.Origin.MODEL, model_version=index.label).exists():
        assert time.monotonic() < deadline, "the promotion did not re-link the open mention"
        time.sleep(0.2)
    wheezy.refresh_from_db()
    decided = _api(admin).post(f"/api/mentions/{wheezy.pk}/decision/", {
        "action": "relink", "concept_id": "D:11", "updated_at": wheezy.updated_at.isoformat()}, format="json")
    assert decided.status_code == 200, decided.json()
    top = get_active_linker("fast").linker.link_mentions(["wheezy chest"], k=1)[0][0]  # type: ignore[union-attr]
    assert (top.concept_id, top.name) == ("D:11", "wheezy chest")
    assert len(linker.first_stage.index) == len(linker.index) == len(linker.table)  # type: ignore[arg-type]
    forget_all()
