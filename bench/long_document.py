"""Benchmark: what one long document costs the web server; print one JSON object.

    DATABASE_URL=... python bench/long_document.py [--chars 9500000] [--mentions 20000] [--port 8765] [--no-record]

A synthetic legal document (``--chars`` characters in paragraphs, ``--mentions`` disease mentions with gold links:
the issue's 9.5M characters and 20,000 mentions by default, under every import limit) is imported as JSONL through
``import_documents`` into the database of DATABASE_URL (migrated first), into a collection of its own that is
deleted afterwards. The real server is then started as ``python -m webapp.launcher run`` starts it (gunicorn,
webapp.wsgi, 4 threads) with one worker, and each request below is sent alone, logged in as a curator:

* ``GET /api/mentions/?document=<id>&page_size=N`` for N = 20, 100, 500 (the issue: +9.36 GB at 500, OOM-killed);
* ``GET /api/documents/<id>/`` (its text and first mentions), ``GET /api/documents/?collection=<slug>``;
* the document page (``/collections/<slug>/documents/<id>/``) and the curation page opened on a mention half way
  through (``/curate/<slug>/documents/<id>/?m=<pk>``), each showing one part of the text.

For each: seconds, response bytes, and the worker's peak memory above its idle RSS (Linux: the peak, VmHWM, reset
through /proc/<pid>/clear_refs before the request; where that is refused, the largest of RSS samples every 5 ms).
Goal (issue #41): < 200 MB above idle for the mention list at page_size=500. The figures are appended to
bench/RESULTS.md with the machine and date (append only).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

RESULTS = ROOT / "bench" / "RESULTS.md"
SLUG = "bench-long-document"
USERNAME = "bench-long-document-curator"
GOAL_MB = 200
DISEASES = [
    "asthma",
    "chronic obstructive pulmonary disease",
    "type 2 diabetes",
    "breast cancer",
    "gout",
    "hypertension",
]
WORDS = (
    "the parties agree that any claim arising under this agreement shall be settled by arbitration in accordance "
    "with the rules then in force and the tribunal may award costs where a party has acted unreasonably"
).split()


def synthetic_record(chars: int, mentions: int, seed: int = 41) -> dict[str, Any]:
    """One JSONL document of about ``chars`` characters: paragraphs of legal filler, each with one disease mention."""
    rng = random.Random(seed)
    per = max(chars // mentions, 60)
    parts: list[str] = []
    spans: list[dict[str, Any]] = []
    at = 0
    for _ in range(mentions):
        disease = rng.choice(DISEASES)
        before = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        sentence = f"{before.capitalize()} a claimant with {disease} "
        filler: list[str] = []
        while len(sentence) + sum(len(w) + 1 for w in filler) < per - 2:
            filler.append(rng.choice(WORDS))
        paragraph = (sentence + " ".join(filler))[: per - 2] + ".\n"
        start = at + len(before) + len(" a claimant with ")
        spans.append(
            {
                "start": start,
                "end": start + len(disease),
                "type": "Disease",
                "links": [{"concept_id": "D001249"}],
            }
        )
        parts.append(paragraph)
        at += len(paragraph)
    return {"id": "long-1", "text": "".join(parts), "mentions": spans}


def _django() -> Any:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.db import connection

    return connection


def import_document(chars: int, mentions: int) -> tuple[int, float, int]:
    """The document imported into a fresh collection: its id, the import's seconds and its character count."""
    from webapp.corpus.formats.services import import_documents
    from webapp.corpus.models import Collection, Document

    Collection.objects.filter(slug=SLUG).delete()
    record = synthetic_record(chars, mentions)
    with tempfile.TemporaryDirectory(prefix="bench-long-") as tmp:
        path = Path(tmp) / "long.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        began = time.perf_counter()
        import_documents(path, "jsonl", collection_slug=SLUG)
        seconds = time.perf_counter() - began
    document = Document.objects.get(collection__slug=SLUG, external_id="long-1")
    return document.pk, seconds, len(record["text"])


