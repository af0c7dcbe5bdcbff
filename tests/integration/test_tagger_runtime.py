"""The default tagger runtime in the web app (TAGGER_RUNTIME=onnx-int8): the active tagger is exported once per host
into ARTIFACT_ROOT/cache/onnx and predicts through ONNX Runtime; a corpus run detects with it and links, reporting
its stages; an export that cannot be made leaves the tagger on torch instead of failing detection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.integration.corpus_run_helpers import notes_world
from webapp.corpus.models import Document, Mention
from webapp.curation.corpus_runs.chunk import run_chunk
from webapp.curation.corpus_runs.jobs import start_run
from webapp.curation.corpus_runs.scope import RunScope
from webapp.linking import taggers
from webapp.linking.models import DetectorVersion
from webapp.linking.registry import forget_all

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def tagger_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from linker.detect.tagger import Tagger

    folder = tmp_path_factory.mktemp("tagger") / "tagger"
    Tagger.from_base(max_length=64, stride=16, mention_types=("Disease",), device="cpu").save(folder)
    return folder


@pytest.fixture(autouse=True)
def _int8(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(settings, "TAGGER_RUNTIME", "onnx-int8")
    monkeypatch.setattr(settings, "ARTIFACT_ROOT", tmp_path / "artifacts")
    forget_all()
    taggers.forget_all()
    yield
    forget_all()
    taggers.forget_all()


def _activate(collection, folder: Path) -> DetectorVersion:  # type: ignore[no-untyped-def]
    return DetectorVersion.objects.create(dictionary=collection.dictionary, label="tagger-int8", artifact_path=str(folder),
                                          mention_types=["Disease"], state=DetectorVersion.State.ACTIVE)


def test_a_corpus_run_detects_with_the_exported_tagger(tmp_path: Path, tagger_folder: Path) -> None:
    collection = notes_world(tmp_path)
    version = _activate(collection, tagger_folder)
    tagger = taggers.load_tagger(version)
    assert tagger.runtime_name == "onnx-int8" and tagger.runtime is not None
    exported = list((Path(settings.ARTIFACT_ROOT) / "cache" / "onnx").glob("tagger-*-onnx-int8.onnx"))
    assert len(exported) == 1

    run = start_run(collection, RunScope(), chunk_size=4, send=False)
    for chunk in run.children.order_by("pk"):
        run_chunk(chunk.pk)
    run.refresh_from_db()
    assert run.state == "succeeded" and run.progress == 6
    assert set(Document.objects.filter(collection=collection).values_list("detection_state", flat=True)) == {"done"}
    # The matcher's names are found whatever the untrained tagger reads; every mention found is linked.
    found = Mention.objects.filter(document__collection=collection)
    assert found.filter(detector__in=("matcher", "both")).exists()
    assert not found.filter(status="pending").exists()
    stages = [c.result["stages"] for c in run.children.order_by("pk")]
    assert all({"detect:tagger", "detect:matcher", "link", "write:links"} <= set(s) for s in stages)

    taggers.forget_all()  # a second load on this host reads the export it made
    assert taggers.load_tagger(version).runtime.path == exported[0]  # type: ignore[union-attr]


def test_an_export_that_fails_leaves_the_tagger_on_torch(tmp_path: Path, tagger_folder: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    collection = notes_world(tmp_path)
    version = _activate(collection, tagger_folder)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setattr(settings, "ARTIFACT_ROOT", blocked)
    tagger = taggers.load_tagger(version)
    assert tagger.runtime_name == "torch" and tagger.runtime is None
    assert tagger.predict(["Bronchial asthma was seen."])[0] is not None
