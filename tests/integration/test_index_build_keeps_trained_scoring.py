"""An index the web app builds with a trained linker artifact scores as the artifact was trained to: its λ, dense
scale and prior weight (from its config) and its concept prior (prior.json, of the concepts the dictionary has), and
the build says which weights it used. A base encoder folder carries none: the defaults, said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.encoders.dan import DANConfig, DANEncoder
from linker.encoders.wordvec import FastTextConfig, WordVectors
from linker.linker import Linker
from linker.retrieval import RetrievalConfig
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training import services
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db(transaction=True)

CONCEPTS = {
    "MESH:D1": ("Breast Neoplasms", "breast cancer"),
    "MESH:D2": ("Lung Neoplasms", "lung cancer"),
    "MESH:D3": ("Diabetes Mellitus", "diabetes"),
}


def _dictionary() -> DictionaryVersion:
    dictionary = Dictionary.objects.create(slug="scoring", title="Scoring")
    version = DictionaryVersion.objects.create(
        dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64
    )
    for cid, names in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=names[0])
        Name.objects.bulk_create(
            [
                Name(concept=concept, text=n, normalized=n.lower(), is_preferred=i == 0)
                for i, n in enumerate(names)
            ]
        )
    return version


def _trained_dan(folder: Path) -> Path:
    """A DAN linker as training leaves it: λ 1.253, prior weight 0.001, a concept prior (one id the dictionary lacks)."""
    torch.manual_seed(0)
    records = [
        ConceptRecord(cid, names[0], tuple(Synonym(n) for n in names[1:])) for cid, names in CONCEPTS.items()
    ]
    texts = [n for names in CONCEPTS.values() for n in names] * 5
    encoder = DANEncoder(
        WordVectors.train(texts, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000)),
        DANConfig(hidden=32),
    )
    linker = Linker.build(
        records, encoder, LinkerConfig(retrieval=RetrievalConfig(sparse_weight=1.253, prior_weight=0.001))
    )
    linker.set_concept_prior({"MESH:D1": 4, "MESH:D9": 2})
    linker.save(folder)
    return folder


def test_an_index_of_a_trained_artifact_keeps_its_lambda_prior_weight_and_concept_prior(
    tmp_path: Path, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    version = _dictionary()
    encoder = EncoderModel.objects.create(
        name="dan-trained", method=EncoderModel.Method.DAN, artifact_path=str(_trained_dan(tmp_path / "dan"))
    )
    said: list[str] = []
    index = services.build_index(services.create_index_version(version, encoder), progress=said.append)
    assert index.state == IndexVersion.State.READY, index.error
    retrieval = json.loads((Path(index.artifact_path) / "config.json").read_text())["config"]["retrieval"]
    assert (retrieval["sparse_weight"], retrieval["prior_weight"]) == (1.253, 0.001)
    assert Linker.load(index.artifact_path).concept_prior == pytest.approx({"MESH:D1": 1.6094379})
    assert (
        "scoring with λ 1.253 (artifact), dense scale 20 (artifact), prior weight 0.001 (artifact); "
        "concept prior of 1 concepts"
    ) in said


def test_a_tf_idf_index_says_it_scores_with_the_defaults(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    said: list[str] = []
    index = services.build_index(services.create_index_version(_dictionary(), None), progress=said.append)
    assert index.state == IndexVersion.State.READY, index.error
    assert Linker.load(index.artifact_path).concept_prior == {}
    assert "scoring with λ 1 (default), dense scale 20 (default), prior weight 0 (default)" in said