def curator_session() -> str:
    """A session cookie of a curator (the API takes sessions as the pages do)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.contrib.sessions.backends.db import SessionStore

    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    user.groups.add(Group.objects.get_or_create(name="curator")[0])
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return session.session_key or ""


def start_server(port: int) -> tuple[subprocess.Popen[bytes], int]:
    """gunicorn as the launcher runs it, with one worker: the server process and its worker's pid."""
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "webapp.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "4",
        "--timeout",
        "300",
        "--error-logfile",
        "-",
    ]
    server = subprocess.Popen(
        argv, cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30).read()
            break
        except urllib.error.HTTPError:
            break  # it answers (a 503 without a Celery worker, which no request here needs)
        except OSError:
            time.sleep(0.5)
    else:
        server.terminate()
        raise RuntimeError("gunicorn did not answer /healthz within 120 s")
    workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == server.pid]
    if len(workers) != 1:
        server.terminate()
        raise RuntimeError(f"expected one gunicorn worker, found {workers}")
    return server, workers[0]


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def measure(port: int, worker: int, session: str, path: str) -> dict[str, Any]:
    """One GET, alone: seconds, bytes, status and the worker's peak memory above its RSS just before."""
    idle_kb = _status_kb(worker, "VmRSS")
    exact = _reset_peak(worker)
    samples = [idle_kb]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                samples.append(_status_kb(worker, "VmRSS"))
            except (OSError, KeyError):
                return
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Cookie": f"sessionid={session}"}
    )
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        body = response.read()
        code = response.status
    seconds = time.perf_counter() - began
    done.set()
    sampler.join()
    peak_kb = _status_kb(worker, "VmHWM") if exact else max(samples)
    return {
        "path": path,
        "status": code,
        "seconds": round(seconds, 3),
        "bytes": len(body),
        "peak_mb_above_idle": round(max(peak_kb - idle_kb, 0) / 1024, 1),
        "idle_mb": round(idle_kb / 1024, 1),
        "peak_measured": "VmHWM" if exact else "sampled",
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    connection = _django()
    describe_machine = importlib.import_module("bench.import").describe_machine
    document_id, import_seconds, chars = import_document(args.chars, args.mentions)
    from webapp.corpus.models import Mention

    middle = (
        Mention.objects.filter(document_id=document_id)
        .order_by("start")
        .values_list("pk", flat=True)[args.mentions // 2]
    )
    session = curator_session()
    machine = describe_machine(connection)
    connection.close()  # the server has its own connections
    server, worker = start_server(args.port)
    try:
        measure(
            args.port, worker, session, "/api/mentions/?page_size=1"
        )  # warm: modules, templates, connection
        measure(args.port, worker, session, f"/curate/{SLUG}/documents/{document_id}/?part=1")
        paths = {
            **{
                f"mentions_api_{n}": f"/api/mentions/?document={document_id}&page_size={n}"
                for n in (20, 100, 500)
            },
            "document_api": f"/api/documents/{document_id}/",
            "document_list_api": f"/api/documents/?collection={SLUG}",
            "document_page": f"/collections/{SLUG}/documents/{document_id}/",
            "curation_page": f"/curate/{SLUG}/documents/{document_id}/?m={middle}",
        }
        requests = {name: measure(args.port, worker, session, path) for name, path in paths.items()}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        from webapp.corpus.models import Collection

        Collection.objects.filter(slug=SLUG).delete()
    return {
        "machine": machine,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "document": {"chars": chars, "mentions": args.mentions, "import_seconds": round(import_seconds, 1)},
        "requests": requests,
        "goal_mb": GOAL_MB,
        "goal_met": requests["mentions_api_500"]["peak_mb_above_idle"] < GOAL_MB,
    }


def markdown(outcome: dict[str, Any], note: str) -> str:
    doc = outcome["document"]
    lines = [
        "",
        f"## One long document on the web server ({outcome['date']})",
        "",
        f"`python bench/long_document.py` on {outcome['machine']}. A synthetic document of {doc['chars']:,} characters "
        f"with {doc['mentions']:,} mentions (imported as JSONL in {doc['import_seconds']} s), served by gunicorn with one "
        "worker as the launcher runs it, each request alone as a curator. Peak = the worker's peak RSS during the "
        f"request above its RSS just before. Goal: < {outcome['goal_mb']} MB for the mention list at page_size=500 "
        f"({'met' if outcome['goal_met'] else 'NOT met'}). Before this change (issue #41): the mention list grew a "
        "worker by +90 / +180 / +342 MB at page_size 5 / 10 / 20 and by 9.36 GB at 500 (OOM-killed); the document page "
        "took 20 s (22.9 MB of HTML), the curation page 21 s, the document API 12 s."
        + (f" {note}" if note else ""),
        "",
        "| request | status | seconds | response bytes | peak MB above idle |",
        "|---|---|---|---|---|",
    ]
    for name, r in outcome["requests"].items():
        lines.append(
            f"| {name}: `{r['path']}` | {r['status']} | {r['seconds']} | {r['bytes']:,} | {r['peak_mb_above_idle']} |"
        )
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=9_500_000)
    parser.add_argument("--mentions", type=int, default=20_000)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--note", default="", help="A sentence appended to the recorded figures.")
    parser.add_argument(
        "--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md."
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    outcome = main(arguments)
    if not arguments.no_record:
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(markdown(outcome, arguments.note))
    print(json.dumps(outcome, indent=1))
