"""Benchmark: one trained tagger run by each runtime (torch, ONNX fp32, ONNX int8); print one JSON object.

    python bench/tagger_runtime.py --tagger var/artifacts/tagger-bc5cdr-gz [--corpus bc5cdr] [--documents 500]
        [--runtimes torch,onnx,onnx-int8] [--no-record]

For each runtime (linker.detect.onnx_tagger), the tagger detects the development split's mentions alone (no
matcher), one process on one compute thread, and is scored against the gold spans of the mention type it was
trained on (exact and overlapping P/R/F1, linker.detect.metrics). Speed is given twice: abstracts per CPU-second of
the process (what this shared machine measures steadily, whatever else runs) and per wall second. The issue's
bound (#45): exact-span F1 within 1 point of torch's. Figures are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "RESULTS.md"
DEV = {"bc5cdr": "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "ncbi": "ncbi-disease/NCBIdevelopset_corpus.txt"}
F1_BOUND = 0.01


def main(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from linker.data import iter_pubtator
    from linker.detect.metrics import span_prf
    from linker.detect.onnx_tagger import use_runtime
    from linker.detect.tagger import Tagger

    torch.set_num_threads(1)
    tagger = Tagger.load(args.tagger, device="cpu")
    types = set(tagger.mention_types)
    docs = list(iter_pubtator(args.data / DEV[args.corpus]))[: args.documents]
    texts = [f"{d.title}\n{d.abstract}" if d.abstract else d.title for d in docs]
    gold = [[(m.start, m.end) for m in d.mentions if not types or m.mention_type in types] for d in docs]
    load_start = round(os.getloadavg()[0], 1)
    cache = Path(tempfile.mkdtemp(prefix="bench-tagger-onnx-"))
    rows: dict[str, Any] = {}
    for runtime in args.runtimes:
        t0 = time.perf_counter()
        use_runtime(tagger, runtime, cache, threads=1)
        export_s = time.perf_counter() - t0
        tagger.predict(texts[:8])  # warm
        cpu0, wall0 = time.process_time(), time.perf_counter()
        predicted = tagger.predict(texts, batch_size=16)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        spans = [[(s.start, s.end) for s in one] for one in predicted]
        rows[runtime] = {
            "export_s": round(export_s, 1), "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
            "abstracts_per_cpu_s": round(len(texts) / cpu, 2), "abstracts_per_wall_s": round(len(texts) / wall, 2),
            "exact": {k: round(v, 4) for k, v in span_prf(gold, spans, "exact").items()},
            "overlap": {k: round(v, 4) for k, v in span_prf(gold, spans, "overlap").items()},
        }
        print(f"{runtime}: {json.dumps(rows[runtime])}", file=sys.stderr)
    base = rows.get("torch")
    for row in rows.values():
        if base is not None:
            row["speed_vs_torch_cpu"] = round(row["abstracts_per_cpu_s"] / base["abstracts_per_cpu_s"], 2)
            row["f1_vs_torch"] = round(row["exact"]["f1"] - base["exact"]["f1"], 4)
            row["within_bound"] = abs(row["f1_vs_torch"]) <= F1_BOUND
    result = {
        "benchmark": "tagger_runtime", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()}-core {platform.processor() or platform.machine()}, Python {platform.python_version()}",
        "load_avg_1m_at_start": load_start, "tagger": str(args.tagger), "corpus": args.corpus, "documents": len(docs),
        "mention_types": sorted(types), "threads": 1, "runtimes": rows, "note": args.note,
    }
    if args.record:
        append_results(result)
    return result


def append_results(result: dict[str, Any]) -> None:
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC tagger runtime (bench/tagger_runtime.py)",
        "",
        f"Machine: {result['machine']}, no GPU; 1-minute load average {result['load_avg_1m_at_start']} at the start "
        f"(a shared machine: compare the CPU-second figures, which other work disturbs least). {result['note']}".rstrip(),
        "",
        f"Tagger {result['tagger']} alone (no matcher) on {result['documents']} {result['corpus']} development "
        f"abstracts, one process, one compute thread, batches of 16 windows.",
        "",
        "| runtime | abstracts / CPU-s | abstracts / wall-s | speed vs torch | exact P / R / F1 | overlap F1 | F1 vs torch |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for runtime, row in result["runtimes"].items():
        e = row["exact"]
        lines.append(
            f"| {runtime} | {row['abstracts_per_cpu_s']} | {row['abstracts_per_wall_s']} | "
            f"{row.get('speed_vs_torch_cpu', '')} | {e['precision']:.3f} / {e['recall']:.3f} / **{e['f1']:.3f}** | "
            f"{row['overlap']['f1']:.3f} | {row.get('f1_vs_torch', 0):+.4f} |")
    lines += ["", f"Bound (issue #45): exact-span F1 within {F1_BOUND:.2f} of torch's."]
    with RESULTS.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tagger", type=Path, required=True, help="a tagger folder (python -m linker train-tagger)")
    parser.add_argument("--corpus", choices=sorted(DEV), default="bc5cdr")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--runtimes", type=lambda s: s.split(","), default=["torch", "onnx", "onnx-int8"])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", dest="record", action="store_false")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(main(parse()), indent=2))
