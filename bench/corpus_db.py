"""bench/corpus.py's database side: the bench database (throwaway or kept), the dictionary, index and tagger set up
once, the timed PubMed import (in a process of its own), table sizes, collection copies, and the export stage."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DICTIONARY_SLUG = "ctd"
TABLES = ("corpus_document", "corpus_mention", "corpus_link")


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def bench_database(keep: str | None) -> Iterator[str]:
    """A migrated database on the configured server, its name: ``keep`` is made if missing and left behind (and
    migrated if it was there), else a throwaway one is dropped at the end."""
    from django.db import connection

    original = connection.settings_dict["NAME"]
    name = keep or f"bench_corpus_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=bool(keep))
    try:
        yield name
    finally:
        connection.close()
        if not keep:
            connection.creation.destroy_test_db(original, verbosity=0)


def database_url(name: str) -> str:
    from webapp import embedded

    url = urlsplit(os.environ.get("DATABASE_URL") or embedded.postgres_url())
    return urlunsplit(url._replace(path=f"/{name}"))


def child_env(database: str) -> dict[str, str]:
    from django.conf import settings

    return {**os.environ, "DATABASE_URL": database_url(database), "HF_HUB_OFFLINE": "1",
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
            "ARTIFACT_ROOT": str(settings.ARTIFACT_ROOT), "PYTHONPATH": str(ROOT)}


def setup_models(data: Path, tagger: Path | None, sparse_only: bool) -> dict[str, Any]:
    """MEDIC imported, its index built and activated, the tagger active: each done only when the (kept) database
    lacks it. Seconds of what was done."""
    from django.core.management import call_command

    from webapp.linking.models import DetectorVersion, IndexVersion
    from webapp.vocab.models import Dictionary

    done: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):
        if not Dictionary.objects.filter(slug=DICTIONARY_SLUG).exists():
            say("importing CTD MEDIC ...")
            t0 = time.perf_counter()
            call_command("import_dictionary", str(data / "medic/CTD_diseases.tsv.gz"), "--slug", DICTIONARY_SLUG, verbosity=0)
            done["import_dictionary_s"] = round(time.perf_counter() - t0, 1)
        dictionary = Dictionary.objects.get(slug=DICTIONARY_SLUG)
        if not IndexVersion.objects.filter(dictionary=dictionary, state=IndexVersion.State.ACTIVE).exists():
            say("building and activating its index (a few minutes) ...")
            t0 = time.perf_counter()
            call_command("build_index", "--dictionary", DICTIONARY_SLUG, *(["--sparse-only"] if sparse_only else []),
                         "--activate", verbosity=0)
            done["build_index_s"] = round(time.perf_counter() - t0, 1)
    index = IndexVersion.objects.filter(dictionary=dictionary, state=IndexVersion.State.ACTIVE).order_by("-pk").first()
    done["index"] = str(getattr(index, "label", "") or index)
    active = DetectorVersion.objects.filter(dictionary=dictionary, state=DetectorVersion.State.ACTIVE)
    if tagger is None:
        active.update(state=DetectorVersion.State.RETIRED)
    elif not active.filter(artifact_path=str(tagger.resolve())).exists():
        active.update(state=DetectorVersion.State.RETIRED)
        DetectorVersion.objects.create(dictionary=dictionary, label=f"bench-{tagger.name}",
                                       artifact_path=str(tagger.resolve()), state=DetectorVersion.State.ACTIVE)
    done["tagger"] = str(tagger) if tagger else None
    return done


def sizes() -> dict[str, int]:
    """Bytes of the corpus tables (with their indexes and TOAST) and of the whole database, and their rows."""
    from django.db import connection

    out: dict[str, int] = {}
    with connection.cursor() as cur:
        for table in TABLES:
            cur.execute("SELECT pg_total_relation_size(%s::regclass), (SELECT count(*) FROM " + table + ")", [table])
            out[f"{table}_bytes"], out[f"{table}_rows"] = cur.fetchone()
        cur.execute("SELECT pg_database_size(current_database())")
        out["database_bytes"] = cur.fetchone()[0]
    return out


def per_100k(before: dict[str, int], after: dict[str, int], documents: int) -> dict[str, float]:
    """MB per 100,000 documents of what grew between two :func:`sizes`."""
    if documents <= 0:
        return {}
    scale = 100_000 / documents / 2**20
    out = {f"{t.removeprefix('corpus_')}_mb": round((after[f"{t}_bytes"] - before[f"{t}_bytes"]) * scale, 1) for t in TABLES}
    out["tables_mb"] = round(sum(out.values()), 1)
    out["database_delta_mb"] = round((after["database_bytes"] - before["database_bytes"]) * scale, 1)
    return out


def make_collection(slug: str, detection: str) -> Any:
    from webapp.corpus.models import Collection
    from webapp.vocab.models import Dictionary

    collection, _ = Collection.objects.update_or_create(
        slug=slug, defaults={"title": f"{slug} (synthetic, bench/corpus.py)", "detection": detection,
                             "dictionary": Dictionary.objects.filter(slug=DICTIONARY_SLUG).first()})
    return collection


def copy_documents(source: Any, target: Any, limit: int) -> int:
    """The first ``limit`` documents of ``source`` (by id) copied into ``target`` in one statement, undetected."""
    from django.db import connection

    from webapp.corpus.models import Document

    columns = [f.column for f in Document._meta.concrete_fields if f.column not in ("id", "collection_id")]
    values = ["%s" if c in ("detection_state", "detection_model") else c for c in columns]
    params = [Document.DetectionState.NONE if c == "detection_state" else "" for c in columns
              if c in ("detection_state", "detection_model")]
    sql = (f"INSERT INTO corpus_document (collection_id, {', '.join(columns)}) SELECT %s, {', '.join(values)} "
           "FROM corpus_document WHERE collection_id = %s ORDER BY id LIMIT %s")
    with connection.cursor() as cur:
        cur.execute(sql, [target.pk, *params, source.pk, limit])
        return cur.rowcount


_IMPORTER = """
import json, resource, sys, time
import django
django.setup()
from webapp.corpus.pubmed_import import import_pubmed
slug, dictionary, files = sys.argv[1], sys.argv[2], sys.argv[3:]
out = []
for path in files:
    t0 = time.perf_counter()
    report = import_pubmed(path, collection_slug=slug, dictionary_slug=dictionary or None)
    out.append({"file": path.rsplit("/", 1)[-1], "seconds": round(time.perf_counter() - t0, 2), "new": report.new,
                "unchanged": report.unchanged})
