"""Benchmark: names/s of an index build on whatever device is there (CUDA where torch sees a GPU); prints JSON and
appends a dated table to bench/RESULTS.md.

    python bench/gpu_encode.py [--dictionary /work/shared/data/medic/CTD_diseases.tsv.gz] [--encoder FOLDER]
        [--device auto] [--batch-sizes 64,256,1024,4096] [--limit N] [--runs 3] [--note "..."] [--no-results]

Two measures, both over the dictionary's distinct names (the issue's figure: a 78K-name MEDIC build that ran more
than 7 minutes on 11 CPU cores with an H100 idle):

* ``encode``: names/s of ``linker.retrieval.encode_names`` at each batch size asked (the batch the encoder runs
  is ``linker.device.encode_batch_size``: at most 64 on a CPU, at least 1,024 on CUDA, so on a CPU every size
  above 64 runs as 64), median of ``--runs``, after a warm-up batch; peak GPU memory on CUDA.
* ``build``: one ``Linker.build`` (tf-idf, encoding at the device's own batch size, faiss flat index) as
  ``python -m linker build-index`` and the web app's index builds run it: seconds, names/s, and the device and
  batch the artifact's config records.

The device is ``linker.device.choose_device(--device)``: ``LINKER_DEVICE=cpu`` or ``--device cpu`` measures the CPU
on a GPU machine, for the comparison. On the lent GPU machine (see shared/docs/GPU.md) faiss and MiniLM must be
carried there; ``--encoder`` then names the MiniLM folder (or set ``LINKER_BASE_MODEL``).
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
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEFAULT_DICTIONARY = Path("/work/shared/data/medic/CTD_diseases.tsv.gz")


def describe_machine() -> str:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{os.cpu_count()}-core CPU ({platform.processor() or platform.machine()}), {gpu}, torch {torch.__version__} "
            f"threads {torch.get_num_threads()}, Python {platform.python_version()}; "
            f"1-minute load average {os.getloadavg()[0]:.1f} at the start")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from linker.config import LinkerConfig
    from linker.data import iter_dictionary
    from linker.device import choose_device, device_label
    from linker.dictionary import NameTable
    from linker.encoders.registry import load_encoder
    from linker.encoders.transformer import TransformerEncoder
    from linker.linker import Linker
    from linker.retrieval import encode_names

    machine = describe_machine()
    device = choose_device(args.device)
    records = list(iter_dictionary(args.dictionary))
    table = NameTable.from_records(records[: args.limit] if args.limit else records)
    names = list(dict.fromkeys(table.names))
    encoder = load_encoder(args.encoder, device=device) if args.encoder else TransformerEncoder()
    if not isinstance(encoder, TransformerEncoder):
        raise SystemExit(f"{args.encoder}: a transformer encoder folder is needed (BNE and DAN stay on the CPU)")
    encoder.place(device)
    cuda = encoder.encode_device.type == "cuda"
    result: dict[str, Any] = {"machine": machine, "device": device_label(encoder.encode_device),
                              "dictionary": str(args.dictionary), "names": len(table), "distinct_names": len(names),
                              "encoder": str(args.encoder or encoder.model_path), "encode": []}
    encoder.encode(names[:1000], batch_size=max(args.batch_sizes))  # warm-up: kernels, allocator, tokenizer
    for size in args.batch_sizes:
        times = []
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for _ in range(args.runs):
            t0 = time.perf_counter()
            encode_names(encoder, names, batch_size=size)  # vectors come back to the CPU: the GPU is done
            times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        row = {"batch_asked": size, "batch_run": encoder.run_batch_size(size), "seconds": round(median, 2),
               "names_per_s": round(len(names) / median), "runs_s": [round(t, 2) for t in times]}
        if cuda:
            row["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
        result["encode"].append(row)
    t0 = time.perf_counter()
    linker = Linker.build(table, encoder, LinkerConfig())
    build_s = time.perf_counter() - t0
    result["build"] = {"seconds": round(build_s, 1), "names_per_s": round(len(table) / build_s),
                       "encode_device": linker.metadata["encode_device"],
                       "encode_batch_size": linker.metadata["encode_batch_size"],
                       "dense_build_s": round(linker.metadata["dense_build_s"], 1)}
    return result


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    b = result["build"]
    lines = [f"## index build encoding by device (bench/gpu_encode.py) — {stamp}", "",
             f"- machine: {result['machine']}", f"- device: {result['device']}", f"- command: `{command}`",
             f"- data: {result['dictionary']}: {result['names']:,} names, {result['distinct_names']:,} distinct; "
             f"encoder {result['encoder']}"]
    if note:
        lines.append(f"- note: {note}")
    lines += ["", "| batch asked | batch run | seconds (median) | names/s | peak GPU MiB | runs (s) |",
              "|---:|---:|---:|---:|---:|---|"]
    for row in result["encode"]:
        lines.append(f"| {row['batch_asked']} | {row['batch_run']} | {row['seconds']} | {row['names_per_s']:,} | "
                     f"{row.get('peak_gpu_mib', '-')} | {', '.join(map(str, row['runs_s']))} |")
    lines += ["", f"Index build (Linker.build: tf-idf + encoding + faiss flat) on {b['encode_device']}, batches of "
              f"{b['encode_batch_size']}: {b['seconds']} s ({b['names_per_s']:,} names/s; dense part {b['dense_build_s']} s).",
              ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dictionary", type=Path, default=DEFAULT_DICTIONARY, help="MEDIC TSV, DNorm text or OBO")
    parser.add_argument("--encoder", help="a transformer encoder folder (default: the base model)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: LINKER_DEVICE, else cuda if there is one)")
    parser.add_argument("--batch-sizes", default="64,256,1024,4096",
                        type=lambda s: [int(x) for x in s.split(",") if x.strip()])
    parser.add_argument("--limit", type=int, default=0, help="only the first N concepts of the dictionary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--note", default="")
    parser.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    if not args.dictionary.exists():
        raise SystemExit(f"--dictionary {args.dictionary}: no such file")
    result = run(args)
    print(json.dumps(result, indent=2))
    if not args.no_results:
        command = "python bench/gpu_encode.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
