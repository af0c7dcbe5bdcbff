"""Benchmark: mention detection on NCBI Disease dev and BC5CDR-disease dev; print one JSON object.

    python bench/detection.py --tagger-ncbi var/artifacts/tagger-ncbi --tagger-bc5cdr var/artifacts/tagger-bc5cdr \
        [--data ../shared/data] [--note "..."] [--no-record]

Taggers are made by ``python -m linker train-tagger`` on the training split of the same corpus (the CPU default;
see the README). Per dataset, mention-level precision / recall / F1 with exact and with overlapping spans
(:mod:`linker.detect.metrics`) of

* the dictionary matcher over the dictionary's names (MEDIC 2012 for NCBI, CTD MEDIC for BC5CDR), and over the
  names plus the training split's mention texts (what a workbench holds once that split is curated: its mentions
  are curator synonyms of the index the matcher reads);
* the tagger;
* both merged by each rule of :mod:`linker.detect.merge` (the web app uses ``tagger-first``), the matcher over
  names plus training mentions; for a tagger reading dictionary features, also the web app's rule for it
  (``new-names-only``: only matcher spans of names the tagger's gazetteer lacks are merged in);

and each detector's speed (documents/s over the dev abstracts, one process, 2 torch threads). The goal (issue
#14): tagger F1 >= 0.85 on NCBI dev and >= 0.83 on BC5CDR-disease dev. Figures are appended to bench/RESULTS.md
with the machine they ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "RESULTS.md"
DATASETS: dict[str, dict[str, Any]] = {
    # NCBI's four mention types are all diseases; BC5CDR's Chemical mentions are not this task's.
    "ncbi": {"train": "ncbi-disease/NCBItrainset_corpus.txt", "dev": "ncbi-disease/NCBIdevelopset_corpus.txt",
             "types": None, "dictionary": "medic/medic_06Jul2012.txt", "goal": 0.85},
    "bc5cdr": {"train": "bc5cdr/CDR_TrainingSet.PubTator.txt", "dev": "bc5cdr/CDR_DevelopmentSet.PubTator.txt",
               "types": {"Disease"}, "dictionary": "medic/CTD_diseases.tsv.gz", "goal": 0.83},
}


def describe_machine() -> str:
    cpu = ""
    try:
        cpu = next((line.partition(":")[2].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    except OSError:
        pass
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{os.cpu_count()}-core CPU ({cpu or platform.processor()}), {gpu}, Python {platform.python_version()}"


def _gold(docs: Sequence[Any], types: set[str] | None) -> list[list[tuple[int, int]]]:
    from linker.methods.tagger import gold_spans

    return [gold_spans(d, types) for d in docs]


def _figures(gold: list[list[tuple[int, int]]], predicted: list[list[Any]], seconds: float) -> dict[str, Any]:
    from linker.detect.metrics import span_prf

    offsets = [[(s.start, s.end) for s in spans] for spans in predicted]
    exact, overlap = span_prf(gold, offsets, "exact"), span_prf(gold, offsets, "overlap")
    return {
        "exact": {k: round(exact[k], 4) for k in ("precision", "recall", "f1")},
        "overlap": {k: round(overlap[k], 4) for k in ("precision", "recall", "f1")},
        "predicted": int(exact["predicted"]), "gold": int(exact["gold"]),
        "documents_per_s": round(len(gold) / max(seconds, 1e-9), 1) if seconds else None,
    }


def measure(name: str, data: Path, tagger_folder: Path | None) -> dict[str, Any]:
    import torch

    from linker.data import iter_dictionary, iter_pubtator
    from linker.detect.matcher import DictionaryMatcher
    from linker.detect.merge import RULES, merge
    from linker.detect.tagger import Tagger

    spec = DATASETS[name]
    types = spec["types"]
    dev = list(iter_pubtator(data / spec["dev"]))
    train = list(iter_pubtator(data / spec["train"]))
    texts = [d.text for d in dev]
    gold = _gold(dev, types)
    names = [n for record in iter_dictionary(data / spec["dictionary"]) for n in record.all_names()]
    train_mentions = [m.text for d in train for m in d.mentions if types is None or m.mention_type in types]
    out: dict[str, Any] = {"documents": len(dev), "gold_mentions": sum(map(len, gold)),
                           "dictionary": spec["dictionary"], "dictionary_names": len(names)}

    matchers: dict[str, list[Any]] = {}
    for label, vocabulary in (("matcher", names), ("matcher+train", names + train_mentions)):
        t0 = time.perf_counter()
        matcher = DictionaryMatcher(vocabulary)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        matchers[label] = matcher.find_many(texts)
        out[label] = _figures(gold, matchers[label], time.perf_counter() - t0) | {"build_s": round(built, 2)}

    if tagger_folder is not None:
        torch.set_num_threads(2)
        tagger = Tagger.load(tagger_folder, device="cpu")
        tagger.predict(texts[:4])  # warm-up
        t0 = time.perf_counter()
        tagged = tagger.predict(texts, batch_size=16)
        out["tagger"] = _figures(gold, tagged, time.perf_counter() - t0) | {
            "folder": str(tagger_folder), "training": {k: tagger.metadata.get("training", {}).get(k)
                                                       for k in ("best_epoch", "epochs", "train_s", "documents")}}
        for rule in RULES:
            merged = [merge(m, t, rule) for m, t in zip(matchers["matcher+train"], tagged, strict=True)]
            out[f"both:{rule}"] = _figures(gold, merged, 0.0)
        if tagger.gazetteer is not None:
            # The web app's rule for a tagger reading dictionary features: only names new to it are merged in.
            merged = [merge(m, t, "tagger-first", tagger_knows=tagger.knows)
                      for m, t in zip(matchers["matcher+train"], tagged, strict=True)]
            out["both:new-names-only"] = _figures(gold, merged, 0.0)
        out["goal_f1"] = spec["goal"]
        out["goal_met"] = out["tagger"]["exact"]["f1"] >= spec["goal"]
    return out


def append_results(result: dict[str, Any]) -> None:
    lines = ["", f"## {result['date'][:16].replace('T', ' ')} UTC mention detection (bench/detection.py)", "",
             f"Machine: {result['machine']}." + (f" {result['note']}" if result.get("note") else ""), "",
             "Dev splits; exact / overlapping spans; matcher+train = dictionary names plus the training split's mention "
             "texts; both = tagger and matcher+train merged by the rule named (new-names-only: the web app's rule for a "
             "tagger reading dictionary features). Documents/s in one process.", "",
             "| dev | detector | exact P | exact R | exact F1 | overlap P | overlap R | overlap F1 | docs/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, figures in result["datasets"].items():
        for detector, f in figures.items():
            if not isinstance(f, dict) or "exact" not in f:
                continue
            e, o = f["exact"], f["overlap"]
            lines.append(f"| {name} | {detector} | {e['precision']:.3f} | {e['recall']:.3f} | **{e['f1']:.3f}** | "
                         f"{o['precision']:.3f} | {o['recall']:.3f} | {o['f1']:.3f} | {f['documents_per_s'] or ''} |")
    goals = [f"{n}: tagger F1 {f['tagger']['exact']['f1']:.3f} vs goal {f['goal_f1']} ({'met' if f['goal_met'] else 'missed'})"
             for n, f in result["datasets"].items() if "tagger" in f]
    if goals:
        lines += ["", "Goal (issue #14): " + "; ".join(goals) + "."]
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--tagger-ncbi", help="a tagger folder trained on NCBI train")
    parser.add_argument("--tagger-bc5cdr", help="a tagger folder trained on BC5CDR train (Disease mentions)")
    parser.add_argument("--only", choices=list(DATASETS), action="append", help="measure these datasets only")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    data = Path(args.data)
    taggers = {"ncbi": args.tagger_ncbi, "bc5cdr": args.tagger_bc5cdr}
    result: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": describe_machine(),
                              "note": args.note, "datasets": {}}
    for name in args.only or list(DATASETS):
        folder = taggers[name]
        result["datasets"][name] = measure(name, data, Path(folder) if folder else None)
    print(json.dumps(result, indent=2))
    if not args.no_record:
        append_results(result)


if __name__ == "__main__":
    main()
