"""Benchmark: the candidate panel's server time over the full MEDIC dictionary, and concept search over
HPO + DOID + MEDIC names; print one JSON object.

    python bench/curation.py [--mentions 200] [--searches 300] [--data ../shared/data] [--no-record]

A throwaway database is created on the configured PostgreSQL server (as bench/import.py does), migrated,
filled with ``manage.py import_dictionary`` (CTD_diseases.tsv.gz, hp.obo.gz, doid.obo.gz), a sparse index of
MEDIC built and activated with ``manage.py build_index --sparse-only --activate``, and the BC5CDR
development abstracts imported with ``manage.py import_documents`` as the collection to curate. Then:

* panel: ``GET /curate/mentions/<id>/panel/`` through Django's test client, logged in as a curator, for
  ``--mentions`` mentions drawn at random from the whole collection, with the document prefetch off: the first
  view (live linking, hierarchy paths, rendering; a GET stores nothing since #42: the decision's POST stores the
  ranking shown) and a second view of the same mentions (the ranking kept in the process). Server time = the view's wall time in this process
  (no network); targets: p95 < 150 ms.
* a curator's path: ``--path-documents`` other documents, each mention's panel in document order as a curator
  goes through them, with the document prefetch on (``CURATION_PREFETCH``, the default): each panel is
  followed by accepting its top suggestion (not timed; a synonym it adds to the index makes the panels it could
  change link live again) and ``--think-ms`` of reading before the next. Reported with how many panels linked live and how
  many kept rankings a decision's synonym reached (none now: a synonym serves a new linker, linker.delta).
* a pipeline: ``POST /api/link`` for ``--api-documents`` other abstracts, each with its Disease mentions as given
  spans, as a pipeline asks for them (the same ranking as the panel's: by the re-ranker where the index has one);
  reported per request and in mentions/s.
* search: ``GET /curate/mentions/<id>/search/?q=...`` with queries a curator types (the first 3, 5 and
  all characters of mention texts, and a misspelling), against each dictionary in turn, so the trigram
  index holds all three dictionaries' names; target: p95 < 100 ms.

The figures are appended to bench/RESULTS.md with the machine they ran on (append only).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# bench/import.py describes the machine the same way for every benchmark ("import" is a keyword, hence importlib).
describe_machine = importlib.import_module("bench.import").describe_machine

RESULTS = ROOT / "bench" / "RESULTS.md"
DICTIONARIES = (("medic", "medic/CTD_diseases.tsv.gz"), ("hpo", "hpo/hp.obo.gz"), ("doid", "disease-ontology/doid.obo.gz"))
DOCUMENTS = "bc5cdr/CDR_DevelopmentSet.PubTator.txt"


@dataclass(frozen=True)
class Config:
    mentions: int = 200
    searches: int = 300
    data: Path = ROOT.parent / "shared" / "data"
    record: bool = True
    seed: int = 13
    path_documents: int = 20
    think_ms: int = 1000
    prefetch: bool = True  # the curator's path with the document prefetch (False: every panel links live, for an A/B)
    artifact: Path | None = None  # a linker artifact over CTD_diseases (e.g. with a LATTE re-ranker) to serve instead
    api_documents: int = 40  # abstracts sent to POST /api/link (0: skip)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "max_ms": round(max(ms), 1),
        "mean_ms": round(statistics.fmean(ms), 1),
    }


def main(cfg: Config) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    missing = [rel for _, rel in DICTIONARIES if not (cfg.data / rel).is_file()] + ([DOCUMENTS] if not (cfg.data / DOCUMENTS).is_file() else [])
    if missing:
        raise SystemExit(f"missing data files under {cfg.data}: {', '.join(missing)}")
    machine = describe_machine(connection)
    load = round(os.getloadavg()[0], 1)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_curation_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    artifacts = Path(settings.ARTIFACT_ROOT) / f"bench-curation-{os.getpid()}"
    settings.ARTIFACT_ROOT = artifacts
    try:
        setup = prepare(cfg)
        from linker.device import limit_threads

        limit_threads(settings.LINKER_WEB_THREADS)  # the panel is timed as the web process serves it (webapp/wsgi.py)
        panel = bench_panel(cfg)
        api_link = bench_api_link(cfg) if cfg.api_documents else None
        search = bench_search(cfg)
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)
        import shutil

        shutil.rmtree(artifacts, ignore_errors=True)
    result = {
        "benchmark": "curation",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "load_avg_1m_at_start": load,
        "setup": setup,
        "panel": panel,
        "api_link": api_link,
        "search": search,
        "targets": {"panel_p95_ms": 150, "search_p95_ms": 100},
    }
    if cfg.record:
        append_results(result)
    return result


def prepare(cfg: Config) -> dict[str, Any]:
    from django.core.management import call_command
    from django.db.models import Count

    from webapp.linking.models import IndexVersion
    from webapp.vocab.models import Name

    timings: dict[str, float] = {}
    for slug, rel in DICTIONARIES:
        t0 = time.perf_counter()
        call_command("import_dictionary", str(cfg.data / rel), "--slug", slug, verbosity=0)
        timings[f"import_{slug}_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    call_command("build_index", "--dictionary", "medic", "--sparse-only", "--activate", verbosity=0)
    timings["build_sparse_index_medic_s"] = round(time.perf_counter() - t0, 1)
    call_command("import_documents", str(cfg.data / DOCUMENTS), "--collection", "bc5cdr-dev", "--dictionary", "medic", verbosity=0)
    if cfg.artifact is not None:
        # Served as it is (no re-encoding): an artifact trained on the same CTD release fits the dictionary.
        from webapp.training.services import activate_index
        from webapp.vocab.models import Dictionary

        medic = Dictionary.objects.get(slug="medic")
        served = IndexVersion.objects.create(dictionary=medic, dictionary_version=medic.latest_version(),
                                             artifact_path=str(cfg.artifact.resolve()), state=IndexVersion.State.READY)
        activate_index(served.pk)
    index = IndexVersion.objects.get(state=IndexVersion.State.ACTIVE)
    names = dict(Name.objects.values_list("concept__version__dictionary__slug").annotate(n=Count("id")).order_by())
    return {**timings, "names": names, "names_total": sum(names.values()), "medic_index_names": index.name_count,
            "served": str(cfg.artifact) if cfg.artifact is not None else "sparse index"}


def _client() -> Any:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user = User.objects.create_user("bench-curator", password="unused-password-for-bench")
    user.groups.add(Group.objects.get(name="curator"))
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def _timed(client: Any, url: str, **params: Any) -> float:
    t0 = time.perf_counter()
    response = client.get(url, params, HTTP_HX_REQUEST="true")
    elapsed = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    return elapsed


def _timed_panel(client: Any, url: str) -> tuple[float, int | None]:
    """A panel's server time, and the concept its first candidate's Link button sends (what a curator accepts)."""
    t0 = time.perf_counter()
    response = client.get(url, HTTP_HX_REQUEST="true")
    elapsed = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    pick = re.search(r'data-action="pick" data-number="1".*?"concept": "(\d+)"', response.content.decode(), re.S)
    return elapsed, int(pick.group(1)) if pick else None


def _timed_post(client: Any, url: str, data: dict[str, Any]) -> float:
    """A decision as the screen posts it; 409 (an identical mention's decision got there first) is an answer too."""
    t0 = time.perf_counter()
    response = client.post(url, data, HTTP_HX_REQUEST="true")
    elapsed = (time.perf_counter() - t0) * 1000
    if response.status_code not in (200, 409):
        alert = re.search(r'class="alert[^"]*"[^>]*>(.*?)</', response.content.decode(), re.S)
        raise RuntimeError(f"{url} answered {response.status_code}: {alert.group(1).strip() if alert else '?'}")
    return elapsed


def bench_panel(cfg: Config) -> dict[str, Any]:
    from django.conf import settings

    from webapp.corpus.models import Mention
    from webapp.linking.registry import get_active_linker

    client = _client()
    rng = random.Random(cfg.seed)
    mentions = list(Mention.objects.filter(document__collection__slug="bc5cdr-dev", mention_type="Disease").values_list("pk", flat=True))
    sample = rng.sample(mentions, min(cfg.mentions, len(mentions)))
    t0 = time.perf_counter()
    active = get_active_linker("medic")  # loading the index once per process is not the panel's cost
    load_s = time.perf_counter() - t0
    ranked_by = active.linker.ranked_by if active is not None else "none"
    problem = active.linker.reranker_problem if active is not None else None
    # Random mentions of the whole collection, each linked live: no prefetched document flatters them, and no
    # prefetch thread runs beside them.
    settings.CURATION_PREFETCH = False
    _timed(client, f"/curate/mentions/{sample[0]}/panel/")  # warm the templates
    first = [_timed(client, f"/curate/mentions/{pk}/panel/") for pk in sample[1:]]
    again = [_timed(client, f"/curate/mentions/{pk}/panel/") for pk in sample[1:]]
    settings.CURATION_PREFETCH = cfg.prefetch
    path = bench_path(cfg, client, set(sample)) if cfg.path_documents else None
    return {"index_load_s": round(load_s, 2), "ranked_by": ranked_by, "reranker_problem": problem,
            "first_view": summary(first), "repeat_view": summary(again), "curator_path": path}


def bench_api_link(cfg: Config) -> dict[str, Any]:
    """``POST /api/link`` per abstract, its Disease mentions given as spans (the last abstracts of the collection,
    which the panel's sample and the curator's path, at its start, rarely reach): as asked by default (with the
    re-ranker's types) and with ``types: false``."""
    typed = _api_link(cfg, types=True)
    return {**typed, "untyped": _api_link(cfg, types=False)}


def _api_link(cfg: Config, types: bool) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    from webapp.corpus.models import Document

    api = APIClient(HTTP_HOST="127.0.0.1")
    api.force_authenticate(User.objects.get(username="bench-curator"))
    documents = list(Document.objects.filter(collection__slug="bc5cdr-dev").order_by("-pk")[:cfg.api_documents])
    ms, mentions, ranked_by = [], 0, set()
    for doc in documents:
        spans = [{"start": m.start, "end": m.end} for m in doc.mentions.filter(mention_type="Disease").order_by("start")]
        if not spans:
            continue
        t0 = time.perf_counter()
        response = api.post("/api/link", {"dictionary": "medic", "text": doc.text, "mentions": spans, "k": 10,
                                          "types": types}, format="json")
        ms.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"POST /api/link answered {response.status_code}: {response.content[:300]!r}")
        mentions += len(spans)
        ranked_by.update(m["ranked_by"] for m in response.json()["mentions"])
    return {**summary(ms), "mentions": mentions, "mentions_per_s": round(mentions / (sum(ms) / 1000), 1),
            "ranked_by": sorted(ranked_by)}


