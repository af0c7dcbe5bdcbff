"""The combined linker: a fast encoder (DAN here) searched first, the transformer encoding only queries that are not
a dictionary name; its artifact round trip; a fast-only linker; the re-ranker refused for a non-transformer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.delta import Delta
from linker.encoders.base import encoder_kind
from linker.encoders.dan import DANConfig, DANEncoder
from linker.encoders.registry import load_encoder
from linker.encoders.transformer import TransformerEncoder
from linker.encoders.wordvec import FastTextConfig, WordVectors
from linker.linker import Linker
from linker.rerank.reranker import Reranker, RerankerError
from linker.retrieval import RetrievalConfig

RECORDS = [
    ConceptRecord("D1", "breast cancer", (Synonym("mammary carcinoma"), Synonym("breast neoplasm"))),
    ConceptRecord("D2", "lung cancer", (Synonym("pulmonary neoplasm"), Synonym("lung carcinoma"))),
    ConceptRecord("D3", "diabetes mellitus", (Synonym("sugar diabetes"),)),
    ConceptRecord("D4", "cardiomyopathy", (Synonym("heart muscle disease"),)),
]
QUERIES = ["breast cancer", "carcinoma of the lung", "sugar diabetes", "disease of the heart muscle", "lung carcinoma"]


@pytest.fixture(scope="module")
def encoders() -> tuple[TransformerEncoder, DANEncoder]:
    torch.manual_seed(0)
    texts = [r.preferred_name for r in RECORDS] + [s.text for r in RECORDS for s in r.synonyms]
    vectors = WordVectors.train(texts * 5, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000))
    return TransformerEncoder(layers=(0,)), DANEncoder(vectors, DANConfig(hidden=32))


class CountingEncoder:
    """The transformer, counting the texts it is asked to encode."""

    def __init__(self, encoder: TransformerEncoder) -> None:
        self.inner = encoder
        self.encoded: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def encode(self, texts: Any, batch_size: int = 256, **kwargs: Any) -> np.ndarray:
        self.encoded.extend(texts)
        return self.inner.encode(texts, batch_size=batch_size, **kwargs)


def _top(linker: Linker, queries: list[str]) -> list[str]:
    return [parts[0][0].concept_id for parts in linker.link_queries([[q] for q in queries], 3)]


def test_exact_names_skip_the_transformer_and_the_top_concept_is_unchanged(encoders: Any) -> None:
    transformer, fast = encoders
    alone = Linker.build(RECORDS, transformer)
    combined = Linker.build(RECORDS, transformer, LinkerConfig(retrieval=RetrievalConfig(cascade="exact")),
                            first_stage_encoder=fast)
    counting = CountingEncoder(transformer)
    combined.retriever.encoder = counting  # type: ignore[assignment]
    assert _top(combined, QUERIES) == _top(alone, QUERIES)
    assert sorted(counting.encoded) == ["carcinoma of the lung", "disease of the heart muscle"]
    # "off" encodes every query with both encoders.
    combined.retriever.config = replace(combined.retriever.config, cascade="off")
    counting.encoded.clear()
    assert _top(combined, QUERIES) == _top(alone, QUERIES)
    assert len(counting.encoded) == len(set(QUERIES))


def test_the_first_stage_survives_save_and_load_and_learns_synonyms(encoders: Any, tmp_path: Path) -> None:
    transformer, fast = encoders
    linker = Linker.build(RECORDS, transformer, LinkerConfig(retrieval=RetrievalConfig(cascade="exact")),
                          first_stage_encoder=fast)
    linker.save(tmp_path / "a")
    assert encoder_kind(tmp_path / "a" / "first_stage" / "encoder") == "dan"
    loaded = Linker.load(tmp_path / "a")
    assert loaded.first_stage is not None and loaded.config.retrieval.cascade == "exact"
    assert _top(loaded, QUERIES) == _top(linker, QUERIES)
    served = loaded.with_delta(Delta((("cardiac myopathy", "D4"),)))
    assert _top(served, ["cardiac myopathy"]) == ["D4"]


def test_a_fast_encoder_alone_is_a_linker(encoders: Any, tmp_path: Path) -> None:
    _, fast = encoders
    linker = Linker.build(RECORDS, fast, LinkerConfig(retrieval=RetrievalConfig(sparse_search=False)))
    assert _top(linker, ["breast cancer", "lung carcinoma"]) == ["D1", "D2"]
    linker.save(tmp_path / "fast")
    loaded = Linker.load(tmp_path / "fast")
    assert isinstance(loaded.encoder, DANEncoder)
    assert _top(loaded, QUERIES) == _top(linker, QUERIES)
    assert isinstance(load_encoder(tmp_path / "fast" / "encoder"), DANEncoder)


def test_without_tf_idf_search_no_name_matrix_is_kept_and_scores_stay(encoders: Any, tmp_path: Path) -> None:
    """sparse_search off: tf-idf scores only the dense candidates, from the names' texts (no matrix, ~1 GB at 3M
    names); the scores and the top concepts are those of a linker that keeps it, through save, load and a delta."""
    _, fast = encoders
    kept = Linker.build(RECORDS, fast)
    lean = Linker.build(RECORDS, fast, LinkerConfig(retrieval=RetrievalConfig(sparse_search=False)))
    assert kept.sparse.keeps_matrix and not lean.sparse.keeps_matrix
    lean.save(tmp_path / "lean")
    assert not (tmp_path / "lean" / "sparse" / "sparse_names.npz").exists()
    loaded = Linker.load(tmp_path / "lean")
    rows = np.array([[0, 1, 2, 3, 4]])
    np.testing.assert_allclose(loaded.sparse.score(["breast neoplasms"], rows),
                               kept.sparse.score(["breast neoplasms"], rows), atol=1e-6)
    assert _top(loaded, QUERIES) == _top(lean, QUERIES)
    served = loaded.with_delta(Delta((("cardiac myopathy", "D4"),)))
    assert _top(served, ["cardiac myopathy"]) == ["D4"]
    taken_back = loaded.with_delta(Delta(removed=frozenset({("heart muscle disease", "D4")})))
    assert all(c.name != "heart muscle disease" for parts in taken_back.link_queries([["heart muscle disease"]], 3)
               for c in parts[0])


def test_a_reranker_needs_a_transformer(encoders: Any, tmp_path: Path) -> None:
    _, fast = encoders
    linker = Linker.build(RECORDS, fast)
    with pytest.raises(RerankerError, match="reads a transformer's token states, and this linker encodes names with dan"):
        Reranker.load(tmp_path, fast, linker.table)
