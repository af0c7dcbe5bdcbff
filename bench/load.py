"""Benchmark: 20 curators deciding at once against the real web server; print one JSON object.

    python bench/load.py [--curators 20] [--api-curators 5] [--duration 60] [--think-ms 0] [--with-import]
                         [--import-mb 20] [--web-workers 2] [--data ../shared/data] [--no-record]
                         [--from-database NAME --artifacts FOLDER]

A throwaway database is created on the configured PostgreSQL server (as bench/import.py does), migrated and
filled: the full CTD MEDIC dictionary (``manage.py import_dictionary``), its sparse index built and activated
(``manage.py build_index --sparse-only --activate``), the BC5CDR development abstracts (500 documents, 9,591
mentions, many texts repeated across documents) imported as the collection to curate, and suggestions stored
for every mention, as the run command does after building an index. Then the web server is started exactly
as ``webapp.launcher`` runs it (gunicorn, ``--web-workers`` processes of 4 threads) on the throwaway database.
With ``--from-database`` the dictionary, its active index and the collection come from a database prepared by
another benchmark instead (``bench/scale.py --keep-db scale3m``: 3 million names, the BNE index, BC5CDR dev as
``bc5cdr-dev``; ``--artifacts`` is the artifact folder its index lives in): the throwaway database is a copy of it
(``CREATE DATABASE ... TEMPLATE``), so the decisions change only the copy, and suggestions are stored for every
mention with that index. No Celery worker: neither the panel nor a decision queues work (the synonym a decision adds reaches the
serving index in-process, see webapp.linking.registry).

Curators are threads, each with its own keep-alive connection (stdlib ``http.client``), all started together
and stopped after ``--duration`` seconds. Two kinds:

* screen curators (``--curators`` minus ``--api-curators``) log in through the login form and do what the
  curation screen's htmx does: open a document (``GET /curate/<slug>/documents/<id>/``), then for each of its
  mentions open the candidate panel (``GET /curate/mentions/<id>/panel/``) and, if the mention is still open,
  decide it (``POST /curate/mentions/<id>/decide/`` with the panel's version, ``X-CSRFToken`` and the values of
  the panel's own buttons); this is the endpoint curators hit for almost every decision.
* API curators (pipelines, scripts) use a token: ``GET /api/mentions/<id>/`` then
  ``POST /api/mentions/<id>/decision/``.

Decisions are a fixed mix (:data:`MIX`): accept the top candidate, choose another candidate, NIL, reject the
span, and accept applied to every identical open mention of the document or of the collection. Curators work
in pairs on the same documents, one from the first document on, the other from the last back, so they meet;
identical texts across documents (collection-scope propagation) overlap everyone. A 409 (the mention changed
since its panel was read: the other curator or a propagation got there first) is the expected answer to a
race and counted as a conflict, not an error. ``--think-ms`` is the time a curator reads the panel before deciding
(uniformly 0.5-1.5 times that); 0, the default, is a stress test (closed loop: every curator sends its next
request as soon as the last one is answered), where latency mostly measures the queue for the machine's CPUs.

``--with-import`` uploads a synthetic PubTator file of ``--import-mb`` MB (the BC5CDR training abstracts
repeated under fresh ids) into the same collection through ``POST /api/collections/<slug>/upload/`` (an
admin, in the web server), starting 5 s in and again until the time is up; decisions started while an upload
runs are summarised on their own.

Latency is the client's wall time per request (connection reused; the load generator shares the machine's
CPUs with the server and PostgreSQL, as the CPU figures show). The figures are appended to bench/RESULTS.md
with the machine they ran on (append only); the goal (issue #18): decision p95 < 300 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import importlib
import json
import os
import random
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import unescape
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# bench/import.py describes the machine the same way for every benchmark ("import" is a keyword, hence importlib).
describe_machine = importlib.import_module("bench.import").describe_machine

RESULTS = ROOT / "bench" / "RESULTS.md"
DICTIONARY = "medic/CTD_diseases.tsv.gz"
DOCUMENTS = "bc5cdr/CDR_DevelopmentSet.PubTator.txt"
IMPORT_SOURCE = "bc5cdr/CDR_TrainingSet.PubTator.txt"  # repeated under fresh ids for --with-import
COLLECTION = "bc5cdr-dev"
PASSWORD = "load-bench-password-not-secret"
GOAL_P95_MS = 300

# What a curator does with an open mention: (share, action, scope). "pick" chooses a candidate below the top.
MIX: tuple[tuple[float, str, str], ...] = (
    (0.50, "accept", "mention"),
    (0.15, "pick", "mention"),
    (0.05, "nil", "mention"),
    (0.05, "reject", "mention"),
    (0.13, "accept", "document"),
    (0.12, "accept", "collection"),
)
OPEN = ("pending", "suggested")


@dataclass(frozen=True)
class Config:
    curators: int = 20
    api_curators: int = 5
    duration_s: float = 60.0
    think_ms: int = 0
    with_import: bool = False
    import_mb: float = 20.0
    web_workers: int = 2
    data: Path = ROOT.parent / "shared" / "data"
    record: bool = True
    seed: int = 18
    note: str = ""  # what this run measures (e.g. "before the fixes"), written with the figures
    from_database: str | None = None  # a prepared database to copy (see the module's docstring)
    artifacts: Path | None = None  # the artifact folder of that database's index


# --- measurements ------------------------------------------------------------------------------------------


@dataclass
class Sample:
    endpoint: str
    status: int  # 0: no answer (connection error, timeout)
    ms: float
    started: float  # seconds since the run began
    scope: str = ""  # a decision's scope: mention, document or collection


@dataclass
class Recorder:
    t0: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    imports: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # the first answers of each error
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, endpoint: str, status: int, ms: float, started: float, body: bytes = b"", scope: str = "") -> None:
        with self.lock:
            self.samples.append(Sample(endpoint, status, ms, started - self.t0, scope))
            if _is_error(status) and len(self.errors[endpoint]) < 5:
                text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body.decode(errors="replace"))).strip()
                self.errors[endpoint].append(f"{status}: {text[:300]}")


def _is_error(status: int) -> bool:
    """No answer, a server error, or a refusal a curator following the screen should never get (409 is a race)."""
    return status == 0 or status >= 500 or status in (400, 401, 403, 404, 429)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(samples: list[Sample], seconds: float) -> dict[str, Any]:
    """Latency of the answered requests (any status), with errors (5xx, no answer, an unexpected 4xx) and
    conflicts (409) counted apart."""
    answered = [s.ms for s in samples if s.status]
    statuses = Counter(s.status for s in samples)
    errors = {str(code): n for code, n in sorted(statuses.items()) if _is_error(code)}
    out: dict[str, Any] = {
        "count": len(samples),
        "ok": statuses.get(200, 0) + statuses.get(201, 0),
        "conflicts_409": statuses.get(409, 0),
        "errors": errors,
        "per_s": round(len(samples) / seconds, 2) if seconds else 0.0,
    }
    if answered:
        out |= {
            "p50_ms": round(percentile(answered, 50), 1),
            "p95_ms": round(percentile(answered, 95), 1),
            "p99_ms": round(percentile(answered, 99), 1),
            "max_ms": round(max(answered), 1),
            "mean_ms": round(sum(answered) / len(answered), 1),
        }
    return out


# --- a tiny HTTP client: keep-alive, cookies, timing -------------------------------------------------------


class Client:
    """One curator's connection (like a browser tab's), with its cookies; every request is timed."""

    IDLE_S = 1.5  # gunicorn closes a keep-alive connection idle for 2 s: reconnect before that

    def __init__(self, host: str, port: int, recorder: Recorder, headers: dict[str, str] | None = None) -> None:
        self.host, self.port, self.recorder = host, port, recorder
        self.headers = dict(headers or {})
        self.cookies: dict[str, str] = {}
        self.conn: http.client.HTTPConnection | None = None
        self.last_used = 0.0
        self.scope = ""  # the scope of the decision being sent, recorded with its sample

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        if self.conn is not None and time.monotonic() - self.last_used > self.IDLE_S:
            self.conn.close()
            self.conn = None
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
            return self.conn, False
        return self.conn, True

    def request(self, endpoint: str, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        sent = {**self.headers, **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        t0 = time.perf_counter()
        status, data = 0, b""
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                conn.request(method, path, body=body, headers=sent)
                response = conn.getresponse()
                data = response.read()
                status = response.status
                for header in response.msg.get_all("Set-Cookie") or []:
                    cookie: SimpleCookie = SimpleCookie()
                    cookie.load(header)
                    for key, morsel in cookie.items():
                        self.cookies[key] = morsel.value
                if response.will_close:
                    conn.close()
                    self.conn = None
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                self.conn = None
                # A kept-alive connection the server had just closed: nothing was processed, send it again.
                if not (reused and attempt == 1):
                    data = str(exc).encode()
                    break
            except OSError as exc:  # a timeout, a refused connection
                conn.close()
                self.conn = None
                data = str(exc).encode()
                break
        self.last_used = time.monotonic()
        if endpoint:
            self.recorder.add(endpoint, status, (time.perf_counter() - t0) * 1000, t0, data, self.scope)
        return status, data

    def get(self, endpoint: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        return self.request(endpoint, "GET", path, headers=headers)

    def post_form(self, endpoint: str, path: str, fields: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        body = urlencode({k: "" if v is None else v for k, v in fields.items()}).encode()
        return self.request(endpoint, "POST", path, body,
                            {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})

    def post_json(self, endpoint: str, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        return self.request(endpoint, "POST", path, json.dumps(payload).encode(), {"Content-Type": "application/json"})

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


# --- the curators ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """One curator's work: (document pk, its mention pks in reading order) in the order it takes them."""

    username: str
    kind: str  # "screen" or "api"
    documents: list[tuple[int, list[int]]]
    token: str = ""


