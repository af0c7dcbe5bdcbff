"""The BioSyn protocol on a tiny corpus: queries, gold parts, exclusions, merged training mentions."""

from __future__ import annotations

from linker.data import ConceptRecord, GoldMention, PubTatorDocument, Synonym
from linker.dictionary import NameTable
from linker.protocol import EvalSetReport, build_eval_set, evaluate_sparse, rank_concepts, training_pairs
from linker.sparse import SparseEncoder
from linker.text import Preprocessor

RECORDS = [
    ConceptRecord("D001943", "Breast Neoplasms", (Synonym("breast cancer"),)),
    ConceptRecord("D010051", "Ovarian Neoplasms", (Synonym("ovarian cancer"),)),
    ConceptRecord("D003123", "Colorectal Neoplasms, Hereditary Nonpolyposis", (Synonym("Lynch syndrome"),)),
    ConceptRecord("D009223", "Myotonic Dystrophy", (Synonym("DM"),)),
    ConceptRecord("OMIM:160900", "Dystrophia myotonica 1", (Synonym("DM"),)),
]


def _doc(pmid: str, text: str, mentions: list[tuple[str, str, str]]) -> PubTatorDocument:
    out = []
    for mention, mtype, ids in mentions:
        start = text.index(mention)
        parts = tuple(tuple(p.split("+")) for p in ids.split("|")) if ids != "-1" else ()
        out.append(GoldMention(start, start + len(mention), mention, mtype, ids, parts))
    return PubTatorDocument(pmid=pmid, title=text, abstract="", mentions=tuple(out))


DEV = [
    _doc(
        "1",
        "Hereditary nonpolyposis colorectal cancer (HNPCC) and breast and ovarian cancer. HNPCC is common. "
        "Gene X disease was seen.",
        [
            ("HNPCC", "SpecificDisease", "D003123"),
            # annotated in the other order than the text: aligned by dictionary similarity
            ("breast and ovarian cancer", "CompositeMention", "D010051|D001943"),
            ("Gene X disease", "SpecificDisease", "D999999"),
        ],
    ),
    _doc("2", "No concept for this tumour.", [("tumour", "DiseaseClass", "-1")]),
]
TRAIN = [_doc("3", "DM is frequent.", [("DM", "SpecificDisease", "D009223")])]


def _table() -> NameTable:
    return NameTable.from_records(RECORDS)


def test_build_eval_set_rules_and_report() -> None:
    table, report = _table(), EvalSetReport()
    es = build_eval_set(DEV, table, Preprocessor(), report=report)
    assert [e.text for e in es] == ["HNPCC", "breast and ovarian cancer"]
    hnpcc, composite = es
    assert hnpcc.queries == ["hereditary nonpolyposis colorectal cancer"]
    assert composite.queries == ["breast cancer", "ovarian cancer"]
    assert composite.gold_parts == [frozenset({"D001943"}), frozenset({"D010051"})]
    assert (report.seen, report.kept, report.nil, report.unresolved) == (4, 2, 1, 1)
    assert report.unresolved_ids == {"D999999": 1}


def test_unsplit_query_when_part_counts_differ_and_unresolved_kept_on_request() -> None:
    table = _table()
    doc = _doc("4", "breast or ovarian cancer", [("breast or ovarian cancer", "Modifier", "D001943")])
    [em] = build_eval_set([doc], table, Preprocessor())
    assert em.queries == ["breast or ovarian cancer"]
    assert em.gold_parts == [frozenset({"D001943"})]
    kept = build_eval_set(DEV, table, Preprocessor(), drop_unresolved=False)
    assert kept[-1].gold_parts == [frozenset({"D999999"})]


def test_training_pairs_and_tie_breaking_by_merged_support() -> None:
    table = _table()
    pairs = training_pairs(TRAIN, table, Preprocessor())
    assert pairs == [("dm", "D009223")]
    assert training_pairs(TRAIN * 2, table, Preprocessor()) == [("dm", "D009223")]
    assert training_pairs(TRAIN * 2, table, Preprocessor(), unique=False) == [("dm", "D009223")] * 2
    table.add(pairs)
    rows = [i for i, n in enumerate(table.names) if n == "dm"]
    # Both concepts have the name "dm" with the same score; the merged training mention decides.
    ranked = rank_concepts(rows[::-1], [1.0] * len(rows), table, k=2)
    assert [cid for cid, _, _ in ranked] == ["D009223", "OMIM:160900"]


def test_evaluate_sparse_end_to_end() -> None:
    table = _table()
    enc = SparseEncoder().fit(table.names)
    es = build_eval_set(DEV, table, Preprocessor())
    metrics = evaluate_sparse(es, table, enc, k=5)
    assert metrics["acc@1"] == 1.0
    assert metrics["n"] == 2
    assert metrics["acc@1/CompositeMention"] == 1.0
