"""The ``pgvector`` index kind (linker.pgvector_index): a tiny dictionary's vectors in a PostgreSQL table under
HNSW, searched by SQL. Its candidates are exact search's (faiss flat), the curator names of a delta still rank beside
it, a saved artifact loads without its vectors, and deleting the index version drops its table. Skipped, with the
reason, where the database has no vector extension (CI's embedded PostgreSQL has pgvector)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from linker.index import DenseIndex
from linker.index_kinds import IndexConfig
from linker.pgvector_index import PgVectorIndex, has_vector_extension
from webapp.linking.vector_tables import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _needs_pgvector() -> None:
    if not has_vector_extension(connect):
        pytest.skip("this database has no pgvector extension (CREATE EXTENSION vector failed): the pgvector index "
                    "kind is tested on PostgreSQL with pgvector, as CI's embedded server")


def _tables() -> set[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'linker_vectors_%%'")
        return {row[0] for row in cur.fetchall()}


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float16", "float32"])  # halfvec and vector columns
def test_candidates_are_exact_searchs(dtype: str) -> None:
    rng = np.random.default_rng(7)
    names, queries = _unit(rng, 300, 32), _unit(rng, 6, 32)
    config = IndexConfig(kind="pgvector", vector_dtype=dtype)  # type: ignore[arg-type]
    index = PgVectorIndex.build(names, rows=np.arange(300) + 5, config=config)
    try:
        exact_scores, exact_rows = DenseIndex.build(names, rows=np.arange(300) + 5, config=IndexConfig(kind="flat")
                                                    ).search(queries, 10)
        scores, rows = index.search(queries, 10)
        assert (rows == exact_rows).all()
        tolerance = 2e-3 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(scores, exact_scores, atol=tolerance)
        pairs = np.array([[5, 17, -1], [304, 6, 5]])
        expected = np.array([[names[0] @ queries[0], names[12] @ queries[0], -np.inf],
                             [names[299] @ queries[1], names[1] @ queries[1], names[0] @ queries[1]]])
        np.testing.assert_allclose(index.pair_scores(queries[:2], pairs), expected, atol=tolerance)
        np.testing.assert_allclose(index.vectors([6, 5]), names[[1, 0]], atol=tolerance)
    finally:
        index.close()
        with connection.cursor() as cur:
            cur.execute(f"DROP TABLE {index.table}")


def _same_ranking(linker: Any, exact: Any, queries: list[str]) -> None:
    """The same candidates in the same order, their scores equal to float32 rounding (PostgreSQL sums the inner
    product in another order than numpy)."""
    got, expected = linker.link_mentions(queries, k=5), exact.link_mentions(queries, k=5)
    assert [[(c.concept_id, c.name) for c in cands] for cands in got] == \
        [[(c.concept_id, c.name) for c in cands] for cands in expected]
    np.testing.assert_allclose([c.score for cands in got for c in cands],
                               [c.score for cands in expected for c in cands], atol=1e-4)


def test_a_linker_on_pgvector_serves_its_delta_and_its_table_goes_with_its_version(tmp_path: Path) -> None:
    from linker.config import LinkerConfig
    from linker.data import ConceptRecord, Synonym
    from linker.delta import Delta
    from linker.encoders.dan import DANConfig, DANEncoder
    from linker.encoders.wordvec import FastTextConfig, WordVectors
    from linker.linker import Linker
    from tests.integration.test_training_word_vectors import CONCEPTS, _dictionary
    from webapp.linking.models import IndexVersion

    records = [ConceptRecord(cid, preferred, tuple(Synonym(s) for s in synonyms))
               for cid, (preferred, synonyms, _, _) in CONCEPTS.items()]
    texts = [r.preferred_name for r in records] + [s.text for r in records for s in r.synonyms]
    encoder = DANEncoder(WordVectors.train(texts * 5, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000)),
                         DANConfig(hidden=32))
    before = _tables()
    pg = Linker.build(records, encoder, LinkerConfig(index=IndexConfig(kind="pgvector", vector_dtype="float32")))
    flat = Linker.build(records, encoder, LinkerConfig(index=IndexConfig(kind="flat")))
    assert isinstance(pg.index, PgVectorIndex) and pg.index.table in _tables() - before
    queries = ["asthma", "heart attack", "lung infection", "cardiac disease", "wheezing airways"]
    pg.save(tmp_path / "linker")
    loaded = Linker.load(tmp_path / "linker")
    assert isinstance(loaded.index, PgVectorIndex) and not (tmp_path / "linker" / "index" / "vectors.npy").exists()
    try:
        _same_ranking(pg, flat, queries)
        delta = Delta((("wheezy chest", "D:11"),), frozenset(), (1, 0))
        top = loaded.with_delta(delta).link_mentions(["wheezy chest"], k=3)[0][0]
        assert (top.concept_id, top.name) == ("D:11", "wheezy chest")
        _same_ranking(loaded.with_delta(delta), flat.with_delta(delta), queries)
    finally:
        pg.index.close()
        loaded.index.close()

    dictionary = _dictionary("pgvec")
    version = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=dictionary.versions.get(),
                                          artifact_path=str(tmp_path / "linker"), state=IndexVersion.State.READY)
    table = loaded.index.table
    version.delete()
    assert table not in _tables()


def test_an_index_build_goes_to_pgvector_from_its_threshold_and_serves_curator_names(settings, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                                      bob) -> None:
    from linker.encoders.dan import DANConfig, DANEncoder
    from linker.encoders.wordvec import FastTextConfig, WordVectors
    from tests.integration.test_training_word_vectors import CONCEPTS, _dictionary
    from webapp.linking.models import EncoderModel, IndexVersion
    from webapp.linking.registry import forget_all, get_active_linker
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Concept, Name

    settings.ARTIFACT_ROOT, settings.LINKER_PGVECTOR_FROM = tmp_path / "artifacts", 10
    forget_all()
    texts = [text for preferred, synonyms, _, _ in CONCEPTS.values() for text in (preferred, *synonyms)]
    DANEncoder(WordVectors.train(texts * 5, FastTextConfig(dim=16, epochs=2, workers=1, bucket=2000)),
               DANConfig(hidden=32)).save(tmp_path / "dan")
    encoder = EncoderModel.objects.create(name="dan", method=EncoderModel.Method.DAN, base_model="tiny",
                                          artifact_path=str(tmp_path / "dan"))
    version = _dictionary("pgweb").versions.get()
    before = _tables()
    index = build_index(create_index_version(version, encoder))
    assert index.state == IndexVersion.State.READY, index.error
    activate_index(index.pk)
    Name.objects.create(concept=Concept.objects.get(version=version, concept_id="D:11"), text="wheezy chest",
                        normalized="wheezy chest", source=Name.Source.CURATOR, created_by=bob)
    active = get_active_linker("pgweb")
    assert active is not None and isinstance(active.linker.index, PgVectorIndex)
    assert active.linker.index.table in _tables() - before
    top = active.linker.link_mentions(["wheezy chest"], k=1)[0][0]
    assert (top.concept_id, top.name) == ("D:11", "wheezy chest")
    table = active.linker.index.table
    active.linker.index.close()
    forget_all()
    IndexVersion.objects.filter(pk=index.pk).update(state=IndexVersion.State.RETIRED)
    IndexVersion.objects.get(pk=index.pk).delete()
    assert table not in _tables()