_SEEN = re.compile(r'data-seen="([^"]+)"')
_STATUS = re.compile(r'data-status="([^"]+)"')
_BUTTON = re.compile(r'data-action="(accept|pick|nil|reject)"[^>]*?hx-vals=\'([^\']*)\'')


def choose(rng: random.Random) -> tuple[str, str]:
    r = rng.random()
    for share, action, scope in MIX:
        if r < share:
            return action, scope
        r -= share
    return MIX[0][1], MIX[0][2]


def _think(cfg: Config, rng: random.Random) -> None:
    if cfg.think_ms:
        time.sleep(cfg.think_ms * rng.uniform(0.5, 1.5) / 1000)


def _cycle(plan: Plan) -> Iterator[tuple[int, list[int]]]:
    while True:  # a curator that reaches the end starts again (what is decided by then is only looked at)
        yield from plan.documents


def screen_curator(cfg: Config, plan: Plan, client: Client, deadline: float, rng: random.Random, tally: Counter[str]) -> None:
    """The curation screen: open a document, then each mention's panel, and decide the open ones."""
    for document_pk, mentions in _cycle(plan):
        if time.monotonic() >= deadline:
            return
        client.get("screen: open document", f"/curate/{COLLECTION}/documents/{document_pk}/")
        for pk in mentions:
            if time.monotonic() >= deadline:
                return
            status, body = client.get("screen: panel", f"/curate/mentions/{pk}/panel/", {"HX-Request": "true"})
            if status != 200:
                continue
            html = body.decode()
            seen, state = _SEEN.search(html), _STATUS.search(html)
            if seen is None or state is None or state.group(1) not in OPEN:
                tally["skipped (decided already)"] += 1
                continue
            buttons: dict[str, list[dict[str, str]]] = defaultdict(list)
            for action, vals in _BUTTON.findall(html):
                buttons[action].append(json.loads(unescape(vals)))
            action, scope = choose(rng)
            below_top = [b for b in buttons["pick"] if b.get("action") == "relink"][:4]
            if action == "pick" and below_top:
                fields = dict(rng.choice(below_top))  # the "Link" button of candidate #2 to #5
            elif action in ("pick", "accept"):
                fields = dict(buttons["accept"][0]) if buttons["accept"] else {"action": "nil"}
            else:
                fields = dict(buttons[action][0]) if buttons[action] else {"action": action}
            fields |= {"seen": unescape(seen.group(1)), "scope": scope, "time_on_task_ms": rng.randint(1000, 9000)}
            tally[f"{fields['action']} / {scope}"] += 1
            _think(cfg, rng)
            client.scope = scope
            client.post_form("screen: decide", f"/curate/mentions/{pk}/decide/", fields,
                             {"HX-Request": "true", "X-CSRFToken": client.cookies.get("csrftoken", "")})
            client.scope = ""


