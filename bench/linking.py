"""Linking benchmark (BioSyn protocol) and speed figures; prints ONE JSON object and appends a dated
section to bench/RESULTS.md.

    python bench/linking.py                                  # everything (trained artifacts from var/artifacts)
    python bench/linking.py --quick                          # 20 dev documents, 5K-name build-speed sample
    python bench/linking.py --datasets ncbi --systems sparse,hybrid --artifact-ncbi var/artifacts/ncbi-biosyn

Datasets: NCBI Disease dev with medic_06Jul2012.txt, BC5CDR Disease dev with CTD_diseases.tsv.gz; training
mentions of the train split are merged into the dictionary (BioSyn protocol). Systems: ``sparse`` (char
tf-idf only), ``dense`` (MiniLM zero-shot, dense scores only), ``hybrid`` (a trained artifact folder; with
``--train`` one is trained first with ``python -m linker train`` defaults: on a CPU the 3-layer student),
also scored dense-only and with int8 names and queries.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = ROOT.parent / "shared" / "data"
DATASETS: dict[str, dict[str, Any]] = {
    "ncbi": {
        "dictionary": DATA / "medic" / "medic_06Jul2012.txt",
        "train": [DATA / "ncbi-disease" / "NCBItrainset_corpus.txt"],
        "dev": [DATA / "ncbi-disease" / "NCBIdevelopset_corpus.txt"],
        "types": None,
        "artifact": ROOT / "var" / "artifacts" / "ncbi-biosyn",
        "cache": ROOT / "var" / "cache" / "features-medic",
    },
    "bc5cdr": {
        "dictionary": DATA / "medic" / "CTD_diseases.tsv.gz",
        "train": [DATA / "bc5cdr" / "CDR_TrainingSet.PubTator.txt"],
        "dev": [DATA / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"],
        "types": {"Disease"},
        "artifact": ROOT / "var" / "artifacts" / "bc5cdr-biosyn",
        "cache": ROOT / "var" / "cache" / "features-ctd",
    },
}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _evaluate(linker: Any, eval_set: list[Any], k: int = 20) -> dict[str, float]:
    from linker.evaluate import evaluate_linking

    t0 = time.perf_counter()
    ranked = linker.link_queries([m.queries for m in eval_set], k)
    elapsed = time.perf_counter() - t0
    metrics = evaluate_linking(
        [m.gold_parts for m in eval_set], [[[c.concept_id for c in part] for part in parts] for parts in ranked]
    )
    out = {key: round(float(v), 4) for key, v in metrics.items() if key in ("acc@1", "acc@5", "mrr")}
    out["mentions"] = len(eval_set)
    out["link_s"] = round(elapsed, 2)
    return out


def _train_artifact(name: str, spec: dict[str, Any], out: Path, threads: int, base_model: str | None = None) -> None:
    cmd = [sys.executable, "-m", "linker", "train", "--dictionary", str(spec["dictionary"]), "--train",
           *map(str, spec["train"]), "--out", str(out), "--threads", str(threads), "--feature-cache",
           str(spec["cache"]), "--log", str(out / "progress.jsonl")]
    if base_model:  # e.g. a pretrain-hierarchy folder: BioSyn starts from it instead of MiniLM
        cmd += ["--base-model", base_model]
    if spec["types"]:
        cmd += ["--mention-types", ",".join(sorted(spec["types"]))]
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def run_dataset(name: str, systems: list[str], args: argparse.Namespace) -> dict[str, Any]:
    from linker.config import LinkerConfig
    from linker.data import iter_dictionary, iter_pubtator
    from linker.dictionary import NameTable
    from linker.encoders import TransformerEncoder
    from linker.linker import Linker
    from linker.protocol import build_eval_set, training_pairs
    from linker.retrieval import RetrievalConfig
    from linker.text import Preprocessor, TextConfig

    spec = DATASETS[name]
    text_cfg = TextConfig()
    pre = Preprocessor(text_cfg)
    dev_docs = [d for p in spec["dev"] for d in iter_pubtator(p)]
    if args.quick:
        dev_docs = dev_docs[:20]
    result: dict[str, Any] = {"dictionary": spec["dictionary"].name, "dev_documents": len(dev_docs)}
    table: NameTable | None = None
    if "sparse" in systems or "dense" in systems:
        table = NameTable.from_records(iter_dictionary(spec["dictionary"]), text_cfg)
        train_docs = [d for p in spec["train"] for d in iter_pubtator(p)]
        merged = table.add(training_pairs(train_docs, table, pre, spec["types"]))
        result["names"] = len(table)
        result["merged_train_names"] = len(merged)
        eval_set = build_eval_set(dev_docs, table, pre, spec["types"])
    if "sparse" in systems:
        assert table is not None
        linker = Linker.build(table, None, LinkerConfig(text=text_cfg, retrieval=RetrievalConfig(mode="sparse")))
        result["sparse"] = _evaluate(linker, eval_set)
    if "dense" in systems:
        assert table is not None
        encoder = TransformerEncoder()
        config = LinkerConfig(text=text_cfg, retrieval=RetrievalConfig(mode="dense"))
        linker = Linker.build(table, encoder, config, feature_cache=spec["cache"])
        result["dense_zero_shot"] = _evaluate(linker, eval_set)
        # The same untrained encoder with tf-idf (λ = 1 on cos·20): what training adds over a plain sum.
        linker.retriever.config = replace(linker.retriever.config, mode="hybrid", sparse_weight=1.0)
        result["hybrid_untrained_lambda1"] = _evaluate(linker, eval_set)
    if "hybrid" in systems:
        artifact = Path(getattr(args, f"artifact_{name}") or spec["artifact"])
        if not (artifact / "config.json").exists():
            if not args.train:
                result["hybrid"] = {"error": f"no artifact at {artifact}; pass --train or --artifact-{name}"}
                return result
            _train_artifact(name, spec, artifact, args.threads, args.base_model)
        linker = Linker.load(artifact)
        trained_eval = build_eval_set(dev_docs, linker.table, pre, spec["types"])
        result["hybrid"] = _evaluate(linker, trained_eval)
        result["hybrid"]["artifact"] = str(artifact.relative_to(ROOT) if artifact.is_relative_to(ROOT) else artifact)
        result["hybrid"]["sparse_weight"] = round(linker.sparse_weight, 3)
        linker.retriever.config = replace(linker.retriever.config, mode="dense")
        result["hybrid_artifact_dense_only"] = _evaluate(linker, trained_eval)
        if linker.encoder is not None and not args.no_int8:
            # The same artifact with int8 dynamic quantisation for names *and* queries (LinkerConfig.quantize):
            # what its speed figures cost in accuracy.
            t0 = time.perf_counter()
            int8 = Linker.build(linker.table, TransformerEncoder.load(artifact / "encoder"),
                                replace(linker.config, quantize=True))
            build_s = time.perf_counter() - t0
            int8.retriever.concept_prior = linker.retriever.concept_prior
            result["hybrid_int8"] = _evaluate(int8, trained_eval) | {"index_build_s": round(build_s, 1)}
        report_path = artifact / "training_report.json"
        if report_path.exists():
            report = json.loads(report_path.read_text())
            epochs = report.get("biosyn") or []
            scope = report.get("scope", "head")
            layers = report.get("encoder_layers", 6)
            result["training"] = {
                "base_model": report.get("base_model"),
                "scope": (f"{scope}: full fine-tuning of a {layers}-layer MiniLM" if scope in ("full", "student")
                          else "head: frozen MiniLM + projection head (see BioSynConfig.train_scope)"),
                "training_queries": report.get("training_queries"),
                "pretrain_s": round(report.get("pretrain_s", 0.0), 1),
                "biosyn_s": round(report.get("biosyn_s", 0.0), 1),
                "train_total_s": round(report.get("train_total_s", 0.0), 1),
                "biosyn_epochs": len(epochs),
                "biosyn_step_mentions_per_s": round(statistics.median(e["mentions_per_s"] for e in epochs), 1)
                if epochs else None,
                "biosyn_mentions_per_s_incl_reretrieval": round(
                    sum(e["items"] for e in epochs) / max(sum(e["train_s"] + e["prepare_s"] for e in epochs), 1e-9), 1)
                if epochs else None,
                "final_candidate_recall@20": epochs[-1].get("candidate_recall") if epochs else None,
            }
    return result


def run_speed(args: argparse.Namespace) -> dict[str, Any]:
    """Index build (names/s, fresh MiniLM pass over MEDIC names), retrieval (mentions/s, batched, top-20)."""
    import numpy as np

    from linker.data import iter_dictionary, iter_pubtator
    from linker.dictionary import NameTable
    from linker.encoders import TransformerEncoder
    from linker.index import DenseIndex
    from linker.linker import Linker
    from linker.protocol import build_eval_set
    from linker.retrieval import encode_names
    from linker.text import TextConfig

    out: dict[str, Any] = {}
    spec = DATASETS["ncbi"]
    table = NameTable.from_records(iter_dictionary(spec["dictionary"]), TextConfig())
    names = table.names
    if args.build_names and args.build_names < len(names):
        rng = np.random.default_rng(0)
        names = [names[i] for i in sorted(rng.choice(len(names), args.build_names, replace=False))]
    artifact = Path(args.artifact_ncbi or spec["artifact"])
    # The base MiniLM-L6 (zero-shot) and the trained artifact's encoder (which may be a shallower student).
    encoders: list[tuple[str, Any]] = [("minilm_l6", lambda: TransformerEncoder())]
    if (artifact / "encoder").is_dir():
        encoders.append(("artifact", lambda: TransformerEncoder.load(artifact / "encoder")))
    for enc_label, make in encoders:
        for label, quantize in (("float32", False), ("int8", True)):
            if label not in args.build_precisions:
                continue
            encoder = make()
            if quantize:
                encoder.quantize()
            t0 = time.perf_counter()
            index = DenseIndex.build(encode_names(encoder, names, batch_size=512))
            elapsed = time.perf_counter() - t0
            out[f"index_build_{enc_label}_{label}"] = {
                "names": len(names), "distinct": len(set(names)), "layers": encoder.num_layers,
                "seconds": round(elapsed, 1), "names_per_s": round(len(names) / elapsed, 1)}
            del index
    if (artifact / "config.json").exists():
        dev_docs = [d for p in spec["dev"] for d in iter_pubtator(p)]
        for label, quantize in (("float32", False), ("int8", True)):
            if label not in args.precisions:
                continue
            linker = Linker.load(artifact)
            if quantize and linker.encoder is not None:
                linker.encoder.quantize()  # queries only: a speed figure, not an accuracy one
            eval_set = build_eval_set(dev_docs, linker.table, linker.preprocessor, None)
            queries = [q for m in eval_set for q in m.queries]
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                linker.retriever.retrieve(queries, 20)
                runs.append(len(queries) / (time.perf_counter() - t0))
            out[f"retrieval_{label}"] = {"queries": len(queries), "distinct": len(set(queries)),
                                         "mentions_per_s_median": round(statistics.median(runs), 1),
                                         "runs": [round(r, 1) for r in runs]}
            # Without repeats: every query distinct (dedup inside retrieve does not help here).
            distinct = list(dict.fromkeys(queries))
            t0 = time.perf_counter()
            linker.retriever.retrieve(distinct, 20)
            out[f"retrieval_{label}"]["distinct_mentions_per_s"] = round(len(distinct) / (time.perf_counter() - t0), 1)
    return out


def _append_results(result: dict[str, Any], argv: list[str]) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    lines = []
    if not path.exists():
        lines += ["# Benchmark results", "", "Dated sections appended by the bench/ scripts; newest last.", ""]
    lines += [f"## linking — {result['date']}", "", f"- machine: {result['machine']}",
              f"- command: `python bench/linking.py {' '.join(argv)}`".rstrip(), ""]
    for name in ("ncbi", "bc5cdr"):
        if name not in result:
            continue
        r = result[name]
        lines.append(f"### {name} dev ({r.get('dictionary')}, {r.get('dev_documents')} documents)")
        lines.append("")
        lines.append("| system | Acc@1 | Acc@5 | mentions |")
        lines.append("|---|---|---|---|")
        for system in ("sparse", "dense_zero_shot", "hybrid_untrained_lambda1", "hybrid", "hybrid_artifact_dense_only",
                       "hybrid_int8"):
            if system in r and "acc@1" in r[system]:
                s = r[system]
                lines.append(f"| {system} | {s['acc@1']:.4f} | {s['acc@5']:.4f} | {s['mentions']} |")
        if "training" in r:
            lines += ["", f"training: `{json.dumps(r['training'])}`"]
        lines.append("")
    if "speed" in result:
        lines += ["### speed", "", "```json", json.dumps(result["speed"], indent=2), "```", ""]
    lines += [f"peak RSS: {result['peak_rss_mb']} MB", ""]
    if result.get("note"):
        lines += [f"note: {result['note']}", ""]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="ncbi,bc5cdr")
    parser.add_argument("--systems", default="sparse,dense,hybrid")
    parser.add_argument("--artifact-ncbi")
    parser.add_argument("--artifact-bc5cdr")
    parser.add_argument("--train", action="store_true", help="train missing artifacts first")
    parser.add_argument("--base-model", help="with --train: the base encoder BioSyn starts from (default MiniLM)")
    parser.add_argument("--quick", action="store_true", help="20 dev documents, 5K-name build sample")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 accuracy of the trained artifact")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--build-names", type=int, default=0, help="names for the index-build timing (0: all)")
    parser.add_argument("--precisions", default="float32,int8", help="for the retrieval timing")
    parser.add_argument("--build-precisions", default="float32,int8", help="for the index-build timing")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    parser.add_argument("--note", default="", help="a sentence appended to the RESULTS.md section")
    args = parser.parse_args(argv)
    if args.quick and not args.build_names:
        args.build_names = 5000
    args.precisions = set(args.precisions.split(","))
    args.build_precisions = set(args.build_precisions.split(","))
    import torch

    torch.set_num_threads(args.threads)
    result: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        # The load says whether anything else ran beside this benchmark (it used to claim a shared machine always).
        "machine": f"{os.cpu_count()}-core CPU, no GPU ({platform.processor() or platform.machine()}, torch threads {args.threads}; "
                   f"1-minute load average {os.getloadavg()[0]:.1f} at the start)",
    }
    systems = [s for s in args.systems.split(",") if s]
    if not args.speed_only:
        for name in [d for d in args.datasets.split(",") if d]:
            t0 = time.perf_counter()
            result[name] = run_dataset(name, systems, args)
            result[name]["wall_s"] = round(time.perf_counter() - t0, 1)
    if not args.no_speed:
        result["speed"] = run_speed(args)
    result["peak_rss_mb"] = round(_rss_mb(), 1)
    if args.note:
        result["note"] = args.note
    print(json.dumps(result, indent=2))
    if not args.no_results:
        _append_results(result, list(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
