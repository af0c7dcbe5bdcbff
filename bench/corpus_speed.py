"""Benchmark: a corpus run's path today against its parts switched off one by one, on a development split with gold;
print one JSON object.

    python bench/corpus_speed.py --database lead2 --tagger var/artifacts/tagger-bc5cdr-gz [--corpus bc5cdr]
        [--configs per-document,groups-torch,default] [--no-record]

In one process, without Celery (each chunk's service called as a worker calls it), on a database that already holds
the CTD MEDIC dictionary (slug ``ctd``) with an active index (as bench/pipeline.py or bench/corpus.py leave one with
``--keep-db``): the development split's abstracts are imported as plain text into a collection of their own, and for
each configuration the collection's mentions are removed and a corpus run redoes them all:

- ``per-document``: the path before issue #45's speed work: each document alone (detected, written, linked,
  stored in its own queries), the tagger on torch, the linker keeping no search between documents;
- ``groups-torch``: documents in groups of 32 (webapp.curation.corpus_runs.group), the tagger on torch;
- ``default``: groups, the tagger on ONNX Runtime with int8 weights, the served linker keeping its searches per
  query: what a corpus run does now.

Reported per configuration: abstracts per minute by wall clock, by the CPU time of this process, and by that plus
the database server's CPU time (read from /proc for the PostgreSQL processes: this 2-core machine runs both); the
stages' seconds (a chunk's ``result["stages"]``); and quality against the split's gold mentions of the tagger's type:
exact and overlapping span P/R/F1, and the detected mentions whose span is a gold span and whose top suggestion is
a gold concept (of gold mentions, of detected ones). Figures are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "RESULTS.md"
DEV = {"bc5cdr": "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "ncbi": "ncbi-disease/NCBIdevelopset_corpus.txt"}
CONFIGS = ("per-document", "groups-torch", "default")


def main(args: argparse.Namespace) -> dict[str, Any]:
    from urllib.parse import urlsplit, urlunsplit

    url = urlsplit(os.environ.get("DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/postgres")
    os.environ["DATABASE_URL"] = urlunsplit(url._replace(path=f"/{args.database}"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    import torch
    from django.db import connection

    torch.set_num_threads(args.threads)
    gold, slug = _import_split(args)
    load_start = round(os.getloadavg()[0], 1)
    rows = {name: _measure(name, slug, gold, args) for name in args.configs}
    base = rows.get("per-document")
    for row in rows.values():
        if base is not None:
            row["speed_vs_per_document_cpu"] = round(row["per_min_cpu_with_db"] / base["per_min_cpu_with_db"], 2)
            row["f1_vs_per_document"] = round(row["quality"]["exact"]["f1"] - base["quality"]["exact"]["f1"], 4)
            row["linked_vs_per_document"] = round(row["quality"]["linking_recall"] - base["quality"]["linking_recall"], 4)
    version = connection.pg_version
    result = {
        "benchmark": "corpus_speed", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()}-core CPU, no GPU, PostgreSQL {version // 10000}.{version % 10000} on the same machine",
        "load_avg_1m_at_start": load_start, "corpus": args.corpus, "documents": len(gold), "threads": args.threads,
        "tagger": str(args.tagger) if args.tagger else None, "configs": rows, "note": args.note,
    }
    if args.record:
        append_results(result)
    return result


def _import_split(args: argparse.Namespace) -> tuple[dict[str, dict[tuple[int, int], tuple[str, ...]]], str]:
    from django.core.management import call_command

    from linker.data import iter_pubtator
    from webapp.corpus.models import Collection, Document
    from webapp.linking.models import DetectorVersion
    from webapp.vocab.models import Dictionary

    slug = f"speed-{args.corpus}"
    docs = list(iter_pubtator(args.data / DEV[args.corpus]))[: args.documents]
    types = {"Disease"} if args.corpus == "bc5cdr" else set()
    gold = {d.pmid: {(m.start, m.end): tuple(c.removeprefix("MESH:") for c in (m.parts[0] if m.parts else ()))
                     for m in d.mentions if not types or m.mention_type in types} for d in docs}
    if Document.objects.filter(collection__slug=slug).count() != len(docs):
        Collection.objects.filter(slug=slug).delete()
    if not Collection.objects.filter(slug=slug).exists():
        with tempfile.TemporaryDirectory() as scratch:
            archive = Path(scratch) / "abstracts.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                for d in docs:
                    zf.writestr(f"{d.pmid}.txt", f"{d.title}\n{d.abstract}" if d.abstract else d.title)
            call_command("import_documents", str(archive), "--collection", slug, "--dictionary", "ctd",
                         "--format", "text", verbosity=0)
    dictionary = Dictionary.objects.get(slug="ctd")
    DetectorVersion.objects.filter(dictionary=dictionary, state=DetectorVersion.State.ACTIVE).update(
        state=DetectorVersion.State.READY)
    mode = Collection.Detection.MATCHER
    if args.tagger is not None:
        version, _ = DetectorVersion.objects.get_or_create(
            dictionary=dictionary, label=f"bench-{args.tagger.name}", defaults={"artifact_path": str(args.tagger.resolve())})
        DetectorVersion.objects.filter(pk=version.pk).update(state=DetectorVersion.State.ACTIVE, mention_types=["Disease"])
        mode = Collection.Detection.MATCHER_AND_TAGGER
    Collection.objects.filter(slug=slug).update(detection=mode)
    Document.objects.filter(collection__slug=slug).update(detection_state="none")
    return gold, slug


def _measure(name: str, slug: str, gold: dict[str, dict[tuple[int, int], tuple[str, ...]]],
             args: argparse.Namespace) -> dict[str, Any]:
    from django.conf import settings

    from webapp.corpus.models import Collection, Document, Mention
    from webapp.curation.corpus_runs import chunk as chunk_module
    from webapp.curation.corpus_runs import group as group_module
    from webapp.curation.corpus_runs.jobs import start_run
    from webapp.curation.corpus_runs.scope import RunScope
    from webapp.linking import registry, taggers

    settings.TAGGER_RUNTIME = "onnx-int8" if name == "default" else "torch"
    registry.forget_all()
    taggers.forget_all()
    collection = Collection.objects.get(slug=slug)
    Mention.objects.filter(document__collection=collection).delete()
    Document.objects.filter(collection=collection).update(detection_state="none")
    # Models loaded (and the tagger exported) before the clock starts, as a worker that has run one chunk has them.
    from webapp.curation.services.detection import detectors_for

    detectors = detectors_for(collection)
    if name != "default" and detectors.linker is not None:
        detectors.linker.linker.retriever.memo = None  # searches not kept between documents, as before
    original_group = group_module.GROUP_DOCUMENTS
    chunk_module.GROUP_DOCUMENTS = 1 if name == "per-document" else original_group
    annotate_group = chunk_module.annotate_group
    if name == "per-document":
        chunk_module.annotate_group = lambda ids, det, scope, clock: chunk_module.annotate(ids[0], det, scope)
    db0, cpu0, wall0 = _postgres_cpu(), time.process_time(), time.perf_counter()
    try:
        run = start_run(collection, RunScope(), chunk_size=100, send=False)
        stages: Counter[str] = Counter()
        for chunk in run.children.order_by("pk"):
            chunk_module.run_chunk(chunk.pk)
            chunk.refresh_from_db()
            stages.update((chunk.result or {}).get("stages", {}))
    finally:
        chunk_module.annotate_group = annotate_group
        chunk_module.GROUP_DOCUMENTS = original_group
    wall, cpu, db = time.perf_counter() - wall0, time.process_time() - cpu0, _postgres_cpu() - db0
    n = len(gold)
    row = {
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "db_cpu_s": round(db, 1),
        "per_min_wall": round(60 * n / wall), "per_min_cpu": round(60 * n / cpu),
        "per_min_cpu_with_db": round(60 * n / (cpu + db)),
        "stages": {k: round(v, 1) for k, v in stages.most_common()},
        "mentions": Mention.objects.filter(document__collection=collection).count(),
        "quality": _score(slug, gold),
    }
    print(f"{name}: {json.dumps(row)}", file=sys.stderr)
    return row


def _postgres_cpu() -> float:
    """CPU seconds (user + system) of the PostgreSQL processes on this machine so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm.startswith("postgres"):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / tick


