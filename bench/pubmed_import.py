"""Benchmark: import a generated PubMed baseline file and then an update of it; print one JSON object.

    python bench/pubmed_import.py [--articles 50000] [--no-record]

A throwaway database is created on the configured PostgreSQL server, migrated, used and dropped (as
bench/import.py does). A ``.xml.gz`` of ``--articles`` synthetic articles (title and a labelled abstract of about
600 characters, the size of a MEDLINE abstract) is written to a temporary folder and imported with
:func:`webapp.corpus.pubmed_import.import_pubmed`; then an update file that changes every tenth abstract, withdraws
every hundredth article and adds a hundredth more. Figures: seconds and articles per second of each, and the growth
of the process's resident memory over the import (sampled at each committed batch, after the first), which stays
flat when the file is streamed. Appended to bench/RESULTS.md with the machine (append only).
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "RESULTS.md"
ABSTRACT = "Carriers of the variant had a raised risk of disease in every cohort that was studied here. " * 7


def write_file(path: Path, n: int, *, update: bool = False) -> None:
    """The baseline (``n`` articles) or its update: every 10th abstract changed, every 100th withdrawn, n/100 new."""
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n')
        pmids = range(1, n + 1) if not update else [*range(10, n + 1, 10), *range(n + 1, n + 1 + n // 100)]
        for pmid in pmids:
            changed = "Revised. " if update and pmid <= n else ""
            fh.write(
                f'<PubmedArticle><MedlineCitation><PMID Version="1">{pmid}</PMID><Article><ArticleTitle>Article '
                f'{pmid}.</ArticleTitle><Abstract><AbstractText Label="RESULTS">{changed}{ABSTRACT}</AbstractText>'
                "</Abstract></Article></MedlineCitation><PubmedData/></PubmedArticle>\n"
            )
        if update:
            deleted = "".join(f'<PMID Version="1">{p}</PMID>' for p in range(7, n + 1, 100))
            fh.write(f"<DeleteCitation>{deleted}</DeleteCitation>\n")
        fh.write("</PubmedArticleSet>\n")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed_import(path: Path) -> dict[str, Any]:
    from webapp.corpus.pubmed_import import import_pubmed

    samples: list[float] = []
    started = time.perf_counter()
    report = import_pubmed(path, collection_slug="bench-pubmed", progress=lambda done, total: samples.append(rss_mb()))
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1), "items_per_s": round(report.position / seconds),
        "rss_growth_mb": round(max(samples[1:] or samples) - samples[0], 1) if samples else None,
        "new": report.new, "replaced": report.replaced, "unchanged": report.unchanged, "deleted": report.deleted,
    }


def main(articles: int, record: bool) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.db import connection

    describe_machine = importlib.import_module("bench.import").describe_machine
    machine = describe_machine(connection)
    original = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_pubmed_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            base, update = Path(folder) / "pubmed24n0001.xml.gz", Path(folder) / "pubmed24n1300.xml.gz"
            write_file(base, articles)
            write_file(update, articles, update=True)
            result = {"benchmark": "pubmed_import", "articles": articles, "machine": machine,
                      "file_mb": round(base.stat().st_size / 2**20, 1),
                      "baseline": timed_import(base), "update": timed_import(update)}
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
    if record:
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(f"\n## PubMed import ({datetime.now(UTC):%Y-%m-%d})\n\n```json\n{json.dumps(result, indent=1)}\n```\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=50_000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    print(json.dumps(main(args.articles, not args.no_record), indent=1))
