"""Benchmark: plain-text abstracts imported -> mentions detected -> linked -> ready to curate; print one JSON object.

    python bench/pipeline.py [--documents 1000] [--sparse-only] [--tagger DIR] [--data ../shared/data] [--no-record]

What a user does with a folder of abstracts, on a throwaway database (as bench/import.py makes one):

1. setup (not timed as the pipeline): the CTD MEDIC dictionary imported (``manage.py import_dictionary``), its index
   built and activated (``manage.py build_index --activate``: the dense hybrid of the base MiniLM that users get by
   default, or tf-idf alone with ``--sparse-only``), and with ``--tagger`` a trained tagger folder
   (``python -m linker train-tagger``) registered as the dictionary's active detector;
2. the BC5CDR train and development abstracts (500 + 500 = 1,000) written as one ``.txt`` file each (title, a
   line break, the abstract: the PubTator offsets stay those of the text), zipped;
3. timed: ``manage.py import_documents --format text`` (one transaction), then one Celery worker (one process, as
   the run command starts it) detects every document's mentions and links them with the active index; the clock
   stops when no document is waiting for detection and every detected mention holds its suggestions.

Reported: wall time and documents/min for the whole pipeline and per stage, mentions found, and how right they are
against BC5CDR's gold Disease mentions of the development half (the train half may be the tagger's training data):
span precision/recall/F1 (exact and overlapping) and end-to-end linking, where a detected mention counts only when
its span is a gold span and its top suggestion is one of the gold concepts (MeSH ids compared without their
``MESH:`` prefix; a composite gold mention by its first part). The goal (issue #14): >= 100 abstracts/min with the
matcher. Figures are appended to bench/RESULTS.md with the machine they ran on.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

describe_machine = importlib.import_module("bench.import").describe_machine

RESULTS = ROOT / "bench" / "RESULTS.md"
DICTIONARY = "medic/CTD_diseases.tsv.gz"
SOURCES = {"train": "bc5cdr/CDR_TrainingSet.PubTator.txt", "dev": "bc5cdr/CDR_DevelopmentSet.PubTator.txt"}
COLLECTION = "bench-abstracts"
GOAL_PER_MIN = 100


@dataclass(frozen=True)
class Config:
    documents: int = 1000
    sparse_only: bool = False
    tagger: Path | None = None
    data: Path = ROOT.parent / "shared" / "data"
    timeout_s: float = 3600.0
    record: bool = True
    note: str = ""


def main(cfg: Config) -> dict[str, Any]:
    queue = f"bench-pipeline-{uuid.uuid4().hex[:8]}"
    os.environ["TASK_QUEUE_OVERRIDE"] = queue  # every task of this run goes to the bench's own worker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    missing = [rel for rel in (DICTIONARY, *SOURCES.values()) if not (cfg.data / rel).is_file()]
    if missing:
        raise SystemExit(f"missing data files under {cfg.data}: {', '.join(missing)}")
    machine = describe_machine(connection)
    load_start = round(os.getloadavg()[0], 1)
    original_name = connection.settings_dict["NAME"]
    database = f"bench_pipeline_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = database
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    scratch = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    artifacts = Path(settings.ARTIFACT_ROOT) / f"bench-pipeline-{os.getpid()}"
    settings.ARTIFACT_ROOT = artifacts
    os.environ["ARTIFACT_ROOT"] = str(artifacts)
    worker: subprocess.Popen[bytes] | None = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            setup = prepare(cfg)
        gold, archive = write_abstracts(cfg, scratch)
        worker = start_worker(queue, database, scratch)
        measured = run_pipeline(cfg, archive)
        quality = score(gold)
    finally:
        if worker is not None:
            _stop(worker)
        connection.close()
        connection.creation.destroy_test_db(original_name, verbosity=0)
        shutil.rmtree(artifacts, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "benchmark": "pipeline",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "load_avg_1m_at_start": load_start,
        "note": cfg.note,
        "config": {"documents": cfg.documents, "index": "tf-idf only" if cfg.sparse_only else "dense hybrid (base MiniLM + tf-idf)",
                   "tagger": str(cfg.tagger) if cfg.tagger else None, "worker_processes": 1},
        "setup": setup,
        **measured,
        "quality_on_dev_half": quality,
        "goal": {"documents_per_min_with_matcher": GOAL_PER_MIN},
    }
    if cfg.record:
        append_results(result)
    return result


def prepare(cfg: Config) -> dict[str, Any]:
    from django.core.management import call_command

    from webapp.linking.models import DetectorVersion
    from webapp.vocab.models import Dictionary

    timings: dict[str, Any] = {}
    _say("importing CTD MEDIC and building its index ...")
    t0 = time.perf_counter()
    call_command("import_dictionary", str(cfg.data / DICTIONARY), "--slug", "ctd", verbosity=0)
    timings["import_dictionary_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    call_command("build_index", "--dictionary", "ctd", *(["--sparse-only"] if cfg.sparse_only else []), "--activate", verbosity=0)
    timings["build_index_s"] = round(time.perf_counter() - t0, 1)
    if cfg.tagger is not None:
        DetectorVersion.objects.create(
            dictionary=Dictionary.objects.get(slug="ctd"), label="tagger-bench", artifact_path=str(cfg.tagger.resolve()),
            state=DetectorVersion.State.ACTIVE,
        )
    return timings


def write_abstracts(cfg: Config, scratch: Path) -> tuple[dict[str, dict[tuple[int, int], tuple[str, ...]]], Path]:
    """The abstracts as a zip of .txt files, and the dev half's gold Disease spans: pmid -> (start, end) -> ids."""
    from linker.data import iter_pubtator

    gold: dict[str, dict[tuple[int, int], tuple[str, ...]]] = {}
    archive = scratch / "abstracts.zip"
    written = 0
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for split, rel in SOURCES.items():
            for doc in iter_pubtator(cfg.data / rel):
                if written >= cfg.documents:
                    break
                text = f"{doc.title}\n{doc.abstract}" if doc.abstract else doc.title
                zf.writestr(f"{doc.pmid}.txt", text)
                written += 1
                if split == "dev":
                    gold[doc.pmid] = {(m.start, m.end): tuple(_bare(c) for c in (m.parts[0] if m.parts else ()))
                                      for m in doc.mentions if m.mention_type == "Disease"}
    return gold, archive