def _score(slug: str, gold: dict[str, dict[tuple[int, int], tuple[str, ...]]]) -> dict[str, Any]:
    from linker.detect.metrics import span_prf
    from webapp.corpus.models import Link, Mention

    predicted: dict[str, dict[tuple[int, int], str]] = defaultdict(dict)
    mentions = Mention.objects.filter(document__collection__slug=slug, source=Mention.Source.DETECTOR)
    top = {pk: cid for pk, cid in Link.objects.filter(mention__in=mentions, origin=Link.Origin.MODEL, rank=1, part=0)
           .values_list("mention_id", "concept_ref")}
    for pk, pmid, start, end in mentions.values_list("pk", "document__external_id", "start", "end"):
        predicted[pmid][(start, end)] = (top.get(pk) or "").removeprefix("MESH:")
    pmids = sorted(gold)
    spans = {mode: span_prf([list(gold[p]) for p in pmids], [list(predicted[p]) for p in pmids], mode)
             for mode in ("exact", "overlap")}
    right = sum(1 for p in pmids for span, cid in predicted[p].items() if cid and cid in gold[p].get(span, ()))
    n_gold, n_pred = sum(len(g) for g in gold.values()), sum(len(predicted[p]) for p in pmids)
    return {**{mode: {k: round(v, 4) if isinstance(v, float) else v for k, v in f.items()} for mode, f in spans.items()},
            "linked_right": right, "linking_recall": round(right / n_gold, 4) if n_gold else 0.0,
            "linking_precision": round(right / n_pred, 4) if n_pred else 0.0}