def bench_path(cfg: Config, client: Any, viewed: set[int]) -> dict[str, Any]:
    """Panels in the order a curator meets them: document after document, mention after mention, each one's top
    suggestion accepted as the screen does (``POST .../decide/``, whose answer is the decided mention's panel, after
    which the rest of the document is prefetched again where the decision changed it), with time to read between
    panels (during which the document's prefetch runs)."""
    from webapp.corpus.models import Document, Mention
    from webapp.curation.services import OPEN_STATUSES
    from webapp.curation.services.rankings import RANKINGS

    docs = [pk for pk in Document.objects.filter(collection__slug="bc5cdr-dev").order_by("pk").values_list("pk", flat=True)
            if not Mention.objects.filter(document_id=pk, pk__in=viewed).exists()]
    chosen = random.Random(cfg.seed + 2).sample(docs, min(cfg.path_documents, len(docs)))
    ms: list[float] = []
    decided: list[float] = []
    live = 0
    set_aside, prefetched, prefetched_read = getattr(RANKINGS, "set_aside", 0), RANKINGS.prefetched, RANKINGS.prefetched_read
    for doc in chosen:
        for pk in Mention.objects.filter(document_id=doc, mention_type="Disease").order_by("start", "pk").values_list("pk", flat=True):
            misses = RANKINGS.misses
            elapsed, top = _timed_panel(client, f"/curate/mentions/{pk}/panel/")
            ms.append(elapsed)
            live += RANKINGS.misses > misses
            mention = Mention.objects.get(pk=pk)
            if mention.status in OPEN_STATUSES and top is not None:
                # The top candidate shown (a GET stores nothing: the decision stores the ranking first).
                # A mention an identical one's decision changed meanwhile answers 409: the curator moves on.
                decided.append(_timed_post(client, f"/curate/mentions/{pk}/decide/", {
                    "action": "accept", "concept": top, "part": 0, "seen": mention.updated_at.isoformat(),
                    "via": "candidate", "scope": "mention", "time_on_task_ms": cfg.think_ms}))
            time.sleep(cfg.think_ms / 1000)
    # Kept rankings a panel found no longer current (a decision's synonym reached them), prefetched ones made and read.
    return {**summary(ms), "documents": len(chosen), "linked_live": live, "think_ms": cfg.think_ms, "prefetch": cfg.prefetch,
            "set_aside": getattr(RANKINGS, "set_aside", 0) - set_aside, "prefetched": RANKINGS.prefetched - prefetched,
            "prefetched_read": RANKINGS.prefetched_read - prefetched_read,
            "decision_answer": summary(decided) if decided else None}


