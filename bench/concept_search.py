"""Benchmark: how concept search ranks the concept a curator means, on CTD MEDIC; prints one JSON object.

    python bench/concept_search.py [--data ../shared/data] [--save before.json] [--baseline before.json]
                                   [--note "..."] [--no-record]

A throwaway database is created on the configured PostgreSQL server (as bench/curation.py does), migrated and
filled with ``manage.py import_dictionary`` (medic/CTD_diseases.tsv.gz). Then each query of :data:`QUERIES`
(what a curator types into the candidate panel's search: preferred names, the first words of one, common
abbreviations, typos, word-order variants and lay names) goes through
:func:`webapp.vocab.selectors.search_concepts`, as the panel's search view calls it, and the rank of the intended
concept among the 20 hits is recorded (none: not found).

Figures: MRR (1/rank, 0 when not found), the share at rank 1, in the top 3 and found at all, overall and per kind
of query, and each query's rank. ``--save`` writes the JSON for a later ``--baseline`` run, which lists the
ranks before and after side by side (measure before a change to search, save, change, measure again).
The figures are appended to bench/RESULTS.md with the machine they ran on (append only).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

describe_machine = importlib.import_module("bench.import").describe_machine

RESULTS = ROOT / "bench" / "RESULTS.md"
MEDIC = "medic/CTD_diseases.tsv.gz"
LIMIT = 20  # the panel's search shows this many (webapp.vocab.selectors.SEARCH_LIMIT)

# (kind, query, intended concept id). Kinds: preferred (a preferred name as typed), start (its first words, what
# a curator types before picking), abbreviation, typo, order (the words in another order), lay (a lay synonym).
QUERIES: list[tuple[str, str, str]] = [
    ("start", "diabetes", "MESH:D003920"),
    ("start", "diabetes mellitus", "MESH:D003920"),
    ("preferred", "diabetes mellitus, type 2", "MESH:D003924"),
    ("preferred", "diabetes mellitus type 1", "MESH:D003922"),
    ("preferred", "complement component 7 deficiency", "MESH:C566443"),
    ("preferred", "complement 7 deficiency", "MESH:C566443"),
    ("preferred", "complement component 2 deficiency", "OMIM:217000"),
    ("preferred", "breast neoplasms", "MESH:D001943"),
    ("preferred", "hypertension", "MESH:D006973"),
    ("preferred", "myocardial infarction", "MESH:D009203"),
    ("preferred", "alzheimer disease", "MESH:D000544"),
    ("preferred", "parkinson disease", "MESH:D010300"),
    ("preferred", "multiple sclerosis", "MESH:D009103"),
    ("preferred", "asthma", "MESH:D001249"),
    ("preferred", "cystic fibrosis", "MESH:D003550"),
    ("preferred", "huntington disease", "MESH:D006816"),
    ("preferred", "hemochromatosis", "MESH:D006432"),
    ("preferred", "glaucoma", "MESH:D005901"),
    ("preferred", "melanoma", "MESH:D008545"),
    ("preferred", "retinoblastoma", "MESH:D012175"),
    ("preferred", "neuroblastoma", "MESH:D009447"),
    ("preferred", "osteoporosis", "MESH:D010024"),
    ("preferred", "schizophrenia", "MESH:D012559"),
    ("preferred", "epilepsy", "MESH:D004827"),
    ("preferred", "obesity", "MESH:D009765"),
    ("preferred", "sepsis", "MESH:D018805"),
    ("preferred", "gout", "MESH:D006073"),
    ("preferred", "dementia", "MESH:D003704"),
    ("preferred", "hepatitis", "MESH:D006505"),
    ("preferred", "pain", "MESH:D010146"),
    ("preferred", "fever", "MESH:D005334"),
    ("preferred", "hearing loss", "MESH:D034381"),
    ("preferred", "heart failure", "MESH:D006333"),
    ("preferred", "marfan syndrome", "MESH:D008382"),
    ("preferred", "down syndrome", "MESH:D004314"),
    ("preferred", "hereditary breast and ovarian cancer syndrome", "MESH:D061325"),
    ("start", "breast neo", "MESH:D001943"),
    ("start", "alzheimer", "MESH:D000544"),
    ("start", "parkinson", "MESH:D010300"),
    ("start", "huntington", "MESH:D006816"),
    ("start", "hemophilia", "MESH:D006467"),
    ("start", "hypoglyc", "MESH:D007003"),
    ("start", "hyperglycemia", "MESH:D006943"),
    ("start", "crohn", "MESH:D003424"),
    ("start", "anemia, sickle", "MESH:D000755"),
    ("start", "lung neoplasm", "MESH:D008175"),
    ("start", "myasthenia", "MESH:D009157"),
    ("start", "atrial fibr", "MESH:D001281"),
    ("start", "tuberculosis", "MESH:D014376"),
    ("start", "malaria", "MESH:D008288"),
    ("abbreviation", "ADHD", "MESH:D001289"),
    ("abbreviation", "COPD", "MESH:D029424"),
    ("abbreviation", "AML", "MESH:D015470"),
    ("abbreviation", "SLE", "MESH:D008180"),
    ("abbreviation", "GERD", "MESH:D005764"),
    ("abbreviation", "HCC", "MESH:D006528"),
    ("abbreviation", "DMD", "MESH:D020388"),
    ("abbreviation", "NF1", "MESH:D009456"),
    ("abbreviation", "PKU", "MESH:D010661"),
    ("abbreviation", "IDDM", "MESH:D003922"),
    ("abbreviation", "NIDDM", "MESH:D003924"),
    ("abbreviation", "ADPKD", "MESH:D016891"),
    ("abbreviation", "PCOS", "MESH:D011085"),
    ("abbreviation", "ESRD", "MESH:D007676"),
    ("abbreviation", "C7 deficiency", "MESH:C566443"),
    ("abbreviation", "HBOC syndrome", "MESH:D061325"),
    ("typo", "diabetis", "MESH:D003920"),
    ("typo", "diabetes melitus", "MESH:D003920"),
    ("typo", "alzheimers disease", "MESH:D000544"),
    ("typo", "parkinsons disease", "MESH:D010300"),
    ("typo", "schizofrenia", "MESH:D012559"),
    ("typo", "hypertenion", "MESH:D006973"),
    ("typo", "astma", "MESH:D001249"),
    ("typo", "melanomma", "MESH:D008545"),
    ("typo", "cystic fibrossis", "MESH:D003550"),
    ("typo", "epilepsey", "MESH:D004827"),
    ("typo", "myocardial infraction", "MESH:D009203"),
    ("typo", "retinoblastma", "MESH:D012175"),
    ("typo", "osteoporsis", "MESH:D010024"),
    ("typo", "hemocromatosis", "MESH:D006432"),
    ("order", "cancer breast", "MESH:D001943"),
    ("order", "deficiency complement component 7", "MESH:C566443"),
    ("order", "leukemia acute myeloid", "MESH:D015470"),
    ("order", "acute myeloid leukemia", "MESH:D015470"),
    ("order", "sickle cell anemia", "MESH:D000755"),
    ("order", "ulcerative colitis", "MESH:D003093"),
    ("order", "hypertrophic cardiomyopathy", "MESH:D002312"),
    ("order", "systemic lupus erythematosus", "MESH:D008180"),
    ("order", "chronic obstructive pulmonary disease", "MESH:D029424"),
    ("order", "type 2 diabetes mellitus", "MESH:D003924"),
    ("order", "duchenne muscular dystrophy", "MESH:D020388"),
    ("order", "ovarian cancer", "MESH:D010051"),
    ("order", "pancreatic cancer", "MESH:D010190"),
    ("order", "prostate cancer", "MESH:D011471"),
    ("lay", "heart attack", "MESH:D009203"),
    ("lay", "high blood pressure", "MESH:D006973"),
    ("lay", "flu", "MESH:D007251"),
    ("lay", "breast cancer", "MESH:D001943"),
    ("lay", "lung cancer", "MESH:D008175"),
    ("lay", "blood poisoning", "MESH:D018805"),
    ("lay", "chronic kidney disease", "MESH:D051436"),
    ("lay", "liver cirrhosis", "MESH:D008103"),
]


def main(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.db import connection

    path = args.data / MEDIC
    if not path.is_file():
        raise SystemExit(f"missing data file: {path}")
    machine = describe_machine(connection)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_concept_search_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from django.core.management import call_command

        t0 = time.perf_counter()
        call_command("import_dictionary", str(path), "--slug", "medic", verbosity=0)
        import_s = round(time.perf_counter() - t0, 1)
        rows = measure()
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)
    result = {
        "benchmark": "concept_search",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "import_medic_s": import_s,
        "limit": LIMIT,
        "summary": summarise(rows),
        "by_kind": {kind: summarise([r for r in rows if r["kind"] == kind]) for kind in _kinds()},
        "queries": rows,
    }
    return result


def _kinds() -> list[str]:
    return list(dict.fromkeys(kind for kind, _, _ in QUERIES))


def measure() -> list[dict[str, Any]]:
    """Each query's rank of its intended concept, its first hit and its time (after one warm-up pass)."""
    from webapp.vocab.models import Concept, Dictionary
    from webapp.vocab.selectors import search_concepts

    version = Dictionary.objects.get(slug="medic").latest_version()
    assert version is not None
    known = set(Concept.objects.filter(version=version).values_list("concept_id", flat=True))
    missing = sorted({cid for _, _, cid in QUERIES} - known)
    if missing:
        raise SystemExit(f"intended concepts not in MEDIC: {', '.join(missing)}")
    for _, query, _ in QUERIES:  # warm the caches: the times below are of a search a curator repeats
        search_concepts(version, query, limit=LIMIT)
    rows = []
    for kind, query, intended in QUERIES:
        t0 = time.perf_counter()
        hits = search_concepts(version, query, limit=LIMIT)
        ms = (time.perf_counter() - t0) * 1000
        ids = [h.concept.concept_id for h in hits]
        rank = ids.index(intended) + 1 if intended in ids else None
        first = hits[0] if hits else None
        rows.append({
            "kind": kind, "query": query, "intended": intended, "rank": rank, "ms": round(ms, 1),
            "first": f"{first.concept.concept_id} {first.concept.preferred_name} (matched {first.matched!r})" if first else None,
        })
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ranks = [r["rank"] for r in rows]
    n = len(rows)
    return {
        "n": n,
        "mrr": round(sum(1 / r for r in ranks if r) / n, 3) if n else 0.0,
        "rank1": round(sum(1 for r in ranks if r == 1) / n, 3) if n else 0.0,
        "top3": round(sum(1 for r in ranks if r and r <= 3) / n, 3) if n else 0.0,
        "found": round(sum(1 for r in ranks if r) / n, 3) if n else 0.0,
        "p50_ms": round(statistics.median([r["ms"] for r in rows]), 1) if n else 0.0,
    }