def api_curator(cfg: Config, plan: Plan, client: Client, deadline: float, rng: random.Random, tally: Counter[str]) -> None:
    """A pipeline on the REST API: read each mention, decide the open ones."""
    for _document_pk, mentions in _cycle(plan):
        for pk in mentions:
            if time.monotonic() >= deadline:
                return
            status, body = client.get("api: mention", f"/api/mentions/{pk}/")
            if status != 200:
                continue
            mention = json.loads(body)
            if mention["status"] not in OPEN:
                tally["skipped (decided already)"] += 1
                continue
            action, scope = choose(rng)
            payload: dict[str, Any] = {"updated_at": mention["updated_at"], "scope": scope, "time_on_task_ms": rng.randint(1000, 9000)}
            if action == "pick":
                below_top = [link for link in mention["links"] if link["origin"] == "model" and link["part"] == 0
                             and (link["rank"] or 0) > 1 and link["concept_id"]]
                action = "relink" if below_top else "accept"
                if below_top:
                    payload["concept_id"] = rng.choice(below_top[:4])["concept_id"]
            payload["action"] = action
            tally[f"{action} / {scope}"] += 1
            _think(cfg, rng)
            client.scope = scope
            client.post_json("api: decision", f"/api/mentions/{pk}/decision/", payload)
            client.scope = ""


def login(client: Client, username: str) -> None:
    """Log in through the login form, as a browser does (the CSRF cookie first, then the form)."""
    status, _ = client.get("", "/accounts/login/")
    if status != 200:
        raise RuntimeError(f"GET /accounts/login/ answered {status}")
    token = client.cookies.get("csrftoken", "")
    status, body = client.post_form("", "/accounts/login/", {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token})
    if status != 302 or "sessionid" not in client.cookies:
        raise RuntimeError(f"logging in {username} answered {status}: {body[:200]!r}")


