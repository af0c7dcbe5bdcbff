"""Uploading word vectors (.vec/.bin) for BNE and DAN runs: a good file becomes a word-vector model that a run
starts from; a malformed, truncated, empty file or one of another dimension is refused naming the file and the
fault, on the models page, through the API and on a worker, and leaves no row, no folder and the active
index as it was. Admins only, with CSRF."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from linker.data import ConceptRecord, Synonym
from linker.linker import Linker
from webapp.artifacts.models import Manifest
from webapp.corpus.models import Collection
from webapp.linking.models import IndexVersion
from webapp.training import word_vectors as service
from webapp.training.errors import RunError
from webapp.training.models import WordVectorModel, WordVectorUpload
from webapp.training.runs import start_run
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

WORDS = ["asthma", "bronchial", "heart", "attack", "failure", "diabetes"]


def vec(words: list[str] = WORDS, dim: int = 4, header: str | None = None, rows: int | None = None) -> bytes:
    """A word2vec text file: '<words> <dim>' then one word and its values per line."""
    lines = [header if header is not None else f"{len(words)} {dim}"]
    for i, word in enumerate(words[:rows]):
        lines.append(" ".join([word, *(f"{(i + 1) * 0.1 + j * 0.01:.3f}" for j in range(dim))]))
    return ("\n".join(lines) + "\n").encode()


# name: (file name, content, the fault the error names)
BAD_FILES = {
    "malformed": ("broken.vec", vec().replace(b"heart 0.3", b"heart oops 0.3"), "line 4 has 5 values where the header says 4"),
    "truncated": ("cut.vec", vec(rows=3), "truncated: the header announces 6 words, the file holds 3"),
    "dimension": ("small.vec", vec(dim=4), "vectors of dimension 4, but 8 are needed"),
    "empty": ("nothing.vec", b"", "the file is empty"),
    "no header": ("plain.txt", b"asthma 0.1 0.2\n", "the first line must be '<words> <dimension>'"),
    "garbage bin": ("model.bin", b"\x00\x01\x02garbage" * 10, "the first line must be '<words> <dimension>'"),
    "absurd header": ("huge.bin", b"999999999 999999999\n" + b"\x00" * 20, "truncated or not word2vec: the header announces 999999999 vectors of dimension 999999999"),
    "truncated fastText bin": ("cut.bin", struct.pack("<ii", 793712314, 12) + b"\x00" * 7, "not a readable word-vector file"),
}


@pytest.fixture
def world(settings, tmp_path: Path) -> Dictionary:  # type: ignore[no-untyped-def]
    """A dictionary with an active (sparse) index, whose names the coverage is measured on."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="demo", checksum="w" * 64)
    records = [ConceptRecord("D:1", "Asthma", (Synonym("Bronchial asthma"),)), ConceptRecord("D:2", "Heart attack"),
               ConceptRecord("D:3", "Kidney stones")]
    for record in records:
        concept = Concept.objects.create(version=version, concept_id=record.concept_id, preferred_name=record.preferred_name)
        for name in record.all_names():
            Name.objects.create(concept=concept, text=name, normalized=name.lower())
    Linker.build(records, None).save(tmp_path / "index")
    IndexVersion.objects.create(dictionary=dictionary, dictionary_version=version, artifact_path=str(tmp_path / "index"),
                                state=IndexVersion.State.ACTIVE)
    return dictionary


def left_behind(root: Path) -> list[str]:
    """Every file or folder an upload may leave under the artifact root."""
    return sorted(str(p.relative_to(root)) for folder in ("word-vectors", "uploads/word-vectors") for p in (root / folder).rglob("*"))


def assert_nothing_kept(root: Path) -> None:
    assert not WordVectorModel.objects.exists()
    assert left_behind(root) == []
    active = IndexVersion.objects.get()
    assert active.state == IndexVersion.State.ACTIVE and active.encoder_id is None


# --- the service and the page ------------------------------------------------------------------------------