def _queries(texts: list[str], rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        text = rng.choice(texts)
        kind = len(out) % 4
        if kind == 0:
            out.append(text[:3])
        elif kind == 1:
            out.append(text[:5])
        elif kind == 2:
            out.append(text)
        else:  # a typo: two neighbouring letters swapped
            i = rng.randrange(0, max(1, len(text) - 1))
            out.append(text[:i] + text[i + 1 : i + 2] + text[i : i + 1] + text[i + 2 :] if len(text) > 3 else text)
    return out


def bench_search(cfg: Config) -> dict[str, Any]:
    from webapp.corpus.models import Collection, Mention
    from webapp.vocab.models import Dictionary

    client = _client_for_search()
    rng = random.Random(cfg.seed + 1)
    texts = list(Mention.objects.filter(document__collection__slug="bc5cdr-dev").values_list("text", flat=True).distinct())
    mention = Mention.objects.filter(document__collection__slug="bc5cdr-dev").first()
    collection = Collection.objects.get(slug="bc5cdr-dev")
    per_dictionary: dict[str, Any] = {}
    every: list[float] = []
    for slug, _ in DICTIONARIES:
        collection.dictionary = Dictionary.objects.get(slug=slug)  # search looks in the collection's dictionary
        collection.save(update_fields=["dictionary"])
        queries = _queries(texts, rng, cfg.searches)
        _timed(client, f"/curate/mentions/{mention.pk}/search/", q=queries[0])
        ms = [_timed(client, f"/curate/mentions/{mention.pk}/search/", q=q) for q in queries]
        per_dictionary[slug] = summary(ms)
        every += ms
    collection.dictionary = Dictionary.objects.get(slug="medic")
    collection.save(update_fields=["dictionary"])
    return {"all": summary(every), "per_dictionary": per_dictionary, "query_kinds": "first 3 chars, first 5 chars, whole mention, one transposition"}


def _client_for_search() -> Any:
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(User.objects.get(username="bench-curator"))
    return client


def _row(measure: str, f: dict[str, Any], target: str = "") -> str:
    """One line of the results table: a measure's count and its p50, p95 and max (ms)."""
    return f"| {measure} | {f['n']} | {f['p50_ms']} | {f['p95_ms']} | {f['max_ms']} |{f' {target}' if target else ''} |"


def append_results(result: dict[str, Any]) -> None:
    p, s = result["panel"], result["search"]
    setup = result["setup"]
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC curation panel and concept search (bench/curation.py)",
        "",
        f"Machine: {result['machine']}; 1-minute load average {result['load_avg_1m_at_start']} at the start.",
        f"Data: full CTD MEDIC ({setup['names'].get('medic', 0):,} names; served: {setup.get('served', 'sparse index')}), "
        f"HPO ({setup['names'].get('hpo', 0):,} names), DOID ({setup['names'].get('doid', 0):,} names): {setup['names_total']:,} names in the "
        "trigram index; BC5CDR development abstracts as the collection. Server time through Django's test client (no network).",
        "",
        "| measure | n | p50 ms | p95 ms | max ms | target |",
        "|---|---:|---:|---:|---:|---|",
        _row("candidate panel, first view (live link + paths + render; a GET stores nothing)", p["first_view"], "p95 < 150"),
        _row("candidate panel, repeat view (the ranking kept in the process)", p["repeat_view"], "p95 < 150"),
    ]
    path = p.get("curator_path")
    if path:
        prefetch = "document prefetch on" if path.get("prefetch", True) else "document prefetch off"
        lines.append(_row(f"candidate panel, a curator's path ({path['documents']} documents in order, top-1 accepted, {prefetch}, "
                          f"{path['think_ms']} ms reading; {path['linked_live']} of {path['n']} linked live, "
                          f"{path.get('set_aside', '?')} kept rankings set aside by a decision)", path, "p95 < 150"))
        answer = path.get("decision_answer")
        if answer:
            lines.append(_row("a decision on that path (POST decide: the ranking shown stored, the decision, the synonym, the decided mention's panel)", answer))
    api = result.get("api_link")
    if api:
        lines.append(_row(f"POST /api/link, one abstract with its Disease mentions as spans ({api['mentions']} mentions, "
                          f"{api['mentions_per_s']} mentions/s; ranked by {', '.join(api['ranked_by'])})", api))
        fast = api.get("untyped")
        if fast:
            lines.append(_row(f"the same with `types: false` ({fast['mentions_per_s']} mentions/s; ranked by "
                              f"{', '.join(fast['ranked_by'])})", fast))
    for slug, f in s["per_dictionary"].items():
        lines.append(_row(f"concept search in {slug}", f, "p95 < 100"))
    lines.append(_row("concept search, all", s["all"], "p95 < 100"))
    lines.append("")
    lines.append(f"Search queries: {s['query_kinds']}. Index load once per process: {p['index_load_s']} s (not in the panel figures). "
                 f"Panel ranked by: {p.get('ranked_by')}.")
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mentions", type=int, default=Config.mentions, help="Mentions whose panel is timed.")
    parser.add_argument("--searches", type=int, default=Config.searches, help="Search queries per dictionary.")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    parser.add_argument("--path-documents", type=int, default=Config.path_documents,
                        help="Documents a curator goes through in order (0: no curator's path).")
    parser.add_argument("--think-ms", type=int, default=Config.think_ms, help="A curator's reading time between panels on the path.")
    parser.add_argument("--no-prefetch", action="store_true", help="The curator's path without the document prefetch (an A/B).")
    parser.add_argument("--api-documents", type=int, default=Config.api_documents,
                        help="Abstracts sent to POST /api/link (0: skip).")
    parser.add_argument("--artifact", type=Path, help="Serve this linker artifact over CTD_diseases (e.g. one with a LATTE re-ranker).")
    args = parser.parse_args(argv)
    if args.mentions < 2 or args.searches < 1:
        parser.error("--mentions must be at least 2 and --searches at least 1")
    if args.path_documents < 0 or args.think_ms < 0 or args.api_documents < 0:
        parser.error("--path-documents, --think-ms and --api-documents must not be negative")
    return Config(mentions=args.mentions, searches=args.searches, data=args.data, record=not args.no_record,
                  path_documents=args.path_documents, think_ms=args.think_ms, prefetch=not args.no_prefetch,
                  artifact=args.artifact, api_documents=args.api_documents)


if __name__ == "__main__":
    print(json.dumps(main(parse_args())), flush=True)