def start_worker(queue: str, database: str, scratch: Path) -> subprocess.Popen[bytes]:
    from urllib.parse import urlsplit, urlunsplit

    from django.conf import settings

    from webapp import embedded
    from webapp.celery import app

    url = urlsplit(os.environ.get("DATABASE_URL") or embedded.postgres_url())
    env = {**os.environ, "DATABASE_URL": urlunsplit(url._replace(path=f"/{database}")), "HF_HUB_OFFLINE": "1",
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND}
    log = open(scratch / "worker.log", "wb")  # noqa: SIM115 - closed with the process
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", queue, "-c", "1", "-n", f"{queue}@%h", "--loglevel", "WARNING"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not app.control.ping(destination=[f"{queue}@{os.uname().nodename}"], timeout=1.0):
        if worker.poll() is not None or time.monotonic() > deadline:
            _stop(worker)
            raise RuntimeError(f"the Celery worker did not start: {(scratch / 'worker.log').read_text()[-2000:]}")
        time.sleep(0.5)
    return worker


def run_pipeline(cfg: Config, archive: Path) -> dict[str, Any]:
    from django.core.management import call_command
    from django.db.models import Count, Max, Min

    from webapp.corpus.models import Document, Link, Mention

    _say(f"importing {cfg.documents} abstracts; the worker detects and links them ...")
    t0 = time.perf_counter()
    started = datetime.now(UTC)
    with contextlib.redirect_stdout(sys.stderr):
        call_command("import_documents", str(archive), "--collection", COLLECTION, "--dictionary", "ctd", "--format", "text", verbosity=0)
    imported_s = time.perf_counter() - t0
    documents = Document.objects.filter(collection__slug=COLLECTION)
    waiting = documents.filter(detection_state__in=[Document.DetectionState.QUEUED, Document.DetectionState.RUNNING])
    detected = Mention.objects.filter(document__collection__slug=COLLECTION, source=Mention.Source.DETECTOR)
    deadline = time.monotonic() + cfg.timeout_s
    while True:
        if not waiting.exists() and not detected.filter(links__isnull=True).exists():
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"not done after {cfg.timeout_s:.0f} s: {waiting.count()} documents waiting")
        time.sleep(0.5)
    wall_s = time.perf_counter() - t0
    states = dict(documents.values_list("detection_state").annotate(n=Count("id")).values_list("detection_state", "n"))
    spans = detected.aggregate(first=Min("created_at"), last=Max("created_at"))
    links = Link.objects.filter(mention__in=detected, origin=Link.Origin.MODEL).aggregate(last=Max("created_at"))
    detection_done_s = (spans["last"] - started).total_seconds() if spans["last"] else None
    linking_done_s = (links["last"] - started).total_seconds() if links["last"] else None
    n_docs = documents.count()
    by_detector = dict(detected.values_list("detector").annotate(n=Count("id")).values_list("detector", "n"))
    return {
        "documents": n_docs,
        "document_states": states,
        "mentions_detected": detected.count(),
        "mentions_by_detector": by_detector,
        "import_s": round(imported_s, 1),
        "detection_done_after_s": round(detection_done_s, 1) if detection_done_s is not None else None,
        "linking_done_after_s": round(linking_done_s, 1) if linking_done_s is not None else None,
        "wall_s": round(wall_s, 1),
        "documents_per_min": round(n_docs / wall_s * 60, 1),
        "mentions_per_s": round(detected.count() / wall_s, 1),
    }