def test_a_good_file_becomes_word_vectors_that_a_bne_run_starts_from(world, settings, alice_client) -> None:  # type: ignore[no-untyped-def]
    response = alice_client.post("/training/models/word-vectors/upload/", {
        "file": SimpleUploadedFile("Bio Vectors.vec", vec()), "dim": 4, "dictionary": "mini"})
    assert response.status_code == 302 and response["Location"].endswith("/training/models/#word-vectors")
    vectors = WordVectorModel.objects.get()
    assert (vectors.name, vectors.source, vectors.file_name, vectors.words, vectors.dim) == ("bio-vectors", "uploaded", "Bio Vectors.vec", 6, 4)
    # "asthma", "bronchial", "asthma", "heart", "attack" of 7 name words ("kidney", "stones" unknown)
    assert vectors.dictionary == world and vectors.name_coverage == pytest.approx(5 / 7)
    folder = Path(vectors.artifact_path)
    assert folder == Path(settings.ARTIFACT_ROOT) / "word-vectors" / "bio-vectors" and (folder / "vectors.kv").exists()
    assert left_behind(Path(settings.ARTIFACT_ROOT)) == ["word-vectors/bio-vectors", *sorted(
        f"word-vectors/bio-vectors/{f.name}" for f in folder.iterdir())]  # the upload itself is gone

    page = alice_client.get("/training/models/").content.decode()
    assert "bio-vectors" in page and "uploaded Bio Vectors.vec" in page and "71% of Mini" in page
    assert "?method=bne&amp;word_vectors=bio-vectors&amp;dictionary=mini" in page

    form = alice_client.get("/training/runs/new/?method=bne&word_vectors=bio-vectors").content.decode()
    assert '<option value="bio-vectors" selected>bio-vectors (6 words × 4; uploaded Bio Vectors.vec)</option>' in form


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_is_refused_naming_it_and_the_fault_and_nothing_is_kept(world, settings, alice_client, case: str) -> None:  # type: ignore[no-untyped-def]
    file_name, content, fault = BAD_FILES[case]
    data = {"file": SimpleUploadedFile(file_name, content), "dictionary": "mini"}
    if case == "dimension":
        data["dim"] = 8
    response = alice_client.post("/training/models/word-vectors/upload/", data)
    assert response.status_code == 400
    error = response.context["upload_form"].errors["file"][0]
    assert error.startswith(f"{file_name}: ") and fault in error, error
    assert str(settings.ARTIFACT_ROOT) not in error  # the file as the admin knows it, not the server's path
    assert file_name in response.content.decode()
    assert_nothing_kept(Path(settings.ARTIFACT_ROOT))


def test_the_api_uploads_and_refuses_the_same_way(world, settings, alice) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(alice)
    for case, (file_name, content, fault) in BAD_FILES.items():
        body = {"file": SimpleUploadedFile(file_name, content)} | ({"dim": 8} if case == "dimension" else {})
        refused = api.post("/api/word-vectors/", body, format="multipart")
        assert refused.status_code == 400, (case, refused.json())
        assert refused.json()["file"][0].startswith(f"{file_name}: ") and fault in refused.json()["file"][0]
    assert_nothing_kept(Path(settings.ARTIFACT_ROOT))
    wrong = api.post("/api/word-vectors/", {"file": SimpleUploadedFile("vectors.zip", vec())}, format="multipart")
    assert wrong.status_code == 400 and "expected a word-vector file ending in .vec" in wrong.json()["file"][0]

    made = api.post("/api/word-vectors/", {"file": SimpleUploadedFile("v.vec", vec()), "name": "tiny", "dictionary": "mini"},
                    format="multipart")
    assert made.status_code == 201 and (made.json()["name"], made.json()["words"], made.json()["dim"]) == ("tiny", 6, 4)
    again = api.post("/api/word-vectors/", {"file": SimpleUploadedFile("v.vec", vec()), "name": "tiny"}, format="multipart")
    assert again.status_code == 400 and "named 'tiny' exists already" in again.json()["file"][0]
    assert [v["name"] for v in api.get("/api/word-vectors/").json()["results"]] == ["tiny"]
    assert WordVectorModel.objects.count() == 1


