"""Benchmark: is the linker's top-1 confidence calibrated, and what would auto-accept at a threshold do? (issue #15)

    python bench/confidence.py [--artifact DIR] [--corpus ncbi|bc5cdr ...] [--folds 2] [--no-record]

For each corpus (NCBI Disease dev with MEDIC 2012, BC5CDR-disease dev with CTD MEDIC), the linker ranks every gold
mention (BioSyn protocol: composites split, abbreviations resolved); the documents are split into ``--folds``
folds; a calibration (:mod:`linker.calibration`) is fitted on the other folds and scored on each held-out fold, so
no figure is measured on the mentions it was fitted on. Reported per corpus: Acc@1, expected calibration error and
Brier score on held-out mentions, and for each threshold the share of mentions auto-accepted and their precision
(mention level: a composite counts when every part is right, with the product of its parts' confidences).

``--artifact`` is a linker folder (``python -m linker build-index`` / ``train``) used for every corpus; without it
a tf-idf linker over each corpus's dictionary is built on the spot (seconds; the dense hybrid needs a built index).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "RESULTS.md"
CORPORA = {
    "ncbi": ("ncbi-disease/NCBIdevelopset_corpus.txt", "medic/medic_06Jul2012.txt", None),
    "bc5cdr": ("bc5cdr/CDR_DevelopmentSet.PubTator.txt", "medic/CTD_diseases.tsv.gz", {"Disease"}),
}
THRESHOLDS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99)


def measure(corpus: str, data: Path, artifact: Path | None, folds: int) -> dict[str, Any]:
    from linker.calibration import (
        fit_calibration,
        labelled_examples,
        part_features,
        precision_above,
        reliability,
    )
    from linker.config import LinkerConfig
    from linker.data import iter_dictionary, iter_pubtator
    from linker.linker import Linker
    from linker.protocol import build_eval_set
    from linker.retrieval import RetrievalConfig

    gold_file, dictionary, types = CORPORA[corpus]
    t0 = time.perf_counter()
    if artifact is not None:
        linker = Linker.load(artifact)
    else:
        linker = Linker.build(list(iter_dictionary(data / dictionary)), None, LinkerConfig(retrieval=RetrievalConfig(mode="sparse")))
    docs = list(iter_pubtator(data / gold_file))
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, types)
    queries = [m.queries for m in eval_set]
    ranked = linker.link_queries(queries, 20)
    link_s = time.perf_counter() - t0
    pmids = sorted({m.pmid for m in eval_set})
    fold_of = {pmid: i % folds for i, pmid in enumerate(pmids)}
    normalize = linker.preprocessor.normalize
    probs: list[float] = []
    right: list[bool] = []
    for fold in range(folds):
        fit_rows = [i for i, m in enumerate(eval_set) if fold_of[m.pmid] != fold]
        test_rows = [i for i, m in enumerate(eval_set) if fold_of[m.pmid] == fold]
        calibration = fit_calibration(labelled_examples([queries[i] for i in fit_rows], [ranked[i] for i in fit_rows],
                                                        [eval_set[i].gold_parts for i in fit_rows], normalize))
        for i in test_rows:
            parts = list(zip(queries[i], ranked[i], strict=False))
            probs.append(math.prod(calibration.probability(part_features(q, c, normalize)) for q, c in parts))
            right.append(all(c and c[0].concept_id in g for (q, c), g in zip(parts, eval_set[i].gold_parts, strict=False)))
    return {
        "mentions": len(eval_set),
        "linker": str(artifact) if artifact else "tf-idf over the dictionary (sparse)",
        "acc@1": round(sum(right) / len(right), 4),
        **{k: round(v, 4) for k, v in reliability(probs, right).items() if k != "examples"},
        "auto_accept": [{k: round(v, 4) for k, v in precision_above(probs, right, t).items()} for t in THRESHOLDS],
        "link_s": round(link_s, 1),
    }


def append_results(result: dict[str, Any]) -> None:
    lines = [f"\n## confidence calibration and auto-accept ({result['date']})\n",
             f"- machine: {result['machine']}; {result['folds']}-fold cross-fitting by document (fitted on the other folds)"]
    for corpus, r in result["corpora"].items():
        lines.append(f"- {corpus} dev ({r['mentions']} mentions, {r['linker']}): Acc@1 {r['acc@1']:.4f}, "
                     f"ECE {r['ece']:.4f}, Brier {r['brier']:.4f}")
        lines.append("  | threshold | accepted | precision |")
        lines.append("  |---|---|---|")
        for a in r["auto_accept"]:
            lines.append(f"  | {a['threshold']} | {a['accepted']:.3f} | {a['precision']:.4f} |")
    if result["note"]:
        lines.append(f"- note: {result['note']}")
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main() -> int:
    import os
    import platform

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--artifact", type=Path)
    parser.add_argument("--corpus", nargs="+", choices=list(CORPORA), default=list(CORPORA))
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", dest="record", action="store_false")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = {
        "benchmark": "confidence",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        "folds": args.folds,
        "note": args.note,
        "corpora": {c: measure(c, args.data, args.artifact, args.folds) for c in args.corpus},
    }
    if args.record:
        append_results(result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
