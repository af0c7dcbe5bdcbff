"""Benchmark: the LATTE re-ranker on NCBI Disease and BC5CDR-disease dev; print one JSON object.

    python bench/rerank.py --artifact-ncbi var/artifacts/ncbi-latte --artifact-bc5cdr var/artifacts/bc5cdr-latte \
        [--ablation f_only=var/artifacts/ncbi-latte-f ...] [--latency-mentions 200] [--note "..."]

Artifacts are made by ``python -m linker train-rerank`` (a linker with ``rerank/`` inside). Per dataset:

* end-to-end Acc@1 / Acc@5 (BioSyn protocol, composites right only if every part is) of the retriever alone
  and re-ranked, each mention read in its document; mentions/s of both;
* the LATTE protocol: P@1 and MAP over the retriever's top-10 per mention part, before and after
  re-ranking; for every ``--ablation name=artifact`` (NCBI) the same figures of that variant;
* latency of linking one mention at a time in its document (the candidate panel's linker call), p50/p95 ms,
  with and without the re-ranker, over ``--latency-mentions`` dev mentions.

Figures are appended to bench/RESULTS.md with the machine they ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data"
DATASETS: dict[str, dict[str, Any]] = {
    "ncbi": {"dev": DATA / "ncbi-disease" / "NCBIdevelopset_corpus.txt", "types": None,
             "dictionary": "medic_06Jul2012.txt"},
    "bc5cdr": {"dev": DATA / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt", "types": {"Disease"},
               "dictionary": "CTD_diseases.tsv.gz"},
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def protocol(artifact: Path, dev: Path, types: set[str] | None) -> dict[str, float]:
    """P@1 and MAP over the top-10, retriever vs re-ranked (the paper's Table 2 / 3 figures)."""
    from linker.data import iter_pubtator
    from linker.linker import Linker
    from linker.protocol import build_eval_set
    from linker.rerank.examples import examples_for
    from linker.rerank.training import PreparedExamples, evaluate_reranking

    linker = Linker.load(artifact, strict_rerank=True)
    assert linker.reranker is not None
    docs = list(iter_pubtator(dev))
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, types)
    examples = examples_for(linker, eval_set, {d.pmid: d.text for d in docs}, 10, linker.reranker.settings.window_words)
    data = PreparedExamples(examples, linker.reranker.states, linker.reranker.known_type_labels, linker.reranker.concept_types)
    return evaluate_reranking(linker.reranker, data, k=10)


def latency(artifact: Path, dev: Path, types: set[str] | None, n: int) -> dict[str, float]:
    from linker.data import iter_pubtator
    from linker.linker import Linker
    from linker.rerank import MentionSpan

    linker = Linker.load(artifact, strict_rerank=True)
    pairs = [(d, m) for d in iter_pubtator(dev) for m in d.mentions if types is None or m.mention_type in types][:n]
    out: dict[str, float] = {}
    for label, rerank in (("retriever", False), ("reranked", True)):
        times = []
        for doc, m in pairs:
            t0 = time.perf_counter()
            linker.link_in_context([MentionSpan(m.text, m.start, m.end)], doc.text, k=10, rerank=rerank)
            times.append((time.perf_counter() - t0) * 1000)
        out[f"{label}_p50_ms"] = statistics.median(times)
        out[f"{label}_p95_ms"] = percentile(times, 95)
    out["mentions"] = float(len(pairs))
    out["names"] = float(len(linker.table))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from linker.cli import evaluate_main

    result: dict[str, Any] = {"machine": describe_machine()}
    for name in [d for d in args.datasets.split(",") if d]:
        spec = DATASETS[name]
        artifact = getattr(args, f"artifact_{name}")
        if not artifact:
            continue
        artifact = Path(artifact)
        if args.latency_only:
            result[name] = {"latency": latency(artifact, spec["dev"], spec["types"], args.latency_mentions)}
            continue
        report = json.loads((artifact / "training_report.json").read_text()) if (artifact / "training_report.json").exists() else {}
        entry: dict[str, Any] = {
            "retriever": evaluate_main(artifact, [spec["dev"]], spec["types"], rerank=False),
            "reranked": evaluate_main(artifact, [spec["dev"]], spec["types"]),
            "protocol_top10": protocol(artifact, spec["dev"], spec["types"]),
            "latency": latency(artifact, spec["dev"], spec["types"], args.latency_mentions),
            "training": {k: report.get(k) for k in ("train_examples", "trainable_examples", "known_types",
                                                   "candidates_s", "token_states_s", "train_s", "total_s",
                                                   "epochs", "latent_types", "hidden", "top_k", "base_artifact")},
        }
        if name == "ncbi":
            entry["ablations"] = {}
            for spec_ab in args.ablation:
                label, folder = spec_ab.split("=", 1)
                entry["ablations"][label] = protocol(Path(folder), spec["dev"], spec["types"])
        result[name] = entry
    return result


def describe_machine() -> str:
    """The CPU and GPU, as bench/linking.py describes them (no database is involved here)."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{os.cpu_count()}-core CPU ({platform.processor() or platform.machine()}), {gpu}, "
            f"torch threads {torch.get_num_threads()}, Python {platform.python_version()}")


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## rerank (LATTE) — {stamp}", "", f"- machine: {result['machine']}", f"- command: `{command}`"]
    if note:
        lines.append(f"- note: {note}")
    for name in ("ncbi", "bc5cdr"):
        if name not in result:
            continue
        e = result[name]
        if "retriever" not in e:
            lines += ["", f"### {name} dev: latency only (one mention in its document, k=10)", "", f"`{json.dumps(e['latency'])}`"]
            continue
        lines += ["", f"### {name} dev", "", "| system | Acc@1 | Acc@5 | mentions/s |", "|---|---|---|---|"]
        for label in ("retriever", "reranked"):
            m = e[label]
            lines.append(f"| {label} | {m['acc@1']:.4f} | {m['acc@5']:.4f} | {m['mentions_per_s']:.0f} |")
        lines += ["", "LATTE protocol, top-10 per mention part:", "", "| variant | P@1 | MAP |", "|---|---|---|"]
        p = e["protocol_top10"]
        lines.append(f"| retriever order | {p['retriever_p@1']:.4f} | {p['retriever_map']:.4f} |")
        lines.append(f"| LATTE (full) | {p['reranked_p@1']:.4f} | {p['reranked_map']:.4f} |")
        for label, ab in e.get("ablations", {}).items():
            lines.append(f"| {label} | {ab['reranked_p@1']:.4f} | {ab['reranked_map']:.4f} |")
        lines += ["", f"latency (one mention in its document, k=10): `{json.dumps(e['latency'])}`",
                  f"training: `{json.dumps(e['training'], default=str)}`"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="ncbi,bc5cdr")
    parser.add_argument("--artifact-ncbi")
    parser.add_argument("--artifact-bc5cdr")
    parser.add_argument("--ablation", action="append", default=[], help="name=artifact (NCBI), repeatable")
    parser.add_argument("--latency-mentions", type=int, default=200)
    parser.add_argument("--latency-only", action="store_true", help="only the per-mention latency (a quiet machine)")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2, default=str))
    if not args.no_results:
        command = "python bench/rerank.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
