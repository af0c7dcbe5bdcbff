"""Benchmark: where a linker artifact's dev errors are (linker.errors); print one JSON object.

    python bench/errors.py --artifact var/artifacts/bc5cdr-latte \
        --dev ../shared/data/bc5cdr/CDR_DevelopmentSet.PubTator.txt \
        --train ../shared/data/bc5cdr/CDR_TrainingSet.PubTator.txt --mention-types Disease \
        --hierarchy ../shared/data/medic/CTD_diseases.tsv.gz [--k 20] [--note "..."] [--no-record]

Each dev mention part is linked as ``python -m linker evaluate`` links it (in its document, re-ranked where the
artifact has a re-ranker) and labelled: its string seen among the training mentions or not; gold's rank in the top
``--k``; for a wrong part, how gold stands to the top-1 in ``--hierarchy`` (a dictionary file with parent links;
MEDIC 2012 has none, so NCBI is read against CTD_diseases.tsv.gz). The counts are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "RESULTS.md"
RANK_WORDS = {"2": "2nd", "3-5": "3rd-5th", "6+": "6th-{k}th", "absent": "outside the top {k}"}


def analyse(args: argparse.Namespace) -> dict[str, Any]:
    from linker.data import iter_dictionary, iter_pubtator
    from linker.errors import part_outcomes, summarize
    from linker.evaluate import evaluate_linking
    from linker.linker import Linker
    from linker.protocol import build_eval_set, training_pairs
    from linker.rerank import MentionSpan

    types = {t.strip() for t in args.mention_types.split(",")} if args.mention_types else None
    linker = Linker.load(args.artifact, strict_rerank=True)
    docs = list(iter_pubtator(args.dev))
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, types)
    texts = {d.pmid: d.text for d in docs}
    if linker.reranker is not None:
        ranked = [linker.link_in_context([MentionSpan(m.text, m.start, m.end)], texts.get(m.pmid, ""), args.k,
                                         queries=[m.queries])[0].by_part(len(m.queries)) for m in eval_set]
    else:
        ranked = linker.link_queries([m.queries for m in eval_set], args.k)
    ids = [[[c.concept_id for c in part] for part in parts] for parts in ranked]
    train_docs = [d for path in args.train for d in iter_pubtator(path)]
    seen = {query for query, _ in training_pairs(train_docs, linker.table, linker.preprocessor, types)}
    parents: dict[str, set[str]] = {}
    if args.hierarchy:
        for record in iter_dictionary(args.hierarchy):
            child = linker.table.resolve_id(record.concept_id)
            if child is None:
                continue
            for raw in record.parents:
                parent = linker.table.resolve_id(raw)
                if parent is not None and parent != child:
                    parents.setdefault(child, set()).add(parent)
    outcomes = part_outcomes([m.queries for m in eval_set], [m.gold_parts for m in eval_set], ids, seen, parents)
    metrics = evaluate_linking([m.gold_parts for m in eval_set], ids)
    return {
        "benchmark": "errors",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()}-core CPU ({platform.machine()}), Python {platform.python_version()}",
        "artifact": str(args.artifact), "ranked_by": linker.ranked_by, "dev": str(args.dev),
        "train": [str(t) for t in args.train], "hierarchy": str(args.hierarchy or ""), "k": args.k,
        "acc@1": round(metrics["acc@1"], 4), "acc@5": round(metrics["acc@5"], 4),
        **summarize(outcomes), "note": args.note,
    }


def append_results(r: dict[str, Any]) -> None:
    seen, unseen = r["seen"], r["unseen"]
    lines = [
        "",
        f"## {r['date'][:16].replace('T', ' ')} UTC where the errors are (bench/errors.py)",
        "",
        f"Machine: {r['machine']}. Artifact {r['artifact']} (ranked by {r['ranked_by']}) on {Path(r['dev']).name}; "
        f"seen = the normalised string is a mention of {', '.join(Path(t).name for t in r['train'])}; "
        f"hierarchy: {Path(r['hierarchy']).name if r['hierarchy'] else 'none'}. Acc@1 {r['acc@1']}, Acc@5 {r['acc@5']}."
        + (f" {r['note']}" if r["note"] else ""),
        "",
        "| mention parts | right | wrong |",
        "|---|---:|---:|",
        f"| string seen in training | {seen['right']:,} | {seen['wrong']:,} |",
        f"| unseen string | {unseen['right']:,} | {unseen['wrong']:,} |",
        "",
        f"Unseen and wrong ({unseen['wrong']:,}), gold ranked "
        + ", ".join(f"{RANK_WORDS[k].format(k=r['k'])}: {v}" for k, v in r["unseen_wrong_gold_rank"].items())
        + "; gold against the top-1: " + ", ".join(f"{k} {v}" for k, v in r["unseen_wrong_relation"].items()) + ".",
    ]
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--artifact", required=True, type=Path)
    parser.add_argument("--dev", required=True, type=Path, help="PubTator file with gold mentions")
    parser.add_argument("--train", nargs="+", default=[], type=Path, help="the PubTator files the linker trained on")
    parser.add_argument("--mention-types", help="comma-separated, e.g. Disease")
    parser.add_argument("--hierarchy", type=Path, help="a dictionary file with parent links (CTD_diseases.tsv.gz, OBO)")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    result = analyse(args)
    print(json.dumps(result, indent=2))
    if not args.no_record:
        append_results(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
