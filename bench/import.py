"""Benchmark: import the full CTD MEDIC file and HPO into a throwaway database; print one JSON object.

    python bench/import.py [--runs 3] [--data ../shared/data] [--no-record]

A fresh database is created on the configured PostgreSQL server (the embedded one, or ``DATABASE_URL``'s),
migrated, used and dropped, so the project's own data is never touched. Every run starts from empty
dictionary tables (the realistic worst case is a first import; later releases add to bigger indexes, which
costs a little more). Figures are medians over ``--runs``; they are appended as a dated section, with the
machine they ran on, to bench/RESULTS.md (append only: other benchmarks write to the same file).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
FILES = {"CTD_diseases.tsv.gz": ("medic", "bench-medic"), "hp.obo.gz": ("hpo", "bench-hpo")}


@dataclass(frozen=True)
class Config:
    runs: int = 3
    data: Path = ROOT.parent / "shared" / "data"
    record: bool = True


def main(cfg: Config) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.db import connection

    paths = {name: cfg.data / folder / name for name, (folder, _) in FILES.items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"missing data files: {', '.join(missing)}")

    machine = describe_machine(connection)
    load = round(os.getloadavg()[0], 1)  # the machine is shared: a busy neighbour shows in the figures
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_import_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        timings = {name: [run_once(path, FILES[name][1]) for _ in range(cfg.runs)] for name, path in paths.items()}
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)

    result = {
        "benchmark": "dictionary_import",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "load_avg_1m_at_start": load,
        "runs": cfg.runs,
        "files": {name: summarise(runs) for name, runs in timings.items()},
    }
    if cfg.record:
        append_results(result)
    return result


def run_once(path: Path, slug: str) -> dict[str, Any]:
    from django.db import connection

    from webapp.vocab.importers import import_dictionary

    with connection.cursor() as cursor:  # the throwaway database: start every run from empty tables
        cursor.execute("TRUNCATE vocab_dictionary, vocab_knowntypevocabulary RESTART IDENTITY CASCADE")
    report = import_dictionary(path, dictionary_slug=slug)
    return {"seconds": report.seconds, "concepts": report.concepts, "names": report.names, "edges": report.edges}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = statistics.median(r["seconds"] for r in runs)
    last = runs[-1]
    return {
        "concepts": last["concepts"],
        "names": last["names"],
        "edges": last["edges"],
        "seconds_median": round(seconds, 2),
        "seconds_runs": [round(r["seconds"], 2) for r in runs],
        "concepts_per_s": round(last["concepts"] / seconds),
        "names_per_s": round(last["names"] / seconds),
    }


def describe_machine(connection: Any) -> str:
    cores = os.cpu_count() or 0
    cpu = _cpu_model()
    version = connection.pg_version  # e.g. 160004
    pg = f"PostgreSQL {version // 10000}.{version % 10000}"
    where = f"{pg} at {connection.settings_dict.get('HOST') or 'localhost'}" if os.environ.get("DATABASE_URL") else f"embedded {pg} (pgserver)"
    return f"{cores}-core CPU{f' ({cpu})' if cpu else ''}, {_gpu() or 'no GPU'}, {where}, Python {platform.python_version()}"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def _gpu() -> str:
    if not shutil.which("nvidia-smi"):
        return ""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"GPU {out.splitlines()[0]}" if out else ""


def append_results(result: dict[str, Any]) -> None:
    """Append a dated section; create the file with its header first if it is not there yet."""
    try:
        with open(RESULTS, "x", encoding="utf-8") as fh:
            fh.write("# Benchmark results\n\nDated figures from the scripts in bench/, each with the machine it ran on. Append only.\n")
    except FileExistsError:
        pass
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC dictionary import (bench/import.py, median of {result['runs']} runs)",
        "",
        f"Machine: {result['machine']}; 1-minute load average {result['load_avg_1m_at_start']} at the start.",
        "",
        "| file | concepts | names | edges | seconds (median) | concepts/s | names/s | runs (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, f in result["files"].items():
        lines.append(
            f"| {name} | {f['concepts']:,} | {f['names']:,} | {f['edges']:,} | {f['seconds_median']:.2f} | "
            f"{f['concepts_per_s']:,} | {f['names_per_s']:,} | {', '.join(f'{s:.2f}' for s in f['seconds_runs'])} |"
        )
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=Config.runs, help="Runs per file; the median is reported.")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return Config(runs=args.runs, data=args.data, record=not args.no_record)


if __name__ == "__main__":
    print(json.dumps(main(parse_args())), flush=True)
