"""The BioSyn protocol on the real NCBI Disease dev set (sparse only); needs ../shared/data."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from linker.data import iter_dictionary, iter_pubtator
from linker.dictionary import NameTable
from linker.protocol import EvalSetReport, build_eval_set, evaluate_sparse, training_pairs
from linker.sparse import SparseEncoder
from linker.text import Preprocessor, TextConfig

SHARED = Path(__file__).parents[2] / ".." / "shared" / "data"

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent (public data sets not on this machine)"),
]


def test_ncbi_dev_sparse_accuracy() -> None:
    t0 = time.perf_counter()
    cfg = TextConfig()
    pre = Preprocessor(cfg)
    table = NameTable.from_records(iter_dictionary(SHARED / "medic" / "medic_06Jul2012.txt"), cfg)
    assert len(table.concepts) == 11915
    train = iter_pubtator(SHARED / "ncbi-disease" / "NCBItrainset_corpus.txt")
    table.add(training_pairs(train, table, pre, unique=False))
    encoder = SparseEncoder().fit(table.names)
    report = EvalSetReport()
    dev = build_eval_set(iter_pubtator(SHARED / "ncbi-disease" / "NCBIdevelopset_corpus.txt"), table, pre, report=report)
    metrics = evaluate_sparse(dev, table, encoder, k=20)
    assert report.seen == 787
    assert metrics["n"] == report.kept >= 780
    assert metrics["acc@1"] >= 0.85, metrics
    assert metrics["acc@5"] >= metrics["acc@1"]
    assert time.perf_counter() - t0 < 30
