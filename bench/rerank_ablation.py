"""Benchmark: the LATTE ablation table (the paper's Table 3) on one dataset's dev split; print one JSON object.

    python bench/rerank_ablation.py --base var/artifacts/ncbi-biosyn [--dataset ncbi] [--epochs 4]

The training candidates (cross-fitted, as ``python -m linker train-rerank`` makes them) and the frozen
transformer's token states are computed once; each variant is then trained on them with the same seed:

* full: f (cross-attention) + g (latent types) + the retriever's features, known-type loss on;
* no_known_types: the known-type loss off (the paper's LATTE-NKT);
* f_only / g_only: without g / without f;
* features_only: only the retriever's features (a learned linear re-ranking of its scores).

Each variant's P@1 and MAP over the top-10 per mention part, and end-to-end Acc@1, on dev; appended to
bench/RESULTS.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.rerank import DATA, describe_machine  # noqa: E402 (after the path is set)

DATASETS: dict[str, dict[str, Any]] = {
    "ncbi": {"dictionary": DATA / "medic" / "medic_06Jul2012.txt", "types_from": DATA / "medic" / "CTD_diseases.tsv.gz",
             "train": DATA / "ncbi-disease" / "NCBItrainset_corpus.txt",
             "dev": DATA / "ncbi-disease" / "NCBIdevelopset_corpus.txt", "mention_types": None},
    "bc5cdr": {"dictionary": DATA / "medic" / "CTD_diseases.tsv.gz", "types_from": DATA / "medic" / "CTD_diseases.tsv.gz",
               "train": DATA / "bc5cdr" / "CDR_TrainingSet.PubTator.txt",
               "dev": DATA / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt", "mention_types": {"Disease"}},
}
VARIANTS: dict[str, dict[str, Any]] = {
    "full": {},
    "no_known_types": {"known_type_weight": 0.0},
    "f_only": {"use_latent": False},
    "g_only": {"use_match": False},
    "features_only": {"use_match": False, "use_latent": False},
}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from linker.data import iter_dictionary, iter_pubtator
    from linker.dictionary import NameTable
    from linker.linker import Linker
    from linker.protocol import build_eval_set
    from linker.rerank.examples import cross_fitted_examples, examples_for
    from linker.rerank.known_types import known_types_of
    from linker.rerank.model import LatteConfig
    from linker.rerank.reranker import RerankerSettings
    from linker.rerank.states import TokenStates
    from linker.rerank.training import RerankTrainingConfig, train_reranker
    from linker.text import TextConfig

    spec = DATASETS[args.dataset]
    t0 = time.perf_counter()
    base = Linker.load(args.base)
    assert base.encoder is not None
    table = NameTable.from_records(iter_dictionary(spec["dictionary"]), TextConfig())
    types = {p: t for cid, t in known_types_of(iter_dictionary(spec["types_from"])).items() if (p := table.resolve_id(cid))}
    docs, dev_docs = list(iter_pubtator(spec["train"])), list(iter_pubtator(spec["dev"]))
    settings = RerankerSettings()
    train = cross_fitted_examples(base, table, docs, settings.top_k, settings.window_words, spec["mention_types"])
    dev_set = build_eval_set(dev_docs, base.table, base.preprocessor, spec["mention_types"])
    dev = examples_for(base, dev_set, {d.pmid: d.text for d in dev_docs}, settings.top_k, settings.window_words)
    states = TokenStates(base.encoder, settings.mention_max_length, settings.name_max_length)
    result: dict[str, Any] = {"machine": describe_machine(), "dataset": args.dataset, "base": str(args.base),
                              "candidates_s": time.perf_counter() - t0, "epochs": args.epochs, "variants": {}}
    for name in args.variants.split(","):
        change = VARIANTS[name]
        model_change = {k: v for k, v in change.items() if k.startswith("use_")}
        training = RerankTrainingConfig(epochs=args.epochs, **{k: v for k, v in change.items() if not k.startswith("use_")})
        t1 = time.perf_counter()
        _, report = train_reranker(base, train, dev, types, replace(LatteConfig(), **model_change), settings, training,
                                   device="cpu", states=states)
        last = report["latte"][-1] if report["latte"] else {}
        result["variants"][name] = {"dev": report["dev"], "chosen_epoch": report["chosen_epoch"],
                                    "last_epoch": {k[4:]: v for k, v in last.items() if k.startswith("dev_")},
                                    "seconds": time.perf_counter() - t1}
        print(name, json.dumps(result["variants"][name]), file=sys.stderr, flush=True)
    return result


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## rerank ablation (LATTE) — {stamp}", "", f"- machine: {result['machine']}", f"- command: `{command}`",
             f"- {result['dataset']} dev, base `{result['base']}`, {result['epochs']} epochs, epoch chosen on held-out training documents"]
    if note:
        lines.append(f"- note: {note}")
    first = next(iter(result["variants"].values()))["dev"]
    # The chosen epoch is what would ship (often 0, the retriever's order, when no epoch beats it on the
    # held-out fold); the last epoch shows what each part learned, which is what the paper's table compares.
    lines += ["", "| variant | P@1 top-10 | MAP top-10 | end-to-end Acc@1 | chosen epoch | last epoch: P@1 / MAP / Acc@1 | s |",
              "|---|---|---|---|---|---|---|",
              f"| retriever order | {first['retriever_p@1']:.4f} | {first['retriever_map']:.4f} | {first['retriever_acc@1']:.4f} | | | |"]
    for name, v in result["variants"].items():
        d, e = v["dev"], v.get("last_epoch", {})
        last = " / ".join(f"{e[k]:.4f}" if k in e else "—" for k in ("reranked_p@1", "reranked_map", "reranked_acc@1"))
        lines.append(f"| {name} | {d['reranked_p@1']:.4f} | {d['reranked_map']:.4f} | {d['reranked_acc@1']:.4f} | "
                     f"{v['chosen_epoch']} | {last} | {v['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the linker artifact to re-rank over")
    parser.add_argument("--dataset", default="ncbi", choices=sorted(DATASETS))
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2, default=str))
    if not args.no_results:
        command = "python bench/rerank_ablation.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