def append_results(result: dict[str, Any]) -> None:
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC corpus run, today's path against the old (bench/corpus_speed.py)",
        "",
        f"Machine: {result['machine']}; 1-minute load average {result['load_avg_1m_at_start']} at the start (a shared "
        f"machine: compare the CPU-time columns). {result['note']}".rstrip(),
        "",
        f"{result['documents']} {result['corpus']} development abstracts as plain text; detectors: the matcher"
        + (f" and the tagger {result['tagger']}" if result["tagger"] else "")
        + f"; the dense hybrid index (base MiniLM + tf-idf); one process, {result['threads']} compute thread(s), "
        "chunks of 100 run in it as a worker runs them.",
        "",
        "| path | abstracts/min (wall) | (process CPU) | (process + DB CPU) | vs old | exact P / R / F1 | F1 vs old | "
        "span + top-1 right (of gold / of detected) | vs old |",
        "|---|---:|---:|---:|---:|---|---:|---|---:|",
    ]
    for name, row in result["configs"].items():
        q = row["quality"]
        e = q["exact"]
        lines.append(
            f"| {name} | {row['per_min_wall']:,} | {row['per_min_cpu']:,} | {row['per_min_cpu_with_db']:,} | "
            f"{row.get('speed_vs_per_document_cpu', '')} | {e['precision']:.3f} / {e['recall']:.3f} / **{e['f1']:.3f}** | "
            f"{row.get('f1_vs_per_document', 0):+.4f} | {q['linking_recall']:.3f} / {q['linking_precision']:.3f} | "
            f"{row.get('linked_vs_per_document', 0):+.4f} |")
    lines += ["", "Seconds per stage (wall, summed over chunks):", ""]
    for name, row in result["configs"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {v}" for k, v in row["stages"].items()))
    with RESULTS.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", required=True, help="a database holding dictionary ctd with an active index")
    parser.add_argument("--tagger", type=Path, help="a tagger folder to detect with beside the matcher")
    parser.add_argument("--corpus", choices=sorted(DEV), default="bc5cdr")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--configs", type=lambda s: s.split(","), default=list(CONFIGS))
    parser.add_argument("--threads", type=int, default=1, help="compute threads (torch, ONNX Runtime)")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", dest="record", action="store_false")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(main(parse()), indent=2))
