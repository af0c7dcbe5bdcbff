"""bench/corpus.py's dated section of bench/RESULTS.md: the figures as tables, the corpus said to be synthetic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def append_results(result: dict[str, Any]) -> None:
    lines = [
        "",
        f"## {result['date'][:16].replace('T', ' ')} UTC corpus benchmark (bench/corpus.py): SYNTHETIC PubMed corpus, "
        f"stages {', '.join(result['stages'])}",
        "",
        f"Machine: {result.get('machine', '?')}; 1-minute load average {result['load_avg_1m_at_start']} at the start; "
        + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + "."
        + (f" **{result['note']}**" if result["note"] else ""),
    ]
    if "build" in result:
        b = result["build"]
        lines += ["", f"Corpus: {b['articles']:,} abstracts in {b['files']} `.xml.gz` files ({b['mb']} MB), "
                  f"{b['mean_sentences_per_abstract']} sentences and {b['mean_chars_per_abstract']:,} characters per "
                  f"abstract on average, drawn from {b['pool']['sentences']:,} sentences and {b['pool']['titles']:,} titles "
                  f"of {b['pool']['abstracts']:,} real abstracts. {b['note']}."]
    lines += _import(result.get("import")) + _annotate(result.get("annotate")) + _export(result.get("export"))
    lines += _extrapolate(result.get("extrapolate"))
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _import(imp: dict[str, Any] | None) -> list[str]:
    if not imp:
        return []
    s = imp["size_per_100k_documents"]
    return ["", "| import: documents | files | seconds (process wall) | documents/s | peak RSS (MB) | MB per 100K documents: documents table | "
            "database growth |", "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {imp['documents']:,} | {imp['files']} | {imp['importing_s']} ({imp['wall_s']}) | {imp['documents_per_s']:,} | "
            f"{imp['peak_rss_mb']} | {s.get('document_mb')} | {s.get('database_delta_mb')} |"]


def _annotate(ann: dict[str, Any] | None) -> list[str]:
    if not ann:
        return []
    size = ann.get("annotation_size_per_100k_documents_mb") or {}
    lines = ["", f"Pre-annotation (corpus runs) of {ann['documents']:,} documents, chunks of {ann['chunk_size']}: {ann['how']}. "
             f"{ann['mentions_per_document']} mentions and {ann['links_per_document']} links per document; their tables "
             f"grow {size.get('mention', '?')} MB (mentions) + {size.get('link', '?')} MB (links) per 100K documents.", "",
             "| workers | threads each | warm-up (s) | wall (s) | abstracts/min | efficiency vs linear | peak RSS per worker (MB) | worker CPU (s) | "
             "PostgreSQL CPU (s): bench backends / whole server | commits | write share |",
             "|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|"]
    for w, r in ann["runs"].items():
        share = r.get("write_share")
        commits = ((r.get("postgres") or {}).get("database") or {}).get("xact_commit", "?")
        pg = r["postgres_cpu_s"]
        lines.append(f"| {w} | {r.get('threads_per_worker', '?')} | {r['warmup_s']} | {r['wall_s']} | {r['abstracts_per_min']:,} | {r['efficiency_vs_linear']} | "
                     f"{', '.join(map(str, r['peak_rss_mb_per_worker']))} | {', '.join(map(str, r['worker_cpu_s']))} | "
                     f"{pg['bench_database_backends']} / {pg['whole_server']} | {commits:,} | "
                     f"{'-' if share is None else f'{share:.0%}'} |")
    profiled = {w: r for w, r in ann["runs"].items() if r["stages_s"]}
    if profiled:
        names = sorted({n for r in profiled.values() for n in r["stages_s"]})
        lines += ["", "Per-stage profile (seconds summed over the chunks, share of their total):", "",
                  "| workers | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
        for w, r in profiled.items():
            lines.append(f"| {w} | " + " | ".join(f"{r['stages_s'].get(n, 0)} ({r['stage_share'].get(n, 0):.0%})"
                                                   for n in names) + " |")
    else:
        lines += ["", "No per-stage profile: the chunk jobs recorded no `stages` in their result."]
    return lines


def _export(exp: dict[str, Any] | None) -> list[str]:
    if not exp:
        return []
    if "unavailable" in exp:
        return ["", f"Export: not measured: {exp['unavailable']}."]
    lines = ["", f"| export of {exp['collection']} ({exp['documents']:,} documents, with each mention's best suggestion): format | seconds (the command's, its start included) | documents/s | "
             "file (MB) | peak RSS (MB) |", "|---|---:|---:|---:|---:|"]
    for fmt, f in exp["formats"].items():
        lines.append(f"| {fmt} | " + (f"{f['seconds']} | {f['documents_per_s']:,} | {f['file_mb']} | {f['peak_rss_mb']} |"
                                      if "seconds" in f else f"failed: {f.get('error')} | | | |"))
    return lines


def _extrapolate(ext: dict[str, Any] | None) -> list[str]:
    if not ext:
        return []
    if "unavailable" in ext:
        return ["", f"Extrapolation: {ext['unavailable']}."]
    hours = ", ".join(f"{h:,} h on {m}" for m, h in ext["hours_on"].items())
    lines = ["", f"All of PubMed ({ext['abstracts']:,} abstracts) at {ext['rate_per_machine_per_min']:,} abstracts/min per "
             f"machine ({ext['rate_from']}; {ext['docs_per_s_per_core']} documents/s per core): {hours} machine(s); "
             f"{ext['core_hours']:,} core-hours. Against the issue's anchors (core-hours for 36M; ours over theirs):", ""]
    lines += [f"- {name}: {a['core_hours']} core-hours; ratio {a['ours_over_theirs']}" for name, a in ext["anchors"].items()]
    if "postgres_cores_needed_on" in ext:
        need = ", ".join(f"{c} ({m})" for m, c in ext["postgres_cores_needed_on"].items())
        lines += ["", f"PostgreSQL: {ext['postgres_cpu_s_per_document']} CPU s per document in the bench database's "
                  f"backends, so the database server gives the workers of m machines about this many of its cores: {need} ({ext['postgres_note']})."]
    return lines
