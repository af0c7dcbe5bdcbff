"""Linker.still_ranks: a kept ranking is vouched for after names came or went only when the linker would make the
very same ranking now (checked against a fresh link after every change of a random sequence), and it does vouch for
some (else it would be the coarse generation check again)."""

from __future__ import annotations

import random

import pytest

from linker.config import LinkerConfig
from linker.data import ConceptRecord, Synonym
from linker.encoders import TransformerEncoder
from linker.index_kinds import IndexConfig
from linker.linker import Linker
from linker.rerank import MentionSpan
from linker.rerank.results import LinkedMention
from linker.retrieval import RetrievalConfig

RECORDS = [
    ConceptRecord("D1", "breast cancer", (Synonym("mammary carcinoma"), Synonym("breast neoplasm"))),
    ConceptRecord("D2", "lung cancer", (Synonym("pulmonary neoplasm"),)),
    ConceptRecord("D3", "diabetes mellitus", (Synonym("sugar diabetes"),)),
    ConceptRecord("D4", "cardiomyopathy", (Synonym("heart muscle disease"),)),
    ConceptRecord("D5", "hypertension", (Synonym("high blood pressure"),)),
    ConceptRecord("D6", "migraine", (Synonym("migraine headache"),)),
    ConceptRecord("D7", "asthma", (Synonym("bronchial asthma"),)),
    ConceptRecord("D8", "renal failure", (Synonym("kidney failure"),)),
    ConceptRecord("D9", "hepatitis", (Synonym("liver inflammation"),)),
    ConceptRecord("D10", "epilepsy", (Synonym("seizure disorder"),)),
]
QUERIES = ["breast tumour", "kidney insufficiency", "sugar disease", "headache", "blood pressure high", "asthma attack"]
NEW_NAMES = ["breast tumour", "mammary tumour", "kidney disease", "sugar illness", "zz unrelated thing", "migraine",
             "heart failure", "liver disease", "fits", "wheezing", "renal insufficiency", "pressure in the blood",
             "qq nothing alike", "hypertension"]
# Small pools, so that many names fall outside them (with the default 64 names per list, a dictionary this small
# fits every pool whole and nothing could be vouched for).
CONFIG = LinkerConfig(retrieval=RetrievalConfig(names_per_source=4), index=IndexConfig(kind="flat"))


def _shown(one: LinkedMention) -> list[tuple[str, str, float, tuple[str, ...]]]:
    return [(c.concept_id, c.name, round(c.score, 5), h) for c, h in zip(one.candidates, one.homonyms, strict=True)]


def _link(linker: Linker, query: str) -> LinkedMention:
    return linker.link_in_context([MentionSpan(query, 0, len(query))], query, k=3, probe=True)[0]


def test_a_vouched_ranking_is_what_the_linker_would_make_now(minilm: TransformerEncoder) -> None:
    linker = Linker.build(RECORDS, minilm, CONFIG)
    rng = random.Random(7)
    kept = {q: _link(linker, q) for q in QUERIES}
    assert all(one.probe is not None for one in kept.values())
    added: list[tuple[str, str]] = []
    vouched = refused = 0
    for _ in range(40):
        roll = rng.random()
        if roll < 0.55 or not added:
            pair = (rng.choice(NEW_NAMES), rng.choice(RECORDS).concept_id)
            linker.add_names([pair])  # a pair held already only counts once more in its support: a change too
            added.append(pair)
        elif roll < 0.85:
            linker.remove_names([added.pop(rng.randrange(len(added)))])
        else:
            linker.add_names([("mammary carcinoma", "D1")])  # support only
        for q in QUERIES:
            fresh = _link(linker, q)
            assert fresh.probe is not None
            probe = kept[q].probe
            assert probe is not None
            if linker.still_ranks(probe):
                vouched += 1
                assert _shown(kept[q]) == _shown(fresh), (q, linker.generation)
            else:
                refused += 1
                kept[q] = fresh
    assert vouched > 20 and refused > 20, (vouched, refused)


def test_a_name_that_would_join_the_pool_or_a_new_prior_sets_a_ranking_aside(minilm: TransformerEncoder) -> None:
    linker = Linker.build(RECORDS, minilm, CONFIG)
    kept = _link(linker, "kidney insufficiency")
    assert kept.probe is not None
    linker.add_names([("zzxq vvwj", "D3")])  # far from the query (no letters in common), a concept outside its pool
    assert linker.still_ranks(kept.probe)
    linker.add_names([("kidney insufficiency", "D5")])  # the query itself, under another concept
    assert not linker.still_ranks(kept.probe)
    kept = _link(linker, "kidney insufficiency")
    assert kept.candidates[0].concept_id == "D5" and kept.probe is not None
    linker.set_concept_prior({"D8": 3})
    assert not linker.still_ranks(kept.probe)


def test_a_change_the_log_no_longer_holds_is_not_vouched_for(minilm: TransformerEncoder) -> None:
    linker = Linker.build(RECORDS, minilm, CONFIG)
    kept = _link(linker, "headache")
    assert kept.probe is not None
    linker.changes = type(linker.changes)(size=2)
    for i in range(3):
        linker.add_names([(f"qq far name {i}", "D3")])
    assert not linker.still_ranks(kept.probe)  # three changes since, two remembered


@pytest.mark.parametrize("kind", ["hnsw"])
def test_an_approximate_index_gives_no_probe(minilm: TransformerEncoder, kind: str) -> None:
    linker = Linker.build(RECORDS, minilm, LinkerConfig(index=IndexConfig(kind=kind)))  # type: ignore[arg-type]
    assert _link(linker, "headache").probe is None
