"""A linker with a delta (names added and base names taken back over an immutable base, linker.delta) ranks exactly
as a fresh build over the same names.

The fresh build here is what serving rebuilt the index into before: a name table of the base records without the
names taken back, the delta's pairs then added to it in order (:meth:`NameTable.add`: a new row at the end for a new
name, one more count of support for every pair), the same encoder's vectors of every name in a flat index, and a
tf-idf encoder whose vocabulary and idf are fitted on the *base's* names (as an index grown in place kept them; a
rebuild refits them, which the delta does not) indexing every name. Exactly: the same concepts, names, scores S and
their dense and tf-idf parts bit for bit, and the same homonyms, for every query, with top lists short enough to
cut the pools. The encoder's vectors have small integer components, so that a dot product is exact whatever order a
BLAS kernel sums it in: with a real encoder, a score can differ in its last bits between two index layouts, and
so can the order of two names that close.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.delta import Delta, DeltaVectors
from linker.dictionary import NameTable
from linker.index import DenseIndex
from linker.index_kinds import IndexConfig
from linker.linker import Linker
from linker.rerank import MentionSpan
from linker.retrieval import RetrievalConfig, encode_names
from linker.sparse import SparseEncoder

WORDS = ["breast", "cancer", "lung", "tumour", "heart", "failure", "renal", "acute", "chronic", "ab", "ba", "x"]


class BigramCounts:
    """Hashed character-bigram counts: integer vectors, so that every dot product is exact in float32."""

    kind = "test-bigrams"
    dim = 12

    def encode(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            padded = f" {text} "
            for a, b in zip(padded, padded[1:], strict=False):
                out[i, zlib.crc32((a + b).encode()) % self.dim] += 1
        return out

    def fingerprint(self) -> str:
        return "bigrams-12"

    def save(self, folder: str | Path) -> None:
        raise NotImplementedError("not saved in these tests")


ENCODER = BigramCounts()
names = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[ConceptRecord], Delta, list[str], LinkerConfig, int]:
    records = []
    for c in range(draw(st.integers(2, 6))):
        own = list(dict.fromkeys(draw(st.lists(names, min_size=1, max_size=4))))
        records.append(ConceptRecord(f"D{c}", own[0], tuple(Synonym(n) for n in own[1:])))
    synonyms = [(s.text, r.concept_id) for r in records for s in r.synonyms]
    removed = draw(st.lists(st.sampled_from(synonyms), unique=True, max_size=3)) if synonyms else []
    concepts = [r.concept_id for r in records] + ["NEW1", "NEW2"]
    added = draw(st.lists(st.tuples(names, st.sampled_from(concepts)), max_size=6))
    queries = draw(st.lists(names, min_size=1, max_size=4))
    mode = draw(st.sampled_from(["hybrid", "hybrid", "dense", "sparse"]))
    retrieval = RetrievalConfig(mode=mode, names_per_source=draw(st.sampled_from([1, 2, 3, 5, 64])),
                                sparse_search=draw(st.booleans()))
    config = LinkerConfig(retrieval=retrieval, index=IndexConfig(kind="flat"))
    return records, Delta(tuple(added), frozenset(removed)), queries, config, draw(st.integers(1, 5))


def fresh_build(records: list[ConceptRecord], delta: Delta, config: LinkerConfig) -> Linker:
    """The linker of the module docstring: every name indexed anew, tf-idf fitted on the base's names."""
    base_names = NameTable.from_records(records, config.text).names
    kept = [ConceptRecord(r.concept_id, r.preferred_name,
                          tuple(s for s in r.synonyms if (s.text, r.concept_id) not in delta.removed))
            for r in records]
    table = NameTable.from_records(kept, config.text)
    table.add(delta.added)
    sparse = SparseEncoder().fit(base_names)
    sparse.set_names(table.names)
    index = DenseIndex.build(encode_names(ENCODER, table.names), config=config.index)
    return Linker(table, sparse, ENCODER, index, config)


def shown(linker: Linker, queries: list[str], k: int) -> list[list[tuple[object, ...]]]:
    linked = linker.link_in_context([MentionSpan(q, 0, len(q)) for q in queries], None, k=k,
                                    queries=[[linker.preprocessor.normalize(q)] for q in queries])
    return [[(c.concept_id, c.name, _bits(c.score), _bits(c.dense), _bits(c.sparse), h)
             for c, h in zip(one.candidates, one.homonyms, strict=True)] for one in linked]


def _bits(x: float) -> str:
    return "nan" if math.isnan(x) else x.hex()  # nan equals nothing, itself included


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_base_and_delta_rank_as_a_fresh_build_over_the_same_names(case) -> None:  # type: ignore[no-untyped-def]
    records, delta, queries, config, k = case
    base = Linker.build(records, ENCODER, config)
    before = shown(base, queries, k)
    # An earlier delta of the same base ranks the queries first: the base's searches it kept (linker.memo) are read
    # by the next view, which must still rank as the fresh build does.
    earlier = Delta(delta.added[: len(delta.added) // 2], frozenset(sorted(delta.removed)[:1]))
    shown(base.with_delta(earlier, DeltaVectors()), queries, k)
    served = base.with_delta(delta, DeltaVectors())
    assert shown(served, queries, k) == shown(fresh_build(records, delta, config), queries, k)
    assert shown(base, queries, k) == before  # the base is not changed


def test_a_name_taken_back_is_never_returned_and_a_new_one_is_found() -> None:
    records = [ConceptRecord("D1", "breast cancer", (Synonym("mammary carcinoma"),)),
               ConceptRecord("D2", "lung cancer", (Synonym("pulmonary neoplasm"),))]
    base = Linker.build(records, ENCODER, LinkerConfig(index=IndexConfig(kind="flat")))
    served = base.with_delta(Delta((("lung tumour", "D2"), ("lung tumour", "D9")), frozenset({("mammary carcinoma", "D1")})))
    (found,) = served.link_mentions(["lung tumour"], k=5)
    assert [(c.concept_id, c.name) for c in found[:2]] == [("D2", "lung tumour"), ("D9", "lung tumour")]
    assert all(c.name != "mammary carcinoma" for parts in served.link_mentions(["mammary carcinoma"], k=5) for c in parts)
    assert served.table.concepts_named("lung tumour") == ["D2", "D9"]
    assert base.table.concepts_named("lung tumour") == [] and base.table.row("mammary carcinoma", "D1") is not None


def test_delta_vectors_encode_each_name_once() -> None:
    class Counting(BigramCounts):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def encode(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
            self.seen.extend(texts)
            return super().encode(texts, batch_size)

    encoder = Counting()
    base = Linker.build([ConceptRecord("D1", "breast cancer")], encoder, LinkerConfig(index=IndexConfig(kind="flat")))
    encoder.seen.clear()
    kept = DeltaVectors()
    base.with_delta(Delta((("lung tumour", "D1"),)), kept)
    base.with_delta(Delta((("lung tumour", "D1"), ("heart failure", "D1"))), kept)
    assert encoder.seen == ["lung tumor", "heart failure"]  # normalised (American spelling)