def test_a_large_file_is_read_by_a_worker_and_a_bad_one_leaves_only_the_failed_job(world, settings, alice, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(service, "SYNC_LIMIT_BYTES", 10)  # every file here is "large"
    root = Path(settings.ARTIFACT_ROOT)
    api = APIClient()
    api.force_authenticate(alice)
    queued = api.post("/api/word-vectors/", {"file": SimpleUploadedFile("cut.vec", vec(rows=3))}, format="multipart")
    assert queued.status_code == 202 and queued.json()["state"] == "queued"
    job = WordVectorUpload.objects.get(pk=queued.json()["id"])
    assert Path(job.path).exists()  # stored on the shared volume for the worker
    assert service.run_upload(job.pk) == WordVectorUpload.State.FAILED  # the task's body, as the worker runs it
    job.refresh_from_db()
    assert job.error == "cut.vec: truncated: the header announces 6 words, the file holds 3"
    assert_nothing_kept(root)
    followed = api.get(f"/api/word-vector-uploads/{job.pk}/").json()
    assert (followed["state"], followed["error"], followed["word_vectors"]) == ("failed", job.error, None)
    client = Client()
    client.force_login(alice)
    page = client.get("/training/models/").content.decode()
    assert "cut.vec" in page and "truncated: the header announces 6 words" in page

    good = api.post("/api/word-vectors/", {"file": SimpleUploadedFile("good.vec", vec()), "dictionary": "mini"}, format="multipart")
    assert service.run_upload(good.json()["id"]) == WordVectorUpload.State.SUCCEEDED
    assert service.run_upload(good.json()["id"]) == WordVectorUpload.State.SUCCEEDED  # a re-delivered task: nothing more
    vectors = WordVectorModel.objects.get()
    assert (vectors.name, vectors.words, vectors.name_coverage) == ("good", 6, pytest.approx(5 / 7))
    assert api.get(f"/api/word-vector-uploads/{good.json()['id']}/").json()["word_vectors"] == "good"
    assert left_behind(root) == ["word-vectors/good", *sorted(f"word-vectors/good/{f.name}" for f in Path(vectors.artifact_path).iterdir())]


def test_the_service_refuses_before_storing_anything(world, settings) -> None:  # type: ignore[no-untyped-def]
    WordVectorModel.objects.create(name="taken", source="uploaded", artifact_path="/nowhere")
    with pytest.raises(RunError, match="named 'taken' exists already"):
        service.upload_word_vectors(SimpleUploadedFile("x.vec", vec()), name="taken")
    with pytest.raises(RunError, match="expected a word-vector file ending in .vec"):
        service.upload_word_vectors(SimpleUploadedFile("x.csv", vec()))
    assert left_behind(Path(settings.ARTIFACT_ROOT)) == []


def test_a_fasttext_bin_keeps_its_ngrams(world, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A fastText .bin (the magic number first) is read with its n-grams: unseen words get vectors too."""
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(vector_size=8, min_count=1, bucket=1000, epochs=1, workers=1, seed=1)
    sentences = [["bronchial", "asthma"], ["heart", "attack"], ["kidney", "stones"]]
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=3, epochs=1)
    path = tmp_path / "model.bin"
    save_facebook_model(model, str(path))
    assert struct.unpack("<i", path.read_bytes()[:4])[0] == 793712314
    vectors = service.import_word_vectors(path, "ft", "model.bin", 8, world)
    assert (vectors.words, vectors.dim, vectors.subwords, vectors.name_coverage) == (6, 8, True, 1.0)


def test_uploads_are_for_admins_with_csrf(world, bob, bob_client, alice) -> None:  # type: ignore[no-untyped-def]
    assert bob_client.post("/training/models/word-vectors/upload/", {"file": SimpleUploadedFile("v.vec", vec())}).status_code == 403
    api = APIClient()
    api.force_authenticate(bob)
    assert api.post("/api/word-vectors/", {"file": SimpleUploadedFile("v.vec", vec())}, format="multipart").status_code == 403
    assert api.get("/api/word-vectors/").status_code == 403 and api.get("/api/word-vector-uploads/").status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post("/training/models/word-vectors/upload/", {"file": SimpleUploadedFile("v.vec", vec())}).status_code == 403
    assert not WordVectorModel.objects.exists()


def test_only_bne_and_dan_runs_start_from_word_vectors(world, settings) -> None:  # type: ignore[no-untyped-def]
    vectors = service.import_word_vectors(_file(settings, vec()), "tiny")
    from tests.integration.test_training_runs import TINY

    collection = Collection.objects.create(slug="gold", title="Gold", dictionary=world, has_gold=True)
    with pytest.raises(RunError, match="only BNE and DAN runs start from word vectors"):
        start_run(world, [collection], TINY, send=False, word_vectors=vectors)
    with pytest.raises(RunError, match="fastText trains word vectors: it does not start from any"):
        start_run(world, [collection], {"method": "fasttext"}, send=False, word_vectors=vectors)
    run = start_run(world, [collection], {"method": "bne", "epochs": 1}, send=False, word_vectors=vectors)
    assert run.word_vectors == vectors and "fasttext_dim" not in run.params  # it trains no fastText
    Path(vectors.artifact_path, "vectors.kv").unlink()
    Manifest.objects.filter(logical_path=vectors.artifact_path).delete()  # gone from the artifact store too
    with pytest.raises(RunError, match="word vectors 'tiny': their folder .* is gone"):
        start_run(world, [collection], {"method": "dan"}, send=False, word_vectors=vectors)


def _file(settings, content: bytes) -> Path:  # type: ignore[no-untyped-def]
    path = Path(settings.ARTIFACT_ROOT) / "given.vec"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path