def score(gold: dict[str, dict[tuple[int, int], tuple[str, ...]]]) -> dict[str, Any]:
    from linker.detect.metrics import span_prf
    from webapp.corpus.models import Link, Mention

    predicted: dict[str, dict[tuple[int, int], str]] = defaultdict(dict)
    mentions = Mention.objects.filter(document__collection__slug=COLLECTION, document__external_id__in=list(gold),
                                      source=Mention.Source.DETECTOR)
    top = {pk: cid for pk, cid in Link.objects.filter(mention__in=mentions, origin=Link.Origin.MODEL, rank=1, part=0)
           .values_list("mention_id", "concept__concept_id")}
    for pk, pmid, start, end in mentions.values_list("pk", "document__external_id", "start", "end"):
        predicted[pmid][(start, end)] = _bare(top.get(pk) or "")
    pmids = sorted(gold)
    spans = {mode: span_prf([list(gold[p]) for p in pmids], [list(predicted[p]) for p in pmids], mode) for mode in ("exact", "overlap")}
    right = sum(1 for p in pmids for span, cid in predicted[p].items() if cid and cid in gold[p].get(span, ()))
    n_gold = sum(len(g) for g in gold.values())
    n_pred = sum(len(predicted[p]) for p in pmids)
    return {
        "documents": len(pmids),
        "spans": {mode: {k: round(v, 4) if isinstance(v, float) else v for k, v in f.items()} for mode, f in spans.items()},
        "linked_right": right,
        "linking_recall": round(right / n_gold, 4) if n_gold else 0.0,  # of gold mentions: found with the right span and concept
        "linking_precision": round(right / n_pred, 4) if n_pred else 0.0,  # of detected mentions
    }


def _bare(concept_id: str) -> str:
    return concept_id.removeprefix("MESH:")


def append_results(result: dict[str, Any]) -> None:
    q = result["quality_on_dev_half"]
    exact, overlap = q["spans"]["exact"], q["spans"]["overlap"]
    met = "met" if result["documents_per_min"] >= GOAL_PER_MIN else "missed"
    by_detector = ", ".join(f"{k or '?'} {v:,}" for k, v in result["mentions_by_detector"].items())
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC plain-text pipeline (bench/pipeline.py): import -> detect -> link",
        "",
        f"Machine: {result['machine']}; 1-minute load average {result['load_avg_1m_at_start']} at the start."
        + (f" {result['note']}" if result["note"] else ""),
        "",
        f"{result['documents']:,} BC5CDR abstracts as .txt files; index: {result['config']['index']}; tagger: "
        f"{result['config']['tagger'] or 'none (matcher only)'}; one worker process. Setup (not in the figures): "
        f"dictionary import {result['setup']['import_dictionary_s']} s, index build {result['setup']['build_index_s']} s.",
        "",
        "| import (s) | detected by (s) | linked by (s) | wall (s) | documents/min | mentions found | goal >= 100/min |",
        "|---:|---:|---:|---:|---:|---:|---|",
        f"| {result['import_s']} | {result['detection_done_after_s']} | {result['linking_done_after_s']} | {result['wall_s']} | "
        f"{result['documents_per_min']:,} | {result['mentions_detected']:,} ({by_detector}) | {met} |",
        "",
        f"Against the gold Disease mentions of the {q['documents']} development abstracts: spans exact P/R/F1 "
        f"{exact['precision']:.3f} / {exact['recall']:.3f} / {exact['f1']:.3f}, overlapping {overlap['precision']:.3f} / "
        f"{overlap['recall']:.3f} / {overlap['f1']:.3f}; span and top-1 concept right for {q['linked_right']:,} mentions: "
        f"{q['linking_recall']:.3f} of gold mentions, {q['linking_precision']:.3f} of detected ones.",
    ]
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 15)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait()


def _say(message: str) -> None:
    print(f"[{datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=Config.documents, help="How many abstracts (at most 1,000).")
    parser.add_argument("--sparse-only", action="store_true", help="Link with a tf-idf index instead of the dense hybrid.")
    parser.add_argument("--tagger", type=Path, help="A tagger folder (python -m linker train-tagger) to detect with too.")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--timeout", type=float, default=Config.timeout_s, help="Give up after this many seconds.")
    parser.add_argument("--note", default="", help="A remark recorded with the figures.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    a = parser.parse_args(argv)
    return Config(documents=a.documents, sparse_only=a.sparse_only, tagger=a.tagger, data=a.data, timeout_s=a.timeout,
                  record=not a.no_record, note=a.note)


if __name__ == "__main__":
    print(json.dumps(main(parse_args()), indent=2, default=str))