def _rank(rank: int | None) -> str:
    return str(rank) if rank else f">{LIMIT}"


def markdown(result: dict[str, Any], baseline: dict[str, Any] | None, note: str) -> str:
    before = {r["query"]: r for r in baseline["queries"]} if baseline else {}
    lines = [
        "",
        f"## Concept search ranking on CTD MEDIC ({result['date'][:10]})",
        "",
        f"`python bench/concept_search.py{' --baseline ...' if baseline else ''}` on {result['machine']}. "
        f"{len(result['queries'])} curator-style queries through `search_concepts` (the panel's search, 20 hits), "
        "each with the concept a curator means; rank = where that concept is (>20: not in the list)."
        + (f" {note}" if note else ""),
        "",
        "| queries | n | MRR | rank 1 | top 3 | found | p50 ms |" + (" before: MRR | rank 1 | top 3 | found |" if baseline else ""),
        "|---|---|---|---|---|---|---|" + ("---|---|---|---|" if baseline else ""),
    ]
    groups = [("all", result["summary"], baseline["summary"] if baseline else None)]
    groups += [(k, result["by_kind"][k], baseline["by_kind"].get(k) if baseline else None) for k in result["by_kind"]]
    for label, now, then in groups:
        row = f"| {label} | {now['n']} | {now['mrr']} | {now['rank1']} | {now['top3']} | {now['found']} | {now['p50_ms']} |"
        if baseline:
            row += f" {then['mrr']} | {then['rank1']} | {then['top3']} | {then['found']} |" if then else " | | | |"
        lines.append(row)
    changed = [r for r in result["queries"] if not baseline or before.get(r["query"], {}).get("rank") != r["rank"]]
    worse = [r for r in result["queries"] if r["rank"] != 1]
    if baseline:
        lines += ["", f"Queries whose rank changed ({len(changed)} of {len(result['queries'])}):", "",
                  "| kind | query | intended | before | after | first hit now |", "|---|---|---|---|---|---|"]
        for r in changed:
            lines.append(f"| {r['kind']} | {r['query']} | {r['intended']} | {_rank(before.get(r['query'], {}).get('rank'))} "
                         f"| {_rank(r['rank'])} | {r['first']} |")
    lines += ["", f"Queries not at rank 1 ({len(worse)}):", "", "| kind | query | intended | rank | first hit |", "|---|---|---|---|---|"]
    lines += [f"| {r['kind']} | {r['query']} | {r['intended']} | {_rank(r['rank'])} | {r['first']} |" for r in worse]
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--save", type=Path, help="Also write the JSON here (a later run's --baseline).")
    parser.add_argument("--baseline", type=Path, help="A saved run to compare with, query by query.")
    parser.add_argument("--note", default="", help="A sentence appended to the recorded figures.")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to bench/RESULTS.md.")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    outcome = main(arguments)
    base = json.loads(arguments.baseline.read_text()) if arguments.baseline else None
    if arguments.save:
        arguments.save.write_text(json.dumps(outcome, indent=1))
    if not arguments.no_record:
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(markdown(outcome, base, arguments.note))
    print(json.dumps({k: v for k, v in outcome.items() if k != "queries"}, indent=1))
