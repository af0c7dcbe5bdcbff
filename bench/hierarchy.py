"""Benchmark: the HiPrBERT hierarchy protocol and term relatedness; prints one JSON object.

    python bench/hierarchy.py --encoder minilm=minilm --encoder synonym=var/artifacts/synonym-cpu \
        --encoder hiprbert=var/artifacts/hierarchy-cpu [--holdout 0.1] [--per-distance 1000] [--note "..."]

* Hierarchy (HiPrBERT section 4.2, Tables 3 and 4): for concepts of CTD MEDIC, HPO and DOID held out of
  training (``--holdout``: the same hash of the concept id that ``pretrain-hierarchy --holdout`` used, so the
  encoders under test never saw these concepts' names), pairs at distance 0 (synonyms), 1 (siblings),
  2 (parent-child) and 3 (other); ROC AUC of telling distance i from distance j by cosine for every i < j, and
  Spearman's correlation of cosine with -distance over those pairs.
* Relatedness: Spearman of cosine against the human means of UMNSRS (similarity, relatedness) and MayoSRS.

An encoder is ``label=path``: a folder from ``python -m linker pretrain-hierarchy`` (or any encoder folder),
or ``minilm`` (the shipped base model, zero-shot), or ``minilm:0,2,5`` (its 3-layer student, untrained).
Figures are appended to bench/RESULTS.md with the machine they ran on and the paper's table beside.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.rerank import DATA, describe_machine  # noqa: E402 (after the path is set)

HIERARCHIES = {
    "CTD_diseases": DATA / "medic" / "CTD_diseases.tsv.gz",
    "hp": DATA / "hpo" / "hp.obo.gz",
    "doid": DATA / "disease-ontology" / "doid.obo.gz",
}
# HiPrBERT, Table 3 (ROC AUC) and Table 4 (Spearman), on its own EHR hierarchies (PheCode, LOINC, RxNorm, CPT).
PAPER = {
    "SapBERT": {"auc": [0.636, 0.779, 0.967, 0.702, 0.971, 0.905], "spearman": [0.198, 0.483, 0.800, 0.294, 0.627, 0.693]},
    "HiPrBERT": {"auc": [0.657, 0.796, 0.986, 0.704, 0.977, 0.936], "spearman": [0.229, 0.512, 0.832, 0.298, 0.635, 0.747]},
}


def load_encoder(spec: str) -> Any:
    from linker.encoders.transformer import TransformerEncoder

    if spec == "minilm" or spec.startswith("minilm:"):
        layers = tuple(int(x) for x in spec.split(":", 1)[1].split(",")) if ":" in spec else None
        return TransformerEncoder(layers=layers)
    return TransformerEncoder.load(spec)


def relatedness_sets() -> dict[str, list[tuple[str, str, float]]]:
    """(term, term, human score) of UMNSRS similarity / relatedness and MayoSRS."""
    sets: dict[str, list[tuple[str, str, float]]] = {}
    for name, file in (("umnsrs_sim", "UMNSRS_similarity.csv"), ("umnsrs_rel", "UMNSRS_relatedness.csv")):
        with open(DATA / "umnsrs" / file, encoding="utf-8") as fh:
            sets[name] = [(r["Term1"], r["Term2"], float(r["Mean"])) for r in csv.DictReader(fh)]
    rows = [line.rstrip("\n").split("\t") for line in (DATA / "mayosrs" / "MayoSRS.txt").read_text().splitlines() if line.strip()]
    sets["mayosrs"] = [(a, b, float(s)) for a, b, s in rows]
    return sets


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from linker.data import iter_dictionary
    from linker.evaluate import spearman
    from linker.hierarchy.evaluation import held_out_pairs, hierarchy_scores
    from linker.hierarchy.graph import HierarchySource
    from linker.text import normalize

    torch.set_num_threads(args.threads)
    pairs: dict[str, list[tuple[str, str, int]]] = {}
    for name, path in HIERARCHIES.items():
        source = HierarchySource.from_records(name, iter_dictionary(path))
        _, held = source.split(args.holdout, args.seed)
        pairs[name] = held_out_pairs(source, held, args.per_distance, args.seed)
    related = relatedness_sets()
    result: dict[str, Any] = {"machine": describe_machine(), "holdout": args.holdout, "encoders": {}}
    for spec in args.encoder:
        label, path = spec.split("=", 1)
        encoder = load_encoder(path)
        t0 = time.perf_counter()

        def encode(texts: Any, encoder: Any = encoder) -> Any:
            return encoder.encode(list(texts))

        entry: dict[str, Any] = {"path": path, "layers": encoder.num_layers}
        for name, source_pairs in pairs.items():
            entry[name] = hierarchy_scores(encode, source_pairs)
        for name, rows in related.items():
            left = encode([normalize(a) for a, _, _ in rows])
            right = encode([normalize(b) for _, b, _ in rows])
            cosine = (np.asarray(left) * np.asarray(right)).sum(axis=1)
            entry[name] = spearman(cosine.tolist(), [s for _, _, s in rows])
        entry["seconds"] = time.perf_counter() - t0
        report = Path(path) / "training_report.json"
        if report.exists():
            rep = json.loads(report.read_text())
            entry["training"] = {k: rep.get(k) for k in ("distances", "scope", "epochs", "batch_size", "max_batches",
                                                          "holdout_share", "train_s", "encoder_layers")}
        result["encoders"][label] = entry
    return result


PAIRS = ("0_1", "0_2", "0_3", "1_2", "1_3", "2_3")


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## hierarchy (HiPrBERT protocol) — {stamp}", "", f"- machine: {result['machine']}",
             f"- command: `{command}`", f"- held-out share of concepts: {result['holdout']}"]
    if note:
        lines.append(f"- note: {note}")
    encoders = result["encoders"]
    for metric, title in (("auc", "ROC AUC"), ("spearman", "Spearman")):
        for source in HIERARCHIES:
            first = next(iter(encoders.values()))[source]
            counts = ", ".join(f"d{d}: {int(first.get(f'pairs_{d}', 0))}" for d in range(4))
            lines += ["", f"### {title} per distance pair, {source} held-out concepts ({counts})", "",
                      "| encoder | " + " | ".join(f"({p.replace('_', ',')})" for p in PAIRS) + " |",
                      "|---" * (len(PAIRS) + 1) + "|"]
            for label, entry in encoders.items():
                lines.append(f"| {label} | " + " | ".join(f"{entry[source][f'{metric}_{p}']:.3f}" for p in PAIRS) + " |")
            for label, paper in PAPER.items():
                lines.append(f"| *paper {label} (EHR hierarchies)* | " + " | ".join(f"*{v:.3f}*" for v in paper[metric]) + " |")
    lines += ["", "### Relatedness (Spearman of cosine vs human scores)", "",
              "| encoder | UMNSRS sim | UMNSRS rel | MayoSRS |", "|---|---|---|---|"]
    for label, entry in encoders.items():
        lines.append(f"| {label} | {entry['umnsrs_sim']:.3f} | {entry['umnsrs_rel']:.3f} | {entry['mayosrs']:.3f} |")
    for label, entry in encoders.items():
        if "training" in entry:
            lines.append(f"\n{label} training: `{json.dumps(entry['training'])}`")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", action="append", required=True, help="label=folder | label=minilm[:layers]")
    parser.add_argument("--holdout", type=float, default=0.1, help="the share held out when the encoders trained")
    parser.add_argument("--seed", type=int, default=13, help="the hold-out seed of training (and of the pair draw)")
    parser.add_argument("--per-distance", type=int, default=1000, help="pairs per distance and hierarchy")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--note", default="")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args(argv)
    if not all(p.exists() for p in HIERARCHIES.values()):
        print(json.dumps({"skipped": f"the hierarchies are not under {DATA}"}))
        return 0
    result = run(args)
    print(json.dumps(result, indent=2, default=str))
    if not args.no_results:
        command = "python bench/hierarchy.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
