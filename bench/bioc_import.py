"""Benchmark: import a generated PMC-like BioC collection (XML, then JSON), streamed; print one JSON object.

    python bench/bioc_import.py [--documents 50000] [--no-record]

A throwaway database is created on the configured PostgreSQL server, migrated, used and dropped (as
bench/pubmed_import.py does). A gzip BioC XML file and a gzip BioC JSON file of ``--documents`` generated documents
(tests/bioc_files.py: a title, an abstract and a ~600-character paragraph, with ``section_type`` infons, and two
annotated mentions each) are imported with :func:`webapp.corpus.formats.services.import_documents` into two
collections, then the XML file again (every document unchanged). Figures: seconds and documents per second of each,
and the growth of the process's resident memory over the import (sampled at each committed batch, after the first),
which stays flat when the file is streamed. Appended to bench/RESULTS.md with the machine (append only).
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


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _mb(path: Path) -> float:
    """The file's size un-gzipped, in MB."""
    size = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            size += len(chunk)
    return round(size / 2**20, 1)


def timed_import(path: Path, fmt: str, slug: str) -> dict[str, Any]:
    from webapp.corpus.formats.services import import_documents

    samples: list[float] = []
    started = time.perf_counter()
    report = import_documents(path, fmt, collection_slug=slug, progress=lambda done, total: samples.append(rss_mb()))
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1), "documents_per_s": round(report.position / seconds),
        "rss_growth_mb": round(max(samples[1:] or samples) - samples[0], 1) if samples else None,
        "new": report.new, "unchanged": report.unchanged, "mentions": report.mentions, "links": report.links,
    }


def main(documents: int, record: bool) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.db import connection

    from tests.bioc_files import write_bioc_json, write_bioc_xml

    machine = importlib.import_module("bench.import").describe_machine(connection)
    original = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_bioc_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            xml, js = Path(folder) / "pmc.xml.gz", Path(folder) / "pmc.json.gz"
            write_bioc_xml(xml, documents, gz=True)
            write_bioc_json(js, documents, gz=True)
            result = {"benchmark": "bioc_import", "documents": documents, "machine": machine,
                      "xml_mb": _mb(xml), "json_mb": _mb(js),
                      "xml_gz_mb": round(xml.stat().st_size / 2**20, 2), "json_gz_mb": round(js.stat().st_size / 2**20, 2),
                      "bioc_xml": timed_import(xml, "bioc-xml", "bench-xml"),
                      "bioc_json": timed_import(js, "bioc-json", "bench-json"),
                      "bioc_xml_again": timed_import(xml, "bioc-xml", "bench-xml"),
                      "load_1m_end": os.getloadavg()[0]}
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
    if record:
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(f"\n## BioC import, streamed ({datetime.now(UTC):%Y-%m-%d})\n\n```json\n{json.dumps(result, indent=1)}\n```\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=50_000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    print(json.dumps(main(args.documents, not args.no_record), indent=1))
