"""Benchmark: a scripted curator, keyboard only, in Chromium, over NCBI Disease dev mentions; print one JSON object.

    python bench/curator_speed.py [--decisions 200] [--web-workers 2] [--data ../shared/data] [--no-record]
                                  [--json-out FILE] [--before FILE] [--note TEXT]

Setup (as ``scripts/run --data`` does it, on a throwaway database of the configured PostgreSQL server): CTD MEDIC
imported (``import_dictionary``), the NCBI Disease development abstracts imported with their gold links
(``import_pubtator``, gold ids resolved against MEDIC), a sparse index of MEDIC built and activated and the
collection's suggestions stored (the run command's index for a data folder; a dense one takes a quarter of an hour
of CPU here), then the web server started as the run command starts it (gunicorn, ``--web-workers`` x 4 threads).
Mentions whose gold is not one concept of MEDIC (composite, unresolved) are set aside (marked NIL before the run),
so every open mention has one right answer.

The curator (Playwright driving /usr/bin/chromium) opens the first document and, for each open mention the page
selects, reads the panel's ranked candidates from the DOM and gives the gold concept as its answer: ``a`` when it is
first, its number (``2``-``9``) when it is in the list, otherwise ``/``, its preferred name typed, and Enter on the
hit (ArrowDown to it first when it is not the first hit; its id instead when the name does not find it); ``]`` opens
the next document when one is done. Auto-advance (the page's default) selects the next open mention after a decision.

Per decision: the keys pressed; the wall time from the first key to the next mention's panel painted (swapped in
and a frame drawn), and the wait after the deciding key; each request the page made meanwhile (resource timing) with
its server time (the ``Server-Timing`` header, webapp.core.metrics), split into the decision POST, the panel GET,
search GETs and the client's own time (script, swap, render). Typing is as fast as Playwright types: the figures are
what the software costs a curator, not how fast a person reads or types.

The figures are appended to bench/RESULTS.md with the machine they ran on (append only); ``--before`` puts an
earlier run's JSON (``--json-out``) beside them, with ratios. ``--two-requests`` replays the flow before issue #46's
fix (a decision answered with the decided mention's panel, then a GET of the next one's) for an A/B in one sitting:

    python bench/curator_speed.py --two-requests --no-record --json-out /tmp/before.json
    python bench/curator_speed.py --before /tmp/before.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

describe_machine = importlib.import_module("bench.import").describe_machine
load_bench = importlib.import_module("bench.load")  # the web server started as the run command starts it

RESULTS = ROOT / "bench" / "RESULTS.md"
DICTIONARY = "medic/CTD_diseases.tsv.gz"
DOCUMENTS = "ncbi-disease/NCBIdevelopset_corpus.txt"
COLLECTION = "ncbi-dev"
CHROMIUM = "/usr/bin/chromium"
USERNAME, PASSWORD = "speed-curator", "curator-speed-bench-password"

# Recorded in the page before any of its scripts: every key, and when the candidate panel was last swapped in and
# painted (the frame after the swap), with the mention it shows.
INSTRUMENT = """(() => {
  const s = window.__speed = { keys: [], ready: null, swaps: 0 };
  try { performance.setResourceTimingBufferSize(100000); } catch (e) {}
  addEventListener("keydown", (e) => s.keys.push(performance.now()), true);
  document.addEventListener("htmx:afterSwap", (e) => {
    const panel = document.getElementById("panel");
    if (!panel || e.detail.target !== panel) return;
    const body = panel.querySelector(".panel-body");
    const id = body ? body.dataset.mentionId : null;
    const swapped = performance.now();
    requestAnimationFrame(() => setTimeout(() => { s.swaps += 1; s.ready = { id, swapped, painted: performance.now() }; }, 0));
  });
  document.addEventListener("htmx:afterSettle", (e) => {  // search results shown and wired, for the query asked
    if (e.detail.target && e.detail.target.id === "search-results") s.searched = e.detail.xhr ? e.detail.xhr.responseURL : "";
  });
})();"""

# --two-requests: the flow before issue #46's fix, for an A/B in one sitting. Registered on the document, this runs
# after the page's own listener (on the body) and takes back the ``next`` it added: the decision's answer is then the
# decided mention's panel, and the page asks for the next mention's panel with a second request.
TWO_REQUESTS = """document.addEventListener("htmx:configRequest", (e) => {
  if (/\\/decide\\/$/.test(e.detail.path || "")) delete e.detail.parameters.next;
});"""

READ_PANEL = """() => {
  const s = window.__speed; s.keys = []; performance.clearResourceTimings();
  const body = document.querySelector("#panel .panel-body");
  return { id: body ? body.dataset.mentionId : null, status: body ? body.dataset.status : null, swaps: s.swaps,
           candidates: [...document.querySelectorAll("#panel .candidate")].map((li) => [Number(li.dataset.number), li.dataset.conceptId]) };
}"""

# The decided mention's panel has been replaced by another mention's, or the document is done (the page says so).
NEXT_READY = """([id, swaps]) => {
  const s = window.__speed, toast = document.getElementById("toast");
  const done = toast && !toast.hidden && toast.textContent.includes("Every mention of this document");
  return s.swaps > swaps && s.ready && (s.ready.id !== id || done);
}"""

COLLECT = """() => ({
  keys: window.__speed.keys, ready: window.__speed.ready,
  requests: performance.getEntriesByType("resource").filter((e) => e.initiatorType === "xmlhttprequest" || e.initiatorType === "fetch")
    .map((e) => ({ url: e.name, start: e.startTime, end: e.responseEnd,
                   server: (e.serverTiming.find((t) => t.name === "app") || { duration: null }).duration })),
})"""


@dataclass(frozen=True)
class Config:
    decisions: int = 200
    web_workers: int = 2
    data: Path = ROOT.parent / "shared" / "data"
    record: bool = True
    json_out: Path | None = None
    before: Path | None = None
    note: str = ""
    two_requests: bool = False  # the flow before the fix (see TWO_REQUESTS)


@dataclass
class Decision:
    mention: int
    kind: str  # accept, pick, search, not_found
    keys: int
    wall_ms: float  # first key to the next mention's panel painted
    wait_ms: float  # the deciding key to the next mention's panel painted
    server_ms: float  # every request of the decision, server side (Server-Timing)
    split: dict[str, float]  # the wait, by where it went
    requests: dict[str, int]  # requests of the decision, by kind
    last_in_document: bool


@dataclass
class Run:
    decisions: list[Decision] = field(default_factory=list)
    navigation_keys: int = 0
    document_opens_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0


# --- the scripted curator ----------------------------------------------------------------------------------


def request_kind(url: str) -> str:
    path = urlsplit(url).path
    for kind in ("decide", "panel", "search", "family"):
        if path.endswith(f"/{kind}/") or f"/{kind}/" in path:
            return kind
    return "other"


def choose(candidates: list[list[Any]], gold: str) -> tuple[str, int]:
    """What the curator does: accept (gold first), pick (gold numbered 2-9 in the list) or search."""
    for number, concept_id in candidates:
        if concept_id == gold and number == 1:
            return "accept", 1
        if concept_id == gold and 2 <= number <= 9:
            return "pick", number
    return "search", 0


def search_and_pick(page: Any, name: str, concept_id: str) -> tuple[int, bool]:
    """``/``, the name typed, Enter on the gold hit (the id typed instead when the name does not find it).
    Returns the keys pressed and whether the gold was found."""
    keys = 1
    page.keyboard.press("/")
    for attempt, query in enumerate((name, concept_id)):
        if attempt:
            page.keyboard.press("Control+a")
            keys += 1
        with page.expect_response(lambda r, q=query: "/search/" in r.url and parse_qs(urlsplit(r.url).query).get("q", [""])[0] == q):
            page.keyboard.type(query)
        keys += len(query)
        # The curator reads the hits: the results for this query, settled (htmx wires their buttons then).
        page.wait_for_function("(q) => new URL(window.__speed.searched || 'http://x/').searchParams.get('q') === q", arg=query)
        hits = page.evaluate("() => [...document.querySelectorAll('#search-results .search-hit .hit-id')].map((e) => e.textContent.trim())")
        if concept_id in hits:
            at = hits.index(concept_id)
            for _ in range(at + 1 if at else 0):  # ArrowDown focuses the first hit, then each next one
                page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            return keys + (at + 1 if at else 0) + 1, True
    page.keyboard.press("Escape")
    page.keyboard.press("n")  # nothing found: NIL, so the page moves on
    return keys + 2, False


def decide(page: Any, gold: dict[int, tuple[str, str]]) -> Decision | None:
    """One decision on the selected mention; None when the selected mention has no gold the run knows."""
    state = page.evaluate(READ_PANEL)
    mention = int(state["id"])
    if mention not in gold or state["status"] not in ("pending", "suggested"):
        return None
    concept_id, name = gold[mention]
    kind, number = choose(state["candidates"], concept_id)
    if kind == "accept":
        page.keyboard.press("a")
        keys = 1
    elif kind == "pick":
        page.keyboard.press(str(number))
        keys = 1
    else:
        keys, found = search_and_pick(page, name, concept_id)
        kind = "search" if found else "not_found"
    try:
        page.wait_for_function(NEXT_READY, arg=[str(mention), state["swaps"]], timeout=60_000)
    except Exception as exc:
        seen = page.evaluate("() => ({ speed: window.__speed, toast: document.getElementById('toast').textContent, "
                             "panel: (document.querySelector('#panel') || {}).innerText })")
        raise RuntimeError(f"no next mention after {kind} on mention {mention} ({page.url}): {json.dumps(seen)[:3000]}") from exc
    return measure(page.evaluate(COLLECT), mention, kind, keys)


def measure(seen: dict[str, Any], mention: int, kind: str, keys: int) -> Decision:
    """The decision's times from what the page recorded: its keys, its requests and the next panel's paint."""
    first, last, ready = seen["keys"][0], seen["keys"][-1], seen["ready"]["painted"]
    requests = sorted(seen["requests"], key=lambda r: r["start"])
    after = [r for r in requests if r["start"] >= last - 1]  # what the deciding key set off
    split: dict[str, float] = Counter()
    for r in after:
        split[f"{request_kind(r['url'])}_ms"] += r["end"] - r["start"]
        split[f"{request_kind(r['url'])}_server_ms"] += r["server"] or 0.0
    busy = sum(v for k, v in split.items() if not k.endswith("_server_ms"))
    split["client_ms"] = (ready - last) - busy  # script, swaps, timers, layout and paint between and after the requests
    split["render_ms"] = ready - max((r["end"] for r in after), default=last)  # the last answer to the paint
    return Decision(
        mention=mention, kind=kind, keys=keys, wall_ms=ready - first, wait_ms=ready - last,
        server_ms=sum(r["server"] or 0.0 for r in requests), split=dict(split),
        requests=dict(Counter(request_kind(r["url"]) for r in requests)),
        last_in_document=str(seen["ready"]["id"]) == str(mention),
    )


def curate(page: Any, base_url: str, first_document_url: str, gold: dict[int, tuple[str, str]], decisions: int,
           two_requests: bool = False) -> Run:
    """Documents in order, every open mention decided, until ``decisions`` are made (or the documents run out)."""
    run = Run()
    page.add_init_script(INSTRUMENT + (TWO_REQUESTS if two_requests else ""))
    page.goto(base_url + first_document_url)
    page.wait_for_function("() => window.__speed.ready")
    visited = {page.url.split("?")[0]}
    start = time.perf_counter()
    while len(run.decisions) < decisions:
        made = decide(page, gold)
        if made is not None:
            run.decisions.append(made)
            if not made.last_in_document:
                continue
        # The document is done (or had no open mention: the page then selects its first, set aside): the next one.
        if page.locator('a[rel="next"]').count() == 0:
            break
        opened = time.perf_counter()
        with page.expect_navigation():
            page.keyboard.press("]")
        run.navigation_keys += 1
        page.wait_for_function("() => window.__speed.ready")
        run.document_opens_ms.append((time.perf_counter() - opened) * 1000)
        if page.url.split("?")[0] in visited:
            break
        visited.add(page.url.split("?")[0])
    run.seconds = time.perf_counter() - start
    return run


# --- figures -----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def dist(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": round(statistics.median(values), 1), "mean": round(statistics.fmean(values), 1),
            "p95": round(percentile(values, 95), 1)}


def figures(run: Run) -> dict[str, Any]:
    ds = run.decisions
    moving = [d for d in ds if not d.last_in_document]  # the wait includes the next mention's panel
    split_keys = sorted({k for d in moving for k in d.split})
    by_kind = {kind: {"n": len(group), "keys": dist([d.keys for d in group]), "wall_ms": dist([d.wall_ms for d in group]),
                      "wait_ms": dist([d.wait_ms for d in group]), "server_ms": dist([d.server_ms for d in group])}
               for kind in ("accept", "pick", "search", "not_found") if (group := [d for d in ds if d.kind == kind])}
    requests = Counter()
    for d in moving:
        requests.update(d.requests)
    return {
        "decisions": len(ds),
        "decisions_per_min": round(len(ds) / (run.seconds / 60), 1) if run.seconds else 0.0,
        "seconds": round(run.seconds, 1),
        "kinds": {k: v["n"] for k, v in by_kind.items()},
        "keys_per_decision": dist([d.keys for d in ds]),
        "keys_per_decision_with_navigation": round((sum(d.keys for d in ds) + run.navigation_keys) / max(1, len(ds)), 2),
        "wall_ms": dist([d.wall_ms for d in ds]),
        "wait_ms": dist([d.wait_ms for d in moving]),
        "server_ms": dist([d.server_ms for d in ds]),
        "wait_split_median_ms": {k: round(statistics.median([d.split.get(k, 0.0) for d in moving]), 1) for k in split_keys},
        "wait_split_mean_ms": {k: round(statistics.fmean([d.split.get(k, 0.0) for d in moving]), 1) for k in split_keys},
        "requests_per_decision": {k: round(v / max(1, len(moving)), 2) for k, v in sorted(requests.items())},
        "by_kind": by_kind,
        "document_open_ms": dist(run.document_opens_ms),
        "documents": len(run.document_opens_ms) + 1,
    }


# --- setup -------------------------------------------------------------------------------------------------


def prepare(cfg: Config) -> dict[str, Any]:
    """MEDIC, NCBI dev with gold, a sparse index and suggestions, a curator; returns what was set up."""
    from django.contrib.auth.models import Group, User

    from webapp.corpus.importers import import_pubtator
    from webapp.corpus.models import Collection
    from webapp.curation.services import suggest_for_collection
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.importers import import_dictionary
    from webapp.vocab.models import Dictionary

    t0 = time.perf_counter()
    import_dictionary(cfg.data / DICTIONARY, dictionary_slug="medic")
    import_pubtator(cfg.data / DOCUMENTS, collection_slug=COLLECTION, dictionary_slug="medic")
    version = Dictionary.objects.get(slug="medic").latest_version()
    activate_index(build_index(create_index_version(version, None)).pk)  # webapp.launcher._ensure_indexes(dense=False)
    collection = Collection.objects.get(slug=COLLECTION)
    suggested = suggest_for_collection(collection.pk)
    user = User.objects.create_user(USERNAME, password=PASSWORD)
    user.groups.add(Group.objects.get(name="curator"))
    gold, set_aside = usable_gold(collection.pk)
    return {"setup_s": round(time.perf_counter() - t0, 1), "suggested": suggested, "gold_mentions": len(gold),
            "set_aside": set_aside, "gold": gold}


def usable_gold(collection_id: int) -> tuple[dict[int, tuple[str, str]], int]:
    """Each mention's one gold concept (id, preferred name); the others (composite, NIL, unresolved) are marked NIL
    so that the page never selects them."""
    from webapp.corpus.models import Link, Mention

    links: dict[int, list[Link]] = {}
    for link in Link.objects.filter(mention__document__collection_id=collection_id, origin=Link.Origin.GOLD).select_related("concept"):
        links.setdefault(link.mention_id, []).append(link)
    gold = {pk: (ls[0].concept.concept_id, ls[0].concept.preferred_name) for pk, ls in links.items()
            if len(ls) == 1 and ls[0].concept is not None}
    aside = Mention.objects.filter(document__collection_id=collection_id).exclude(pk__in=gold)
    return gold, aside.update(status=Mention.Status.NIL)


def first_document_url(collection_id: int) -> str:
    from django.urls import reverse

    from webapp.corpus.models import Document

    doc = Document.objects.filter(collection_id=collection_id).order_by("pk").first()
    assert doc is not None
    return reverse("curation:document", args=[COLLECTION, doc.pk])


def login(browser: Any, base_url: str) -> Any:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login" not in url)
    return page


def drive(base_url: str, document_url: str, gold: dict[int, tuple[str, str]], decisions: int, two_requests: bool = False) -> Run:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-background-networking"])
        try:
            page = login(browser, base_url)
            return curate(page, base_url, document_url, gold, decisions, two_requests)
        finally:
            browser.close()


def main(cfg: Config) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from webapp.corpus.models import Collection

    for rel in (DICTIONARY, DOCUMENTS):
        if not (cfg.data / rel).is_file():
            raise SystemExit(f"missing data file {cfg.data / rel}")
    machine = describe_machine(connection)
    load = round(os.getloadavg()[0], 1)
    original = connection.settings_dict["NAME"]
    database = f"bench_curator_speed_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = database
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    scratch = Path(tempfile.mkdtemp(prefix="curator-speed-"))
    artifacts = scratch / "artifacts"
    settings.ARTIFACT_ROOT = artifacts
    web = None
    try:
        setup = prepare(cfg)
        gold = setup.pop("gold")
        url = first_document_url(Collection.objects.get(slug=COLLECTION).pk)
        connection.close()
        port = load_bench._free_port()
        web = load_bench.start_web_server(SimpleNamespace(web_workers=cfg.web_workers), database, artifacts, port, scratch)
        run = drive(f"http://127.0.0.1:{port}", url, gold, cfg.decisions, cfg.two_requests)
    finally:
        if web is not None:
            load_bench._stop(web)
        connection.creation.destroy_test_db(original, verbosity=0)
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"benchmark": "curator_speed", "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine,
              "load_avg_1m_at_start": load, "web_workers": cfg.web_workers, "note": cfg.note, "two_requests": cfg.two_requests,
              "setup": setup, **figures(run)}
    if cfg.json_out:
        cfg.json_out.write_text(json.dumps(result, indent=1))
    if cfg.record:
        before = json.loads(cfg.before.read_text()) if cfg.before else None
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(entry(result, before))
    return result


ROWS: tuple[tuple[str, str, str], ...] = (
    # (label, figure, a dist's statistic or "" for a plain number)
    ("decisions per minute (scripted curator, typing at machine speed)", "decisions_per_min", ""),
    ("keys per decision, median", "keys_per_decision", "median"),
    ("keys per decision, mean", "keys_per_decision", "mean"),
    ("wall ms per decision (first key to the next panel painted), median", "wall_ms", "median"),
    ("wait ms after the deciding key, median", "wait_ms", "median"),
    ("wait ms after the deciding key, p95", "wait_ms", "p95"),
    ("server ms per decision, median", "server_ms", "median"),
    ("server ms per decision, p95", "server_ms", "p95"),
)


def _figure(result: dict[str, Any], key: str, stat: str) -> float | None:
    value = result.get(key)
    return value.get(stat) if isinstance(value, dict) else value


def entry(result: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The RESULTS.md section: the figures (beside an earlier run's, with ratios), the wait's split, the kinds."""
    when = result["date"][:16].replace("T", " ")
    lines = ["", f"## {when} UTC curator speed: keyboard-only in Chromium over NCBI Disease dev (bench/curator_speed.py)", "",
             f"Machine: {result['machine']}; 1-minute load average {result['load_avg_1m_at_start']} at the start "
             f"(before: {before['load_avg_1m_at_start'] if before else '-'}). gunicorn {result['web_workers']} workers x 4 threads; "
             f"CTD MEDIC with its sparse index (the run command's index for a data folder); "
             f"{result['setup']['gold_mentions']} NCBI dev mentions with one gold concept "
             f"({result['setup']['set_aside']} composite or unresolved set aside). Typing at machine speed: what the software "
             "costs a curator, not how fast a person reads.", ""]
    if result.get("note"):
        lines += [f"Note: {result['note']}", ""]
    runs = [("before", before), ("after", result)] if before else [("this run", result)]
    lines += ["| measure | " + " | ".join(name for name, _ in runs) + (" | after / before |" if before else " |"),
              "|---|" + "---:|" * (len(runs) + (1 if before else 0))]
    for label, key, stat in ROWS:
        values = [_figure(run, key, stat) for _, run in runs]
        ratio = [f"{values[1] / values[0]:.2f}" if values[0] and values[1] is not None else "-"] if before else []
        lines.append(f"| {label} | " + " | ".join(str(v) for v in values + ratio) + " |")
    lines += ["", "Where the wait after the deciding key goes (median ms over the decisions followed by another mention; "
              "server = the request's Server-Timing, the rest of a request is queueing and transfer):", "",
              "| part | " + " | ".join(name for name, _ in runs) + " |", "|---|" + "---:|" * len(runs)]
    parts = (("decision POST", "decide_ms"), ("of which server", "decide_server_ms"), ("panel GET", "panel_ms"),
             ("of which server", "panel_server_ms"), ("client: script, swaps, timers, paint", "client_ms"),
             ("of which last answer to paint", "render_ms"))
    for label, key in parts:
        lines.append(f"| {label} | " + " | ".join(str(run["wait_split_median_ms"].get(key, 0.0)) for _, run in runs) + " |")
    for name, run in runs:
        kinds = "; ".join(f"{kind} {v['n']} (keys {v['keys']['median']}, wait {v['wait_ms']['median']} ms, server "
                          f"{v['server_ms']['median']} ms)" for kind, v in run["by_kind"].items())
        lines += ["", f"{name.capitalize()}: {run['decisions']} decisions in {run['seconds']} s over {run['documents']} documents "
                  f"(opening the next with `]`: {run['document_open_ms'].get('median')} ms median); by kind, medians: {kinds}; "
                  f"requests per decision {run['requests_per_decision']}."]
    return "\n".join(lines) + "\n"


def _kinds(kinds: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--decisions", type=int, default=Config.decisions, help="Decisions to make (documents in order).")
    parser.add_argument("--web-workers", type=int, default=Config.web_workers, help="gunicorn workers (the run command's default).")
    parser.add_argument("--data", type=Path, default=Config.data, help="The shared data folder.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    parser.add_argument("--json-out", type=Path, help="Also write the result here (for a later --before).")
    parser.add_argument("--before", type=Path, help="An earlier run's --json-out, recorded beside this one with ratios.")
    parser.add_argument("--note", default="", help="What this run measures, recorded with the figures.")
    parser.add_argument("--two-requests", action="store_true",
                        help="The flow before issue #46's fix (a decision, then the next panel's GET), for an A/B.")
    args = parser.parse_args(argv)
    if args.decisions < 1:
        parser.error("--decisions must be at least 1")
    return Config(decisions=args.decisions, web_workers=args.web_workers, data=args.data, record=not args.no_record,
                  json_out=args.json_out, before=args.before, note=args.note, two_requests=args.two_requests)


if __name__ == "__main__":
    print(json.dumps(main(parse_args())), flush=True)