def importer(cfg: Config, host: str, port: int, token: str, source: Path, deadline: float, recorder: Recorder, folder: Path) -> None:
    """Upload big PubTator files into the curators' collection, one after another, from 5 s in until the end."""
    time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
    client = Client(host, port, recorder, {"Authorization": f"Token {token}"})
    run = 0
    while time.monotonic() < deadline:
        run += 1
        path = synthetic_pubtator(source, folder / f"import-{run}.txt", cfg.import_mb, prefix=f"load{run}x")
        boundary = uuid.uuid4().hex
        body = b"".join([
            f'--{boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\npubtator\r\n'.encode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
            "Content-Type: text/plain\r\n\r\n".encode(),
            path.read_bytes(),
            f"\r\n--{boundary}--\r\n".encode(),
        ])
        started = time.perf_counter()
        status, answer = client.request("import: upload", "POST", f"/api/collections/{COLLECTION}/upload/", body,
                                        {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        ended = time.perf_counter()
        report = json.loads(answer) if status in (200, 201) else {"detail": answer[:300].decode(errors="replace")}
        with recorder.lock:
            recorder.imports.append({
                "status": status, "mb": round(len(body) / 1e6, 1), "seconds": round(ended - started, 1),
                "started_s": round(started - recorder.t0, 1), "ended_s": round(ended - recorder.t0, 1),
                "documents": report.get("documents"), "mentions": report.get("mentions"),
                **({} if status in (200, 201) else {"detail": report.get("detail")}),
            })
        path.unlink()
    client.close()


def synthetic_pubtator(source: Path, out: Path, megabytes: float, prefix: str) -> Path:
    """``source``'s documents repeated, each copy under fresh ids (``<prefix><copy>-<PMID>``), to ``megabytes``."""
    text = source.read_text(encoding="utf-8")
    documents = [block for block in text.split("\n\n") if block.strip()]
    target = int(megabytes * 1e6)
    written = 0
    with open(out, "w", encoding="utf-8") as fh:
        copy = 0
        while written < target:
            copy += 1
            for block in documents:
                pmid = block.split("|", 1)[0]
                renamed = "\n".join(f"{prefix}{copy}-{line}" if line.startswith(pmid) else line for line in block.splitlines())
                fh.write(renamed + "\n\n")
                written += len(renamed) + 2
                if written >= target:
                    break
    return out


# --- the run -----------------------------------------------------------------------------------------------


def main(cfg: Config) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    needed = ([] if cfg.from_database else [DICTIONARY, DOCUMENTS]) + ([IMPORT_SOURCE] if cfg.with_import else [])
    missing = [rel for rel in needed if not (cfg.data / rel).is_file()]
    if missing:
        raise SystemExit(f"missing data files under {cfg.data}: {', '.join(missing)}")
    machine = describe_machine(connection)
    load_start = round(os.getloadavg()[0], 1)
    original_name = connection.settings_dict["NAME"]
    database = f"bench_load_{os.getpid()}"
    if cfg.from_database:
        copy_database(cfg.from_database, database)
        connection.settings_dict["NAME"] = database
    else:
        connection.settings_dict.setdefault("TEST", {})["NAME"] = database
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    scratch = Path(tempfile.mkdtemp(prefix="bench-load-"))
    artifacts = cfg.artifacts or Path(settings.ARTIFACT_ROOT) / f"bench-load-{os.getpid()}"
    settings.ARTIFACT_ROOT = artifacts
    web: subprocess.Popen[bytes] | None = None
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the commands' reports: stdout carries only the JSON
            setup = prepare_from_database(cfg) if cfg.from_database else prepare(cfg)
        plans = plan_work(cfg)
        port = _free_port()
        web = start_web_server(cfg, database, artifacts, port, scratch)
        connection.close()  # the server's connections only while the curators run
        measured = run_load(cfg, plans, port, scratch, web.pid, database)
        _stop(web)
        web = None
        logged = decisions_logged()
    finally:
        if web is not None:
            _stop(web)
        connection.close()
        if cfg.from_database:
            connection.settings_dict["NAME"] = original_name
            drop_database(database)
        else:
            connection.creation.destroy_test_db(original_name, verbosity=0)
            shutil.rmtree(artifacts, ignore_errors=True)  # a prepared database's artifacts are its own
        for log in ("web.out", "web.log"):
            _server_tracebacks(scratch / "log" / log)
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "benchmark": "load",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "load_avg_1m_at_start": load_start,
        "note": cfg.note,
        "config": {"curators": cfg.curators, "api_curators": cfg.api_curators, "duration_s": cfg.duration_s,
                   "think_ms": cfg.think_ms, "with_import": cfg.with_import, "import_mb": cfg.import_mb if cfg.with_import else None,
                   "web_workers": cfg.web_workers, "web_threads": 4, "mix": [list(m) for m in MIX]},
        "setup": setup,
        **measured,
        "decisions_logged": logged,
        "goal": {"decision_p95_ms": GOAL_P95_MS},
    }
    if cfg.record:
        append_results(result)
    return result


def copy_database(source: str, target: str) -> None:
    """``target`` as a file-level copy of ``source`` (no session may be connected to ``source`` meanwhile)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{target}" TEMPLATE "{source}"')
    connection.close()


def drop_database(name: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def prepare_from_database(cfg: Config) -> dict[str, Any]:
    """The copied database's dictionary, active index and collection; curators, tokens and suggestions added."""
    from webapp.corpus.models import Collection
    from webapp.curation.services import suggest_for_collection
    from webapp.linking.models import IndexVersion

    collection = Collection.objects.select_related("dictionary").get(slug=COLLECTION)
    index = IndexVersion.objects.filter(dictionary=collection.dictionary, state=IndexVersion.State.ACTIVE).first()
    if index is None:
        raise SystemExit(f"{cfg.from_database}: no active index for {collection.dictionary.slug}")
    _say(f"storing suggestions with the active index of {collection.dictionary.slug} ...")
    t0 = time.perf_counter()
    suggested = suggest_for_collection(collection.pk)
    suggest_s = round(time.perf_counter() - t0, 1)
    names = collection.dictionary.latest_version().name_count
    return {**_users_and_counts(cfg), "suggest_s": suggest_s, "mentions_suggested": suggested,
            "dictionary": f"{collection.dictionary.slug} ({names:,} names, copied from {cfg.from_database}), "
                          f"index {index.label}"}


def prepare(cfg: Config) -> dict[str, Any]:
    from django.core.management import call_command

    from webapp.corpus.models import Collection
    from webapp.curation.services import suggest_for_collection

    timings: dict[str, float] = {}
    _say("importing MEDIC, building its sparse index, importing the documents, storing suggestions ...")
    t0 = time.perf_counter()
    call_command("import_dictionary", str(cfg.data / DICTIONARY), "--slug", "medic", verbosity=0)
    timings["import_medic_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    call_command("build_index", "--dictionary", "medic", "--sparse-only", "--activate", verbosity=0)
    timings["build_sparse_index_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    call_command("import_documents", str(cfg.data / DOCUMENTS), "--collection", COLLECTION, "--dictionary", "medic", verbosity=0)
    timings["import_documents_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    suggested = suggest_for_collection(Collection.objects.get(slug=COLLECTION).pk)
    timings["suggest_s"] = round(time.perf_counter() - t0, 1)
    return {**timings, **_users_and_counts(cfg), "mentions_suggested": suggested,
            "dictionary": "full CTD MEDIC, sparse index"}


def bench_key(username: str) -> str:
    """The API key of a bench user (a throwaway database's: derived, not secret)."""
    return "elw_load_" + hashlib.sha256(f"{username} of bench/load.py".encode()).hexdigest()[:32]


def _users_and_counts(cfg: Config) -> dict[str, Any]:
    """The curators (each with a token) and an admin with a token; the collection's counts."""
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from webapp.corpus.models import Mention
    from webapp.people.models import ApiToken
    from webapp.people.tokens import hash_key

    timings: dict[str, Any] = {}
    curator = Group.objects.get(name="curator")
    for n in range(cfg.curators):
        user = User.objects.create_user(f"curator{n:02d}", password=PASSWORD)
        user.groups.add(curator)
    admin = User.objects.create_user("load-admin", password=PASSWORD, is_staff=True)
    admin.groups.add(Group.objects.get(name="admin"))
    # Keys are kept hashed: the bench's own are derived from the user name, so a later step can send them again.
    for user in [admin, *User.objects.filter(username__startswith="curator")]:
        key = bench_key(user.username)
        ApiToken.objects.create(user=user, name="bench/load.py", key_hash=hash_key(key), prefix=key[:12])
    mentions = Mention.objects.filter(document__collection__slug=COLLECTION)
    texts = Counter(t.lower() for t in mentions.values_list("text", flat=True))
    with connection.cursor() as cursor:  # without autovacuum, statistics are only what the code refreshes itself
        cursor.execute("SHOW autovacuum")
        timings["postgres_autovacuum"] = cursor.fetchone()[0]
    return {**timings, "documents": mentions.values("document").distinct().count(), "mentions": mentions.count(),
            "mentions_with_a_repeated_text": sum(n for n in texts.values() if n > 1)}


def plan_work(cfg: Config) -> list[Plan]:
    """Pairs of curators on the same documents, one forward, one backward; the last ``api_curators`` on the API."""
    from webapp.corpus.models import Mention

    by_document: dict[int, list[int]] = defaultdict(list)
    for pk, document in Mention.objects.filter(document__collection__slug=COLLECTION).order_by("document_id", "start", "end", "pk").values_list("pk", "document_id"):
        by_document[document].append(pk)
    documents = sorted(by_document.items())
    rng = random.Random(cfg.seed)
    rng.shuffle(documents)
    pairs = max(1, (cfg.curators + 1) // 2)
    plans = []
    for n in range(cfg.curators):
        share = documents[n % pairs :: pairs]
        username = f"curator{n:02d}"
        kind = "api" if n >= cfg.curators - cfg.api_curators else "screen"
        plans.append(Plan(username, kind, share if n < pairs else share[::-1], bench_key(username)))
    return plans


def start_web_server(cfg: Config, database: str, artifacts: Path, port: int, scratch: Path) -> subprocess.Popen[bytes]:
    """gunicorn as the run command starts it, on the throwaway database; returns once it answers."""
    from webapp import embedded
    from webapp.launcher import web_server_argv

    url = urlsplit(os.environ.get("DATABASE_URL") or embedded.postgres_url())
    env = {**os.environ, "DATABASE_URL": urlunsplit(url._replace(path=f"/{database}")), "ARTIFACT_ROOT": str(artifacts),
           "HF_HUB_OFFLINE": "1", "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    logs = scratch / "log"
    logs.mkdir()
    with open(logs / "web.out", "ab") as out:  # the server's own log lines (a login each) stay off the terminal
        web = subprocess.Popen(web_server_argv(sys.executable, "127.0.0.1", port, cfg.web_workers, logs), cwd=ROOT, env=env,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if web.poll() is not None:
            raise RuntimeError(f"the web server exited with {web.returncode}: {(logs / 'web.out').read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/accounts/login/")
            if conn.getresponse().status == 200:
                conn.close()
                return web
        except OSError:
            time.sleep(0.2)
    _stop(web)
    raise RuntimeError("the web server did not answer within 60 s")


def run_load(cfg: Config, plans: list[Plan], port: int, scratch: Path, web_pid: int, database: str) -> dict[str, Any]:
    host = "127.0.0.1"
    _say(f"web server up on port {port}; logging {len(plans)} curators in")
    recorder = Recorder()
    clients = []
    for plan in plans:
        if plan.kind == "api":
            clients.append(Client(host, port, recorder, {"Authorization": f"Token {plan.token}", "Accept": "application/json"}))
        else:
            client = Client(host, port, recorder)
            login(client, plan.username)
            clients.append(client)
    warm_up(clients, plans)

    from django.db import connection

    admin_token = ""
    if cfg.with_import:
        admin_token = bench_key("load-admin")
        connection.close()
    tallies = [Counter[str]() for _ in plans]
    start = threading.Barrier(len(plans) + 1 + (1 if cfg.with_import else 0))
    deadline_box: list[float] = []
    failures: list[str] = []

    def curator(i: int) -> None:
        start.wait()
        rng = random.Random(cfg.seed * 1000 + i)
        work = api_curator if plans[i].kind == "api" else screen_curator
        try:
            work(cfg, plans[i], clients[i], deadline_box[0], rng, tallies[i])
        except Exception as exc:  # a curator that dies is a finding, not a reason to lose the others' figures
            failures.append(f"{plans[i].username}: {type(exc).__name__}: {exc}")

    def upload() -> None:
        start.wait()
        importer(cfg, host, port, admin_token, cfg.data / IMPORT_SOURCE, deadline_box[0], recorder, scratch)

    threads = [threading.Thread(target=curator, args=(i,), daemon=True) for i in range(len(plans))]
    if cfg.with_import:
        threads.append(threading.Thread(target=upload, daemon=True))
    for t in threads:
        t.start()
    _say(f"{len(plans)} curators deciding for {cfg.duration_s:.0f} s ...")
    # Who used the CPUs while the curators ran: the web server, PostgreSQL's backends for this database, this
    # process (the curators), and the rest (the machine is shared).
    cpu_before, self_before = _machine_cpu(), _own_cpu()
    web_before, db_before = _cpu_by_pid(_web_server(web_pid)), _cpu_by_pid(_backends_of(database))
    recorder.t0 = time.perf_counter()
    deadline_box.append(time.monotonic() + cfg.duration_s)
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - recorder.t0
    machine = _machine_cpu()
    web_s = _cpu_used(web_before, _cpu_by_pid(_web_server(web_pid)))
    db_s = _cpu_used(db_before, _cpu_by_pid(_backends_of(database)))
    own = round(_own_cpu() - self_before, 1)
    busy_s = round((machine[0] - cpu_before[0]) / os.sysconf("SC_CLK_TCK"), 1)
    for client in clients:
        client.close()

    by_endpoint: dict[str, list[Sample]] = defaultdict(list)
    for s in recorder.samples:
        by_endpoint[s.endpoint].append(s)
    endpoints = {name: summary(samples, elapsed) for name, samples in sorted(by_endpoint.items())}
    decisions = [s for s in recorder.samples if s.endpoint in ("screen: decide", "api: decision")]
    out: dict[str, Any] = {
        "elapsed_s": round(elapsed, 1),
        "endpoints": endpoints,
        "decisions_all": summary(decisions, elapsed),
        "decisions_by_scope": _by_scope(decisions, elapsed),
        "actions": dict(sum(tallies, Counter()).most_common()),
        "curator_failures": failures,
        "error_answers": dict(recorder.errors),
        "cpu": {"cores": os.cpu_count(), "machine_busy_pct": _busy_share(cpu_before, machine), "machine_busy_s": busy_s,
                "web_server_s": web_s, "postgres_s": db_s, "load_generator_s": own,
                "everything_else_s": round(busy_s - web_s - db_s - own, 1), "load_avg_1m_at_end": round(os.getloadavg()[0], 1)},
    }
    if recorder.imports:
        windows = [(i["started_s"], i["ended_s"]) for i in recorder.imports]
        during = [s for s in decisions if any(a <= s.started <= b for a, b in windows)]
        out["imports"] = recorder.imports
        out["decisions_during_import"] = summary(during, sum(b - a for a, b in windows))
        out["decisions_during_import_by_scope"] = _by_scope(during, sum(b - a for a, b in windows))
    return out


def _by_scope(decisions: list[Sample], seconds: float) -> dict[str, Any]:
    return {scope: summary([d for d in decisions if d.scope == scope], seconds)
            for scope in ("mention", "document", "collection") if any(d.scope == scope for d in decisions)}


def warm_up(clients: list[Client], plans: list[Plan]) -> None:
    """Every web worker loads the index on its first panel: do that before the clock starts (not a curator's cost)."""
    screen = [(c, p) for c, p in zip(clients, plans, strict=True) if p.kind == "screen"] or list(zip(clients, plans, strict=True))
    pks = [pk for _, mentions in plans[0].documents[-4:] for pk in mentions][-8:]

    def look(client: Client, pk: int) -> None:
        client.get("", f"/curate/mentions/{pk}/panel/" if client.cookies else f"/api/mentions/{pk}/", {"HX-Request": "true"})

    for _ in range(2):
        threads = [threading.Thread(target=look, args=(screen[i % len(screen)][0], pk)) for i, pk in enumerate(pks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def decisions_logged() -> dict[str, Any]:
    from django.db.models import Count

    from webapp.corpus.models import Mention
    from webapp.curation.models import Decision

    via = dict(Decision.objects.values_list("via").annotate(n=Count("id")).order_by())
    statuses = dict(Mention.objects.values_list("status").annotate(n=Count("id")).order_by())
    return {"by_via": via, "total": sum(via.values()), "mention_statuses": statuses}


# --- processes and CPU ------------------------------------------------------------------------------------


def _server_tracebacks(log: Path) -> None:
    """The web server's tracebacks (a 500's cause), to stderr before its log is removed with the scratch folder."""
    if not log.is_file():
        return
    text = log.read_text(errors="replace")
    for block in text.split("Traceback (most recent call last):")[1:4]:
        _say("web server traceback:\n" + block[-3000:])


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait(timeout=10)


def _processes() -> Iterator[tuple[int, int, int, str]]:
    """(pid, parent pid, CPU ticks used, command line) of every process this user may read."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        yield int(stat.parent.name), int(fields[1]), int(fields[11]) + int(fields[12]), cmdline  # utime + stime


def _web_server(pid: int) -> Callable[[int, int, str], bool]:
    return lambda p, parent, _cmd: pid in (p, parent)  # the gunicorn master and its workers


def _backends_of(database: str) -> Callable[[int, int, str], bool]:
    return lambda _p, _parent, cmd: cmd.startswith("postgres: ") and f" {database} " in cmd


def _cpu_by_pid(wanted: Callable[[int, int, str], bool]) -> dict[int, int]:
    return {pid: ticks for pid, parent, ticks, cmd in _processes() if wanted(pid, parent, cmd)}


def _cpu_used(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds between two snapshots (a process gone by the second one is not counted)."""
    return round(sum(ticks - before.get(pid, 0) for pid, ticks in after.items()) / os.sysconf("SC_CLK_TCK"), 1)


def _machine_cpu() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values) - idle, sum(values)


def _busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    busy, total = after[0] - before[0], after[1] - before[1]
    return round(100 * busy / total, 1) if total else 0.0


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- RESULTS.md -------------------------------------------------------------------------------------------


def append_results(result: dict[str, Any]) -> None:
    c = result["config"]
    screen = c["curators"] - c["api_curators"]
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC {c['curators']} curators deciding at once (bench/load.py)"
        + (f": {result['note']}" if result["note"] else ""),
        "",
        f"Machine: {result['machine']}; PostgreSQL autovacuum {result['setup']['postgres_autovacuum']}; "
        f"1-minute load average {result['load_avg_1m_at_start']} at the start, "
        f"{result['cpu']['load_avg_1m_at_end']} at the end.",
        f"Setup: gunicorn as the run command starts it ({c['web_workers']} workers x {c['web_threads']} threads) on a throwaway "
        f"database: {result['setup'].get('dictionary', 'full CTD MEDIC, sparse index')}, BC5CDR development abstracts ({result['setup']['mentions']:,} mentions, suggestions "
        f"stored). {screen} screen curators (login form, htmx panel + decide with CSRF), {c['api_curators']} API curators "
        f"(token); pairs on the same documents from both ends; think time {c['think_ms']} ms; {result['elapsed_s']} s"
        + (f"; uploads of {c['import_mb']} MB into the same collection meanwhile" if c["with_import"] else "") + ".",
        f"CPU while the curators ran: the {result['cpu']['cores']} cores {result['cpu']['machine_busy_pct']}% busy "
        f"({result['cpu']['machine_busy_s']} s): web server {result['cpu']['web_server_s']} s, PostgreSQL "
        f"{result['cpu']['postgres_s']} s, load generator {result['cpu']['load_generator_s']} s, other processes on the machine "
        f"{result['cpu']['everything_else_s']} s.",
        "",
        "| endpoint | requests | per s | 200 | 409 | errors | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    rows = [*result["endpoints"].items(), ("decisions, both endpoints", result["decisions_all"])]
    rows += [(f"decisions, scope {scope}", f) for scope, f in result.get("decisions_by_scope", {}).items()]
    if "decisions_during_import" in result:
        rows.append(("decisions started during an upload", result["decisions_during_import"]))
        rows += [(f"... of scope {scope}", f) for scope, f in result.get("decisions_during_import_by_scope", {}).items()]
    for name, f in rows:
        errors = ", ".join(f"{code}: {n}" for code, n in f["errors"].items()) or "0"
        lines.append(f"| {name} | {f['count']:,} | {f['per_s']} | {f['ok']:,} | {f['conflicts_409']:,} | {errors} | "
                     f"{f.get('p50_ms', '-')} | {f.get('p95_ms', '-')} | {f.get('p99_ms', '-')} | {f.get('max_ms', '-')} |")
    lines.append("")
    logged = result["decisions_logged"]
    lines.append(f"Decisions logged: {logged['total']:,} ({', '.join(f'{k} {v:,}' for k, v in sorted(logged['by_via'].items()))}). "
                 f"Goal: decision p95 < {result['goal']['decision_p95_ms']} ms.")
    for i in result.get("imports", []):
        lines.append(f"Upload: {i['mb']} MB, answered {i['status']} after {i['seconds']} s ({i.get('documents')} documents).")
    for endpoint, answers in result.get("error_answers", {}).items():
        lines.append(f"Errors of {endpoint}: {' | '.join(answers)}")
    if result["curator_failures"]:
        lines.append(f"Curator threads that failed: {'; '.join(result['curator_failures'])}.")
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--curators", type=int, default=Config.curators, help="Curators deciding at once.")
    parser.add_argument("--api-curators", type=int, default=Config.api_curators, help="How many of them use the REST API.")
    parser.add_argument("--duration", type=float, default=Config.duration_s, help="Seconds of load.")
    parser.add_argument("--think-ms", type=int, default=Config.think_ms, help="Think time after each decision (0: stress).")
    parser.add_argument("--with-import", action="store_true", help="Upload big files into the same collection meanwhile.")
    parser.add_argument("--import-mb", type=float, default=Config.import_mb, help="Size of each upload (--with-import).")
    parser.add_argument("--web-workers", type=int, default=Config.web_workers, help="gunicorn workers (the run command's default).")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    parser.add_argument("--note", default="", help="What this run measures, written with its figures.")
    parser.add_argument("--from-database", metavar="NAME", help="Copy this prepared database (bench/scale.py --keep-db NAME).")
    parser.add_argument("--artifacts", type=Path, help="The artifact folder of that database's index (with --from-database).")
    args = parser.parse_args(argv)
    if bool(args.from_database) != bool(args.artifacts):
        parser.error("--from-database and --artifacts go together")
    if args.curators < 1 or not 0 <= args.api_curators <= args.curators:
        parser.error("--curators must be at least 1 and --api-curators between 0 and --curators")
    if args.duration <= 0 or args.think_ms < 0 or args.import_mb <= 0 or args.web_workers < 1:
        parser.error("--duration, --import-mb and --web-workers must be positive, --think-ms not negative")
    return Config(curators=args.curators, api_curators=args.api_curators, duration_s=args.duration, think_ms=args.think_ms,
                  with_import=args.with_import, import_mb=args.import_mb, web_workers=args.web_workers, data=args.data,
                  record=not args.no_record, note=args.note, from_database=args.from_database, artifacts=args.artifacts)


if __name__ == "__main__":
    print(json.dumps(main(parse_args())), flush=True)
