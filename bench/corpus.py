"""Benchmark (issue #45): a 100,000-abstract PubMed corpus built, imported, pre-annotated with 1, 2, 4 workers,
exported, and the time for all of PubMed (36M abstracts) extrapolated; print one JSON object.

    python bench/corpus.py [--stages build,import,annotate,export,extrapolate] [--abstracts 100000] [--seed 45]
        [--annotate N] [--workers 1,2,4] [--threads N] [--chunk-size N] [--tagger DIR | --no-tagger] [--keep-db NAME]
        [--export-formats jsonl,bioc-xml,pubtator] [--rate ABSTRACTS_PER_MIN] [--note TEXT] [--no-record]

The corpus is SYNTHETIC (bench/corpus_build.py): real titles and real sentences of the NCBI disease and BC5CDR
abstracts (train + development) recombined, seeded, k sentences per abstract as in the sources, written as PubMed
baseline ``.xml.gz`` files of 10,000 articles under ``var/bench-corpus/<abstracts>-<seed>/`` (kept: a later run
reuses them). Stages, each optional:

1. ``build``: the files (skipped when the folder already holds them for the same size and seed);
2. ``import``: the files imported into a new collection with the PubMed importer (webapp.corpus.pubmed_import, what
   ``manage.py import_documents --format pubmed-xml`` calls) in a process of its own: seconds, documents/s, its peak
   RSS, and MB per 100,000 documents of the document/mention/link tables and of the database;
3. ``annotate``: corpus runs over the first ``--annotate`` documents with each worker count of ``--workers``
   (bench/corpus_annotate.py): abstracts/min, efficiency against linear, peak RSS per worker, the chunks' per-stage
   seconds (``Job.result["stages"]`` where the chunks record it), the PostgreSQL figures; before it, once per
   database, MEDIC imported, its index built and activated (the dense hybrid; ``--sparse-only``: tf-idf) and the
   tagger made the active detector;
4. ``export``: ``manage.py export_collection SLUG --format F --suggestions --out FILE`` per format (jsonl, bioc-xml,
   pubtator by default) of the annotated collection (the whole imported one when only part was annotated):
   documents/s, peak RSS;
5. ``extrapolate``: from the best per-machine rate measured (or ``--rate``), 36M abstracts on 1, 10 and 50 such
   machines, the core-hours, and the issue's anchors.

A throwaway database is made and dropped, unless ``--keep-db NAME``: then it is kept (with the index built, which
takes minutes) and a later invocation reuses it, e.g. ``--stages annotate,extrapolate --keep-db bench_corpus`` (the
latest imported collection of the database is annotated). The figures are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import corpus_build  # noqa: E402
from bench.corpus_report import append_results  # noqa: E402

STAGES = ("build", "import", "annotate", "export", "extrapolate")
PUBMED = 36_000_000
MACHINES = (1, 10, 50)
TAGGER = ROOT / "var" / "artifacts" / "tagger-bc5cdr-gz"
# The anchors: what others report for a pass over PubMed or per unit of compute.
ANCHORS = {
    "dictionary-based linking of all of PubMed (an estimate)": {"core_hours": [350, 550]},
    "Mayo's Spark pipeline: 7.5 documents/s per thread": {"docs_per_s_per_core": 7.5},
    "cTAKES: 4.6 documents/s per instance": {"docs_per_s_per_core": 4.6},
    "MedCAT: ~200 short texts/s (one process)": {"docs_per_s_per_core": 200.0},
}


@dataclass(frozen=True)
class Config:
    stages: tuple[str, ...] = STAGES
    abstracts: int = 100_000
    seed: int = 45
    per_file: int = corpus_build.PER_FILE
    annotate: int = 0  # 0: every imported document
    workers: tuple[int, ...] = (1, 2, 4)
    chunk_size: int = 0  # 0: at most 200, small enough that the most workers get 4 chunks each
    # WORKER_THREADS of each worker; 0: the cores divided by the worker count. 1 by default: on the shared 2-core machine
    # one worker on 2 threads annotated 286 abstracts/min, on 1 thread 830 (2026-11-29, load ~8)
    threads: int = 1
    tagger: Path | None = None
    sparse_only: bool = False
    keep_db: str | None = None
    export_formats: tuple[str, ...] = ("jsonl", "bioc-xml", "pubtator")
    rate: float | None = None
    data: Path = ROOT.parent / "shared" / "data"
    out: Path | None = None
    timeout_s: float = 24 * 3600
    note: str = ""
    record: bool = True

    @property
    def folder(self) -> Path:
        return self.out or ROOT / "var" / "bench-corpus" / f"{self.abstracts}-{self.seed}"


def main(cfg: Config) -> dict[str, Any]:
    load = round(os.getloadavg()[0], 1)
    result: dict[str, Any] = {"benchmark": "corpus", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "synthetic": True, "note": cfg.note, "load_avg_1m_at_start": load,
                              "stages": list(cfg.stages), "versions": versions()}
    spec = corpus_build.Spec(cfg.abstracts, cfg.seed, cfg.per_file)
    manifest = corpus_build.built(cfg.folder, spec)
    if "build" in cfg.stages:
        result["build"] = build(cfg, spec, manifest)
        manifest = corpus_build.built(cfg.folder, spec)
    if {"import", "annotate", "export"} & set(cfg.stages):
        with_database(cfg, manifest, result)
    else:
        result["machine"] = describe()
    if "extrapolate" in cfg.stages:
        result["extrapolate"] = extrapolate(result, cfg)
    if cfg.record:
        append_results(result)
    return result


def build(cfg: Config, spec: corpus_build.Spec, manifest: dict[str, Any] | None) -> dict[str, Any]:
    import time

    if manifest is not None:
        return {"folder": str(cfg.folder), "reused": True, **_brief(manifest)}
    t0 = time.perf_counter()
    pool = corpus_build.load_pool([cfg.data / rel for rel in corpus_build.SOURCES])
    made = corpus_build.build(pool, spec, cfg.folder)
    return {"folder": str(cfg.folder), "reused": False, "seconds": round(time.perf_counter() - t0, 1), **_brief(made)}


def _brief(manifest: dict[str, Any]) -> dict[str, Any]:
    return {k: manifest[k] for k in ("note", "articles", "sentences", "mean_sentences_per_abstract",
                                      "mean_chars_per_abstract", "pool")} | {
        "files": len(manifest["files"]), "mb": round(sum(f["bytes"] for f in manifest["files"]) / 2**20, 1)}


def with_database(cfg: Config, manifest: dict[str, Any] | None, result: dict[str, Any]) -> None:
    os.environ["TASK_QUEUE_OVERRIDE"] = f"bench-corpus-{uuid.uuid4().hex[:8]}"  # every task to the bench's workers
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from bench import corpus_annotate, corpus_db
    from webapp.corpus.models import Collection

    result["machine"] = describe(connection)
    keep_artifacts = ROOT / "var" / "bench-corpus" / f"artifacts-{cfg.keep_db}" if cfg.keep_db else None
    artifacts = keep_artifacts or Path(tempfile.mkdtemp(prefix="bench-corpus-artifacts-"))
    settings.ARTIFACT_ROOT = artifacts
    os.environ["ARTIFACT_ROOT"] = str(artifacts)
    with corpus_db.bench_database(cfg.keep_db) as database:
        result["database"] = database + (" (kept)" if cfg.keep_db else " (dropped at the end)")
        slug = None
        if "import" in cfg.stages:
            if manifest is None:
                raise SystemExit(f"no corpus of {cfg.abstracts} abstracts (seed {cfg.seed}) in {cfg.folder}: add the build stage")
            slug = f"bench-corpus-{datetime.now(UTC):%Y%m%d-%H%M%S}"
            corpus_db.say(f"importing {manifest['articles']:,} synthetic abstracts into {slug} ...")
            files = [cfg.folder / f["name"] for f in manifest["files"]]
            result["import"] = corpus_db.import_files(database, files, slug)
        source = _source(slug)
        if "annotate" in cfg.stages:
            if source is None:
                raise SystemExit("no imported bench-corpus collection in this database: add the import stage")
            result["setup"] = corpus_db.setup_models(cfg.data, cfg.tagger, cfg.sparse_only)
            with tempfile.TemporaryDirectory(prefix="bench-corpus-logs-") as logs:
                result["annotate"] = corpus_annotate.annotate(source, database, cfg, Path(logs))
        if "export" in cfg.stages:
            if source is None:
                raise SystemExit("no imported bench-corpus collection in this database: add the import stage")
            annotated = (result.get("annotate") or {}).get("runs") or {}
            target = next((r["collection"] for r in annotated.values()), None)
            if target is None or Collection.objects.get(slug=target).documents.count() < source.documents.count():
                target = source.slug  # the whole collection (a run over part of it is a copy of that part)
            result["export"] = corpus_db.export(database, target, list(cfg.export_formats))
    if keep_artifacts is None:
        import shutil

        shutil.rmtree(artifacts, ignore_errors=True)


def _source(slug: str | None) -> Any:
    from webapp.corpus.models import Collection

    if slug:
        return Collection.objects.get(slug=slug)
    return (Collection.objects.filter(slug__regex=r"^bench-corpus-[0-9]{8}-[0-9]{6}$").order_by("-pk").first())


def extrapolate(result: dict[str, Any], cfg: Config) -> dict[str, Any]:
    runs = ((result.get("annotate") or {}).get("runs")) or {}
    cores = os.cpu_count() or 1
    if runs:
        best_w, best = max(runs.items(), key=lambda kv: kv[1]["abstracts_per_min"])
        rate, source = best["abstracts_per_min"], f"measured: {best_w} worker process(es) on this {cores}-core machine"
    elif cfg.rate:
        rate, best, source = cfg.rate, None, "given with --rate"
    else:
        return {"unavailable": "no rate: run the annotate stage, or give --rate"}
    per_s = rate / 60
    hours_1 = PUBMED / per_s / 3600
    core_hours = hours_1 * cores
    out: dict[str, Any] = {
        "abstracts": PUBMED, "rate_per_machine_per_min": rate, "rate_from": source, "cores_per_machine": cores,
        "docs_per_s_per_core": round(per_s / cores, 2),
        "hours_on": {str(m): round(hours_1 / m, 1) for m in MACHINES}, "core_hours": round(core_hours),
        "anchors": {},
    }
    for name, anchor in ANCHORS.items():
        if "core_hours" in anchor:
            low, high = anchor["core_hours"]
            out["anchors"][name] = {"core_hours": f"{low}-{high}", "ours_over_theirs": round(core_hours / ((low + high) / 2), 2)}
        else:
            theirs = PUBMED / anchor["docs_per_s_per_core"] / 3600
            out["anchors"][name] = {"core_hours": round(theirs), "ours_over_theirs": round(core_hours / theirs, 2)}
    if best is not None:
        db_cpu = best["postgres_cpu_s"]["bench_database_backends"] / max(1, best["documents"])
        out["postgres_cpu_s_per_document"] = round(db_cpu, 4)
        out["postgres_cores_needed_on"] = {str(m): round(m * per_s * db_cpu, 2) for m in MACHINES}
        out["postgres_note"] = ("CPU seconds of the bench database's backends per document, times the documents/s of "
                                "m machines: the cores one PostgreSQL server must give them; past its cores (and its "
                                "disk's WAL rate) the writes limit the run, not the workers")
    return out


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("django", "celery", "torch", "transformers", "faiss-cpu", "psycopg", "lxml"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def describe(connection: Any = None) -> str:
    if connection is None:
        return f"{os.cpu_count()}-core CPU, Python {platform.python_version()} (no database stage)"
    return str(importlib.import_module("bench.import").describe_machine(connection))


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default=",".join(STAGES), help=f"Comma-separated, of {', '.join(STAGES)}.")
    parser.add_argument("--abstracts", type=int, default=Config.abstracts, help="Synthetic abstracts to build.")
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--per-file", type=int, default=Config.per_file, help="Articles per .xml.gz file.")
    parser.add_argument("--annotate", type=int, default=0, help="Annotate the first N documents (default: all).")
    parser.add_argument("--workers", default="1,2,4", help="Worker process counts, comma-separated.")
    parser.add_argument("--chunk-size", type=int, default=0, help="Documents per chunk (default: at most 200).")
    parser.add_argument("--threads", type=int, default=Config.threads,
                        help="WORKER_THREADS of each worker (default 1; 0: the cores divided by the worker count).")
    parser.add_argument("--tagger", type=Path, help=f"A tagger folder (default: {TAGGER.relative_to(ROOT)} when it is there).")
    parser.add_argument("--no-tagger", action="store_true", help="Detect with the dictionary matcher alone.")
    parser.add_argument("--sparse-only", action="store_true", help="A tf-idf index instead of the dense hybrid.")
    parser.add_argument("--keep-db", help="Use (and keep) this database, made and set up once, instead of a throwaway one.")
    parser.add_argument("--export-formats", default=",".join(Config.export_formats),
                        help="Comma-separated export formats (manage.py export_collection's).")
    parser.add_argument("--rate", type=float, help="Abstracts/min per machine to extrapolate from without annotating.")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--out", type=Path, help="Where the corpus files go (default: var/bench-corpus/N-SEED).")
    parser.add_argument("--timeout", type=float, default=Config.timeout_s, help="Give up on a run after this many seconds.")
    parser.add_argument("--note", default="", help="A remark recorded with the figures (e.g. 'small run').")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    a = parser.parse_args(argv)
    stages = tuple(s.strip() for s in a.stages.split(",") if s.strip())
    if unknown := [s for s in stages if s not in STAGES]:
        parser.error(f"unknown stages: {', '.join(unknown)}")
    workers = tuple(int(w) for w in a.workers.split(",") if w.strip())
    if not workers or min(workers) < 1:
        parser.error("--workers takes positive counts, e.g. 1,2,4")
    tagger = None if a.no_tagger else a.tagger or (TAGGER if TAGGER.is_dir() else None)
    if tagger is not None and not tagger.is_dir():
        parser.error(f"no tagger folder {tagger}")
    return Config(stages=stages, abstracts=a.abstracts, seed=a.seed, per_file=a.per_file, annotate=a.annotate,
                  workers=workers, chunk_size=a.chunk_size, threads=a.threads, tagger=tagger, sparse_only=a.sparse_only, keep_db=a.keep_db,
                  export_formats=tuple(f for f in a.export_formats.split(",") if f), rate=a.rate, data=a.data, out=a.out,
                  timeout_s=a.timeout, note=a.note, record=not a.no_record)


if __name__ == "__main__":
    print(json.dumps(main(parse_args()), indent=1, default=str))
