"""Benchmark: the spaCy component elwb_linker linking gold mentions of NCBI Disease dev, one document at a time
(``nlp(text)``) against ``nlp.pipe`` batches (one search per batch); print one JSON object.

    python bench/spacy_pipe.py [--artifact var/artifacts/ncbi-biosyn] [--batch-sizes 8,64] [--note "..."]

Without ``--artifact`` a sparse-only linker (tf-idf) over MEDIC is built into var/bench/spacy-medic-sparse (once,
seconds). Each document's gold mentions become its ``doc.ents`` (widened to spaCy's tokens); the component alone
is timed (tokenising is not). Per mode: mentions/s, and Acc@1 of ``ent._.concept`` against the gold ids (a
composite's first part; NIL mentions left out), which must be the same in every mode. Figures are appended to
bench/RESULTS.md with the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def describe_machine() -> str:
    import torch

    cpu = next((line.partition(":")[2].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{os.cpu_count()}-core CPU ({cpu}), {gpu}, torch threads {torch.get_num_threads()}, "
            f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")


def sparse_artifact(dictionary: Path) -> Path:
    from linker.data import iter_dictionary
    from linker.linker import Linker

    folder = ROOT / "var" / "bench" / "spacy-medic-sparse"
    if not (folder / "config.json").exists():
        Linker.build(list(iter_dictionary(dictionary)), None).save(folder)
    return folder


def gold_docs(nlp: Any, corpus: Path) -> tuple[list[Any], list[list[str | None]]]:
    """spaCy docs whose ents are the gold mentions, and each entity's gold id (its first part's; None: NIL)."""
    from spacy.util import filter_spans

    from linker.data import iter_pubtator

    docs, gold = [], []
    for d in iter_pubtator(corpus):
        doc = nlp.make_doc(d.text)
        spans = {}
        for m in d.mentions:
            span = doc.char_span(m.start, m.end, label=m.mention_type or "DISEASE", alignment_mode="expand")
            if span is not None:
                spans[(span.start, span.end)] = (span, m.concept_ids[0] if m.concept_ids else None)
        kept = filter_spans([s for s, _ in spans.values()])
        doc.ents = kept
        docs.append(doc)
        gold.append([spans[(s.start, s.end)][1] for s in kept])
    return docs, gold


def measure(component: Any, docs: list[Any], gold: list[list[str | None]], table: Any, batch: int | None) -> dict[str, Any]:
    for doc in docs:  # every extension back to its default
        for ent in doc.ents:
            ent._.concept = None
    t0 = time.perf_counter()
    if batch is None:
        for doc in docs:
            component(doc)
    else:
        for _ in component.pipe(docs, batch_size=batch):
            pass
    seconds = time.perf_counter() - t0
    mentions = sum(len(doc.ents) for doc in docs)
    pairs = [(ent._.concept, g) for doc, ids in zip(docs, gold, strict=True) for ent, g in zip(doc.ents, ids, strict=True)
             if g is not None]
    right = sum(1 for got, want in pairs if got is not None and got == table.resolve_id(want))
    return {"seconds": round(seconds, 2), "mentions_per_s": round(mentions / seconds, 1),
            "acc@1": round(right / max(len(pairs), 1), 4),
            "concepts": [ent._.concept for doc in docs for ent in doc.ents]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact", help="a linker artifact folder (default: a sparse-only MEDIC linker built here)")
    parser.add_argument("--dictionary", default=str(DATA / "medic" / "medic_06Jul2012.txt"))
    parser.add_argument("--corpus", default=str(DATA / "ncbi-disease" / "NCBIdevelopset_corpus.txt"))
    parser.add_argument("--batch-sizes", default="8,64")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import spacy

    import linker.spacy_component  # noqa: F401

    artifact = Path(args.artifact) if args.artifact else sparse_artifact(Path(args.dictionary))
    nlp = spacy.blank("en")
    component = nlp.add_pipe("elwb_linker", config={"artifact": str(artifact), "k": 5})
    docs, gold = gold_docs(nlp, Path(args.corpus))
    table = component.linker.table
    component.link(docs[:2])  # warm-up (first-call allocations, a transformer's first pass)
    modes: dict[str, Any] = {"one_at_a_time": measure(component, docs, gold, table, None)}
    for size in (int(s) for s in args.batch_sizes.split(",") if s.strip()):
        modes[f"pipe_{size}"] = measure(component, docs, gold, table, size)
    reference = modes["one_at_a_time"]["concepts"]
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": describe_machine(), "note": args.note,
        "artifact": str(artifact), "ranked_by": component.linker.ranked_by, "corpus": Path(args.corpus).name,
        "documents": len(docs), "mentions": sum(len(d.ents) for d in docs),
        "same_concepts_in_every_mode": all(m["concepts"] == reference for m in modes.values()),
        "modes": {name: {k: v for k, v in m.items() if k != "concepts"} for name, m in modes.items()},
    }
    print(json.dumps(result, indent=2))
    if not args.no_record:
        lines = ["", f"## {result['date'][:16].replace('T', ' ')} UTC spaCy elwb_linker, one document at a time vs "
                 f"nlp.pipe (bench/spacy_pipe.py, issue #45)", "",
                 f"Machine: {result['machine']}." + (f" {args.note}" if args.note else ""), "",
                 f"{result['documents']} documents of {result['corpus']}, {result['mentions']} gold mentions as doc.ents; "
                 f"artifact {artifact.name} (ranked by the {result['ranked_by']}); k = 5; the component alone is timed. "
                 f"Same concepts in every mode: {result['same_concepts_in_every_mode']}.", "",
                 "| mode | seconds | mentions/s | Acc@1 |", "|---|---:|---:|---:|"]
        lines += [f"| {name} | {m['seconds']} | {m['mentions_per_s']} | {m['acc@1']} |" for name, m in result["modes"].items()]
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
