"""``python -m linker build-index --encoder <trained artifact> --first-stage <DAN>`` (the README's cascade command)
scores as the artifact was trained to: its λ, dense scale, prior weight and concept prior are carried unless a flag
sets one, and stderr and the summary say which it used. A bare encoder folder has no trained weights: defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from linker.__main__ import main
from linker.config import LinkerConfig
from linker.data import iter_dictionary
from linker.dictionary import NameTable
from linker.encoders.dan import DANConfig, DANEncoder
from linker.encoders.transformer import TransformerEncoder
from linker.encoders.wordvec import FastTextConfig, WordVectors
from linker.linker import Linker
from linker.retrieval import RetrievalConfig

TRAINED = RetrievalConfig(sparse_weight=1.253, dense_scale=17.5, prior_weight=0.001)


@pytest.fixture(scope="module")
def artifacts(tiny_dictionary_file: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A trained transformer linker (λ 1.253, prior 0.001, a concept prior), a DAN linker, and a bare encoder."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("artifacts")
    table = NameTable.from_records(iter_dictionary(tiny_dictionary_file))
    trained = Linker.build(table, TransformerEncoder(layers=(0,)), LinkerConfig(retrieval=TRAINED))
    trained.set_concept_prior({"D001943": 4, "D003920": 1, "D999999": 7})  # D999999: not in the dictionary
    trained.save(folder / "biosyn")
    trained.encoder.save(folder / "bare")  # type: ignore[union-attr]
    vectors = WordVectors.train(
        list(table.names) * 5, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000)
    )
    Linker.build(table, DANEncoder(vectors, DANConfig(hidden=32))).save(folder / "dan")
    return {"biosyn": folder / "biosyn", "dan": folder / "dan", "bare": folder / "bare"}


def _build(dictionary: Path, out: Path, encoder: Path, *flags: str) -> dict[str, Any]:
    argv = [
        "build-index",
        "--dictionary",
        str(dictionary),
        "--out",
        str(out),
        "--encoder",
        str(encoder),
        *flags,
    ]
    assert main(argv) in (0, None)
    return json.loads((out / "config.json").read_text())["config"]["retrieval"]


def test_the_cascade_build_keeps_the_trained_lambda_prior_weight_and_concept_prior(
    artifacts: dict[str, Path], tiny_dictionary_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retrieval = _build(
        tiny_dictionary_file, tmp_path / "index", artifacts["biosyn"], "--first-stage", str(artifacts["dan"])
    )
    assert (retrieval["sparse_weight"], retrieval["dense_scale"], retrieval["prior_weight"]) == (
        1.253,
        17.5,
        0.001,
    )
    assert retrieval["cascade"] == "exact"
    built = Linker.load(tmp_path / "index")
    assert built.first_stage is not None
    assert built.concept_prior == pytest.approx({"D001943": 1.6094379, "D003920": 0.6931472})
    captured = capsys.readouterr()
    assert (
        "scoring with λ 1.253 (artifact), dense scale 17.5 (artifact), prior weight 0.001 (artifact); "
        "concept prior of 2 concepts"
    ) in captured.err
    summary = json.loads(captured.out)["scoring"]
    assert summary["from"] == {
        "sparse_weight": "artifact",
        "dense_scale": "artifact",
        "prior_weight": "artifact",
    }


def test_a_flag_overrides_only_its_own_weight(
    artifacts: dict[str, Path], tiny_dictionary_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retrieval = _build(
        tiny_dictionary_file,
        tmp_path / "index",
        artifacts["biosyn"],
        "--sparse-weight",
        "2",
        "--prior-weight",
        "0",
    )
    assert (retrieval["sparse_weight"], retrieval["dense_scale"], retrieval["prior_weight"]) == (
        2.0,
        17.5,
        0.0,
    )
    assert "λ 2 (flag), dense scale 17.5 (artifact), prior weight 0 (flag)" in capsys.readouterr().err


def test_a_bare_encoder_folder_has_no_trained_weights_and_gets_the_defaults(
    artifacts: dict[str, Path], tiny_dictionary_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retrieval = _build(tiny_dictionary_file, tmp_path / "index", artifacts["bare"])
    defaults = RetrievalConfig()
    assert (retrieval["sparse_weight"], retrieval["dense_scale"], retrieval["prior_weight"]) == (
        defaults.sparse_weight,
        defaults.dense_scale,
        defaults.prior_weight,
    )
    assert Linker.load(tmp_path / "index").concept_prior == {}
    assert "λ 1 (default), dense scale 20 (default), prior weight 0 (default)" in capsys.readouterr().err