print(json.dumps({"files": out, "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def import_files(database: str, files: list[Path], slug: str) -> dict[str, Any]:
    """The files imported with webapp.corpus.pubmed_import.import_pubmed (what ``manage.py import_documents
    --format pubmed-xml`` and the import job call) in a process of its own, so that its peak RSS is the import's."""
    from webapp.corpus.models import Collection

    make_collection(slug, Collection.Detection.OFF)  # no detection queued: the corpus run does it, timed on its own
    before = sizes()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _IMPORTER, slug, "", *map(str, files)], cwd=ROOT, env=child_env(database),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"the import failed: {done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    after = sizes()
    documents = after["corpus_document_rows"] - before["corpus_document_rows"]
    in_files = sum(f["seconds"] for f in report["files"])
    return {"collection": slug, "files": len(files), "documents": documents, "wall_s": round(seconds, 1),
            "importing_s": round(in_files, 1), "documents_per_s": round(documents / in_files) if in_files else None,
            "peak_rss_mb": report["peak_rss_mb"], "per_file": report["files"],
            "size_per_100k_documents": per_100k(before, after, documents), "sizes_after": after}


class RssSampler:
    """Peak RSS (MB) of a process and its children, sampled every ``every`` seconds in a thread."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.every = every
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                tree = [self.process, *self.process.children(recursive=True)]
                self.peak_mb = max(self.peak_mb, sum(p.memory_info().rss for p in tree) / 2**20)
            self._stop.wait(self.every)


def export(database: str, slug: str, formats: list[str]) -> dict[str, Any]:
    """``manage.py export_collection SLUG --format F --suggestions --out FILE`` per format (the pre-annotation: each
    mention with its best suggestion), timed, its peak RSS sampled."""
    from django.core.management import get_commands

    from webapp.corpus.models import Document

    if "export_collection" not in get_commands():
        return {"collection": slug, "unavailable": "manage.py export_collection is not in this checkout yet: the stage "
                                                   "calls it as `export_collection SLUG --format F --out FILE`"}
    documents = Document.objects.filter(collection__slug=slug).count()
    out: dict[str, Any] = {"collection": slug, "documents": documents, "formats": {}}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-export-") as folder:
        for fmt in formats:
            target = Path(folder) / f"{slug}.{fmt}"
            t0 = time.perf_counter()
            process = subprocess.Popen([sys.executable, "manage.py", "export_collection", slug, "--format", fmt,
                                        "--suggestions", "--out", str(target)], cwd=ROOT, env=child_env(database),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            with RssSampler(process.pid) as rss:
                _, err = process.communicate()
            seconds = time.perf_counter() - t0
            if process.returncode != 0:
                out["formats"][fmt] = {"error": err.strip()[-500:]}
                continue
            out["formats"][fmt] = {"seconds": round(seconds, 1), "documents_per_s": round(documents / seconds),
                                   "file_mb": round(target.stat().st_size / 2**20, 1), "peak_rss_mb": round(rss.peak_mb, 1)}
    return out
