"""Benchmark: stream a collection of N documents out in each streamed format; print one JSON object.

    python bench/export.py [--documents 100000] [--formats jsonl,bioc-xml,pubtator,pubannotation] [--no-record]
                           [--profile FORMAT]

A throwaway database is created on the configured PostgreSQL server (``DATABASE_URL``'s), migrated, filled by COPY
with N abstracts of about 1,500 characters, each with 8 gold mentions and their links, and dropped at the end. Each
format is exported by ``manage.py export_collection`` in a process of its own (what a pipeline on the server runs),
timed from start to exit (Django's start-up included), and its peak resident memory read from the kernel
(``wait4``'s ru_maxrss of that child). Goals (issue #45): >= 5,000 documents/s and <= 300 MB resident a process.
``--profile FORMAT`` runs that export in this process under cProfile instead and prints the top functions.
The figures are appended, dated with the machine and its load, to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import json
import os
import random
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
RESULTS = ROOT / "bench" / "RESULTS.md"
SLUG = "bench-export"
FORMATS = ("jsonl", "bioc-xml", "pubtator", "pubannotation")
GOAL_DOCS_PER_S, GOAL_RSS_MB = 5_000, 300
WORDS = ("patients with chronic kidney disease and type diabetes were treated in a randomized trial of the "
         "inhibitor which reduced the risk of heart failure stroke and death from cardiovascular causes over "
         "three years of follow up among adults with hypertension obesity asthma or breast cancer").split()
ENTITIES = ("asthma", "stroke", "obesity", "hypertension", "diabetes", "cancer", "failure", "disease")
COPY_BATCH = 5_000


def main(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.db import connection

    from webapp.corpus.models import Collection

    machine = importlib.import_module("import").describe_machine(connection)  # bench/import.py's
    original = connection.settings_dict["NAME"]
    name = f"bench_export_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        started = time.perf_counter()
        mentions = fill(args.documents)
        fill_s = time.perf_counter() - started
        if args.profile:
            profile(args.profile)
            return {}
        load = os.getloadavg()
        # The command's start-up alone (an empty collection): Django, the apps and what they import.
        Collection.objects.create(slug="bench-empty", title="Empty")
        startup = export_in_child(name, "jsonl", 0, "bench-empty")
        formats = {fmt: export_in_child(name, fmt, args.documents) for fmt in args.formats}
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
    result = {
        "benchmark": "export",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "uptime_load_avg_at_start": [round(x, 2) for x in load],
        "load_avg_1m_end": round(os.getloadavg()[0], 2),
        "documents": args.documents,
        "mentions": mentions,
        "fill_s": round(fill_s, 1),
        "goals": {"documents_per_s": GOAL_DOCS_PER_S, "max_rss_mb": GOAL_RSS_MB},
        "startup_alone": {"seconds": startup["seconds_with_startup"], "max_rss_mb": startup["max_rss_mb"], "cpu_s": startup["cpu_s"]},
        "formats": formats,
    }
    if args.record:
        append_results(result)
    return result


def fill(n: int) -> int:
    """N documents of about 1,500 characters, 8 gold mentions each with one gold link, by COPY."""
    from django.db import connection

    from webapp.corpus.models import Collection

    collection = Collection.objects.create(slug=SLUG, title="Export benchmark")
    rng = random.Random(45)
    with connection.cursor() as cursor:
        for first in range(0, n, COPY_BATCH):
            texts = [_abstract(rng) for _ in range(first, min(n, first + COPY_BATCH))]
            rows = io.StringIO()
            for i, text in enumerate(texts, start=first):
                rows.write(f"{collection.pk}\tPMID{i:08d}\t\t{text}\t{{}}\t2026-01-01 00:00:00+00\n")
            with cursor.copy("COPY corpus_document (collection_id, external_id, title, text, metadata, created_at) FROM STDIN") as copy:
                copy.write(rows.getvalue())
            cursor.execute("SELECT id FROM corpus_document WHERE collection_id = %s AND external_id = ANY(%s) ORDER BY id",
                           [collection.pk, [f"PMID{i:08d}" for i in range(first, first + len(texts))]])
            ids = [row[0] for row in cursor.fetchall()]
            rows = io.StringIO()
            for doc_id, text in zip(ids, texts, strict=True):
                for start, end in _spans(text):
                    rows.write(f"{doc_id}\t{start}\t{end}\t{text[start:end]}\tDisease\taccepted\tgold\t{{}}\t"
                               "2026-01-01 00:00:00+00\t2026-01-01 00:00:00+00\n")
            with cursor.copy('COPY corpus_mention (document_id, start, "end", text, mention_type, status, source, part_texts, '
                             "created_at, updated_at) FROM STDIN") as copy:
                copy.write(rows.getvalue())
        cursor.execute(
            "INSERT INTO corpus_link (mention_id, part, concept_ref, nil, origin, model_version, created_at) "
            "SELECT m.id, 0, 'MESH:D' || lpad((m.id % 100000)::text, 6, '0'), false, 'gold', '', now() FROM corpus_mention m"
        )
        cursor.execute("ANALYZE corpus_document; ANALYZE corpus_mention; ANALYZE corpus_link")
        cursor.execute("SELECT count(*) FROM corpus_mention")
        return int(cursor.fetchone()[0])


def _abstract(rng: random.Random) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 1_500:
        words.append(rng.choice(ENTITIES) if rng.random() < 0.15 else rng.choice(WORDS))
    return "Title of a study. " + " ".join(words).capitalize() + "."


def _spans(text: str) -> list[tuple[int, int]]:
    """The first 8 entity words of the text, as spans."""
    spans: list[tuple[int, int]] = []
    at = 0
    for word in text.split(" "):
        if word in ENTITIES and len(spans) < 8:
            spans.append((at, at + len(word)))
        at += len(word) + 1
    return spans


def export_in_child(database: str, fmt: str, n: int, slug: str = SLUG) -> dict[str, Any]:
    """Run the export command in a process of its own; its wall time, rate, file size and peak resident memory."""
    url = urlsplit(os.environ["DATABASE_URL"])
    env = {**os.environ, "DATABASE_URL": urlunsplit(url._replace(path=f"/{database}"))}
    out = Path(f"/tmp/bench-export-{os.getpid()}.{fmt}")
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "export_collection", slug, "--format", fmt,
                              "--out", str(out)], env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    said = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the {fmt} export failed (exit {os.waitstatus_to_exitcode(status)}): {said[-2000:]}")
    # The command's own figure: from its first query to its last byte, Django's start-up left out.
    streaming = float(re.search(r" in ([0-9.]+) s$", said.strip()).group(1))  # type: ignore[union-attr]
    size = out.stat().st_size
    out.unlink()
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    rate = n / streaming if n else 0
    # The process's own CPU (start-up included): on a shared machine, what the export costs whatever the load.
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds_with_startup": round(seconds, 2), "seconds_streaming": round(streaming, 2),
            "documents_per_s": round(rate), "cpu_s": round(cpu, 2), "file_mb": round(size / 2**20, 1),
            "max_rss_mb": round(rss_mb, 1), "meets_goals": rate >= GOAL_DOCS_PER_S and rss_mb <= GOAL_RSS_MB}


def profile(fmt: str) -> None:
    import cProfile
    import pstats

    from webapp.corpus.models import Document
    from webapp.curation.export import stream_documents

    documents = Document.objects.filter(collection__slug=SLUG)
    gc.freeze()  # as the export command does
    with cProfile.Profile() as prof:
        for _ in stream_documents(documents, fmt).chunks:
            pass
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(12)
    stats.print_callers(4)


def append_results(result: dict[str, Any]) -> None:
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC document export, streamed (bench/export.py, issue #45)",
        "",
        f"Machine: {result['machine']}; load averages (1, 5, 15 min) {result['uptime_load_avg_at_start']} at the start "
        f"of the exports, {result['load_avg_1m_end']} at the end (a shared machine). {result['documents']:,} documents of "
        f"about 1,500 characters, {result['mentions']:,} gold mentions with a link each, filled by COPY in {result['fill_s']} s. "
        "Each format exported by `manage.py export_collection` in its own process (start-up included); peak resident "
        f"memory from wait4's ru_maxrss. Goals: >= {GOAL_DOCS_PER_S:,} documents/s, <= {GOAL_RSS_MB} MB.",
        "",
        f"The command's start-up alone (an empty collection): {result['startup_alone']['seconds']} s, "
        f"{result['startup_alone']['max_rss_mb']} MB resident, {result['startup_alone']['cpu_s']} CPU s. CPU s: the exporting "
        "process's own (user + system, start-up included; PostgreSQL's not).",
        "",
        "| format | seconds streaming | with start-up | documents/s (streaming) | CPU s | file MB | peak RSS MB | goals met |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for fmt, f in result["formats"].items():
        lines.append(f"| {fmt} | {f['seconds_streaming']} | {f['seconds_with_startup']} | {f['documents_per_s']:,} | {f['cpu_s']} | "
                     f"{f['file_mb']} | {f['max_rss_mb']} | {'yes' if f['meets_goals'] else 'no'} |")
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--formats", type=lambda s: [f for f in s.split(",") if f], default=list(FORMATS))
    parser.add_argument("--no-record", dest="record", action="store_false", help="Do not append to bench/RESULTS.md.")
    parser.add_argument("--profile", choices=FORMATS, help="Profile this format's export in this process instead.")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(main(parse_args()), indent=1))
