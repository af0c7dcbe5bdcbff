"""Benchmark: the word-vector name encoders (BNE, DAN) beside fastText, Jaccard and the transformer; prints JSON.

    python bench/fast_encoders.py --encoder bne=var/artifacts/ncbi-bne --encoder dan=var/artifacts/ncbi-dan \
        --encoder fasttext=var/artifacts/wv-disease --encoder minilm=minilm \
        [--suites speed,map,norm,relatedness,cascade] [--transformer var/artifacts/ncbi-biosyn] [--note "..."]

Suites (the issue's evaluation protocol, each encoder alone):

* ``speed``: names/s encoding the distinct names of MEDIC (the NCBI dictionary), median of 3, with 1 and 2
  threads (a transformer on a 3,000-name sample).
* ``map``: synonym retrieval MAP, BNE's protocol (Phan et al. 2019, section 4.2): for each dev mention, the 20
  concepts whose names score best by BM25 against it; all their names ranked by cosine; average precision of
  the gold concept's names (0 when BM25 misses the gold concept). NCBI dev (MEDIC 2012) and BC5CDR-disease dev
  (CTD); BC5CDR's chemicals are left out (no chemical vocabulary is available). Jaccard of word sets beside.
* ``norm``: Acc@1 / Acc@5 on NCBI and BC5CDR-disease dev: each encoder's linker (a trained BNE/DAN artifact
  as it is; any other encoder indexed over the dictionary with the training mentions merged), dense only
  and hybrid (with tf-idf).
* ``relatedness``: Spearman of cosine vs human scores, UMNSRS similarity / relatedness and MayoSRS, with the
  share of pairs whose every word is in the word vectors' vocabulary (coverage).
* ``cascade``: the combined linker, a fast encoder searched first and the transformer encoding only queries
  that are not a dictionary name (``--transformer``: a trained linker artifact, else MiniLM's 3-layer student
  zero-shot) against the transformer alone and the fast linker alone: Acc@1 on NCBI dev and mentions/s.

An encoder is ``label=path``: a linker artifact (its encoder), an encoder folder, a word-vector folder (the
mean of a name's word vectors: BNE's SG_W baseline), ``minilm`` (zero-shot) or ``minilm:0,2,5``.
Figures are appended to bench/RESULTS.md with the machine they ran on and the papers' tables beside.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.hierarchy import relatedness_sets  # noqa: E402 (after the path is set)
from bench.linking import DATASETS  # noqa: E402
from bench.rerank import describe_machine  # noqa: E402

# BNE (Phan et al. 2019) Table 2 (synonym retrieval MAP), Table 3 (normalization accuracy, no training
# annotations), Table 4 (Spearman). DAN (Fivez et al. 2021) reports relatedness only in prose.
PAPER_MAP = {"Jaccard": (0.424, 0.410), "SG_W": (0.499, 0.494), "BNE + SG_W": (0.695, 0.718),
             "BNE + SG_S.C": (0.713, 0.734)}
PAPER_NORM = {"Jaccard": (0.843, 0.772), "SG_W": (0.800, 0.725), "BNE + SG_W": (0.854, 0.829),
              "BNE + SG_W + XM": (0.873, 0.905)}
PAPER_REL = {"SG_W": (0.645, 0.584, 0.518), "BNE + SG_W": (0.606, 0.580, 0.626), "BNE + SG_S.C": (0.637, 0.593, 0.602),
             "BNE + SG_S.C (L_syn only)": (0.496, 0.445, 0.564)}


def mean_word_vectors(folder: str | Path) -> Any:
    """A word-vector folder as a name encoder: the mean of a name's word vectors, normalised (BNE's SG_W)."""
    from linker.encoders.wordvec import MeanWordVectorEncoder, WordVectors

    return MeanWordVectorEncoder(WordVectors.load(folder))


def load_encoder(spec: str) -> tuple[Any, Path | None]:
    """(encoder, the linker artifact it came from or None)."""
    from linker.encoders.registry import load_encoder as load_any
    from linker.encoders.transformer import TransformerEncoder
    from linker.encoders.wordvec import WordVectors

    if spec == "minilm" or spec.startswith("minilm:"):
        layers = tuple(int(x) for x in spec.split(":", 1)[1].split(",")) if ":" in spec else None
        return TransformerEncoder(layers=layers), None
    path = Path(spec)
    if WordVectors.is_folder(path):
        return mean_word_vectors(path), None
    if (path / "config.json").exists() and (path / "encoder").is_dir():
        return load_any(path / "encoder"), path
    return load_any(path), None


def _word_vectors_of(encoder: Any) -> Any:
    from linker.encoders.wordvec import MeanWordVectorEncoder

    if isinstance(encoder, MeanWordVectorEncoder):
        return encoder.vectors
    return getattr(encoder, "word_vectors", None)


# --- speed ---------------------------------------------------------------------------------------------------


def run_speed(encoder: Any, names: list[str]) -> dict[str, Any]:
    import torch

    sample = names if encoder.kind != "transformer" else names[:3000]
    out: dict[str, Any] = {"names": len(sample)}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            encoder.encode(sample, batch_size=4096)
            runs.append(len(sample) / (time.perf_counter() - t0))
        out[f"names_per_s_{threads}t"] = round(statistics.median(runs), 1)
    return out


# --- synonym retrieval MAP (BNE protocol) ----------------------------------------------------------------------


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over the word tokens of names."""

    def __init__(self, names: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        import scipy.sparse as sp

        from linker.encoders.wordvec import tokenize

        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(len(names), dtype=np.float32)
        for i, name in enumerate(names):
            tokens = tokenize(name)
            lengths[i] = len(tokens)
            for token in set(tokens):
                rows.append(i)
                cols.append(self.vocab.setdefault(token, len(self.vocab)))
                vals.append(tokens.count(token))
        tf = sp.csr_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(len(names), len(self.vocab)))
        df = np.bincount(tf.indices, minlength=len(self.vocab)).astype(np.float32)
        n = len(names)
        idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)
        norm = k1 * (1 - b + b * lengths / max(float(lengths.mean()), 1e-9))
        tf = tf.tocoo()
        weight = tf.data * (k1 + 1) / (tf.data + norm[tf.row]) * idf[tf.col]
        self.matrix = sp.csr_matrix((weight, (tf.row, tf.col)), shape=tf.shape).T.tocsr()  # [V, N]

    def top(self, query: str, k: int) -> np.ndarray:
        from linker.encoders.wordvec import tokenize

        cols = [self.vocab[t] for t in set(tokenize(query)) if t in self.vocab]
        if not cols:
            return np.zeros(0, dtype=np.int64)
        scores = np.asarray(self.matrix[cols].sum(axis=0)).ravel()
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[scores[best] > 0]
        return best[np.argsort(-scores[best], kind="stable")]


def _jaccard_scores(query: str, names: Sequence[str]) -> np.ndarray:
    from linker.encoders.wordvec import tokenize

    q = set(tokenize(query))
    return np.array([len(q & set(tokenize(n))) / max(len(q | set(tokenize(n))), 1) for n in names], dtype=np.float32)


def synonym_map_sets(names: list[str]) -> dict[str, Any]:
    """Per dataset: the dictionary's table, the dev queries with their gold concept, and each query's
    candidate names (all names of the BM25 top-20 concepts)."""
    from linker.data import iter_dictionary, iter_pubtator
    from linker.dictionary import NameTable
    from linker.protocol import build_eval_set
    from linker.text import Preprocessor, TextConfig

    sets: dict[str, Any] = {}
    for name in names:
        spec = DATASETS[name]
        table = NameTable.from_records(iter_dictionary(spec["dictionary"]), TextConfig())
        docs = [d for p in spec["dev"] for d in iter_pubtator(p)]
        mentions = [m for m in build_eval_set(docs, table, Preprocessor(table.cfg), spec["types"])
                    if len(m.queries) == 1]
        bm25 = BM25(table.names)
        queries = []
        for m in mentions:
            concepts: list[str] = []
            for row in bm25.top(m.queries[0], 400):
                cid = table.concept_ids[int(row)]
                if cid not in concepts:
                    concepts.append(cid)
                if len(concepts) == 20:
                    break
            rows = [r for cid in concepts for r in table.concept_names(cid)]
            queries.append((m.queries[0], set(m.gold_parts[0]), rows))
        sets[name] = {"table": table, "queries": queries}
    return sets


def _average_precision(order: Sequence[int], relevant: set[int], total_relevant: int) -> float:
    hits, precision_sum = 0, 0.0
    for rank, row in enumerate(order, start=1):
        if row in relevant:
            hits += 1
            precision_sum += hits / rank
    return precision_sum / total_relevant if total_relevant else 0.0


def run_map(score: Any, data: dict[str, Any]) -> float:
    """MAP over the dataset's queries; ``score(query, names) -> scores`` ranks each candidate list."""
    table = data["table"]
    aps = []
    for query, gold, rows in data["queries"]:
        relevant_all = {r for cid in gold for r in table.concept_names(cid)}
        if not rows:
            aps.append(0.0)
            continue
        scores = score(query, [table.names[r] for r in rows])
        order = [rows[i] for i in np.argsort(-scores, kind="stable")]
        aps.append(_average_precision(order, relevant_all & set(rows), len(relevant_all)))
    return float(np.mean(aps)) if aps else 0.0


def cosine_scorer(encoder: Any, data: dict[str, Any]) -> Any:
    table = data["table"]
    needed = sorted({r for _, _, rows in data["queries"] for r in rows})
    vectors = dict(zip(needed, encoder.encode([table.names[r] for r in needed], batch_size=4096), strict=True))
    index = {table.names[r]: vectors[r] for r in needed}

    def score(query: str, names: Sequence[str]) -> np.ndarray:
        q = encoder.encode([query])[0]
        return np.array([float(index[n] @ q) for n in names], dtype=np.float32)

    return score


# --- normalization accuracy --------------------------------------------------------------------------------------


def _eval_linker(linker: Any, name: str, mode: str | None) -> dict[str, Any]:
    from dataclasses import replace

    from linker.data import iter_pubtator
    from linker.evaluate import evaluate_linking
    from linker.protocol import build_eval_set

    spec = DATASETS[name]
    docs = [d for p in spec["dev"] for d in iter_pubtator(p)]
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, spec["types"])
    saved = linker.retriever.config
    if mode is not None:
        linker.retriever.config = replace(saved, mode=mode)
    try:
        t0 = time.perf_counter()
        ranked = linker.link_queries([m.queries for m in eval_set], 20)
        elapsed = time.perf_counter() - t0
    finally:
        linker.retriever.config = saved
    metrics = evaluate_linking([m.gold_parts for m in eval_set],
                               [[[c.concept_id for c in part] for part in parts] for parts in ranked])
    queries = sum(len(m.queries) for m in eval_set)
    return {"acc@1": round(float(metrics["acc@1"]), 4), "acc@5": round(float(metrics["acc@5"]), 4),
            "mentions": len(eval_set), "mentions_per_s": round(queries / elapsed, 1)}


def linker_for(encoder: Any, artifact: Path | None, name: str, cache: dict[tuple[str, str], Any],
               label: str) -> Any:
    """The encoder's linker on the dataset: its artifact when it was trained on this dictionary, else an
    index over the dictionary with the training mentions merged and the concept prior set."""
    from linker.config import LinkerConfig
    from linker.data import iter_dictionary, iter_pubtator
    from linker.dictionary import NameTable
    from linker.linker import Linker
    from linker.methods.base import prior_counts
    from linker.protocol import training_pairs
    from linker.retrieval import RetrievalConfig
    from linker.text import Preprocessor, TextConfig

    spec = DATASETS[name]
    if artifact is not None:
        payload = json.loads((artifact / "config.json").read_text())
        if Path(str(payload.get("metadata", {}).get("dictionary", ""))).name == Path(spec["dictionary"]).name:
            return Linker.load(artifact)
    key = (label, name)
    if key not in cache:
        table = NameTable.from_records(iter_dictionary(spec["dictionary"]), TextConfig())
        docs = [d for p in spec["train"] for d in iter_pubtator(p)]
        table.add(training_pairs(docs, table, Preprocessor(table.cfg), spec["types"]))
        linker = Linker.build(table, encoder, LinkerConfig(retrieval=RetrievalConfig(prior_weight=1e-3)))
        linker.set_concept_prior(prior_counts(docs, table, spec["types"]))
        cache[key] = linker
    return cache[key]


# --- relatedness ---------------------------------------------------------------------------------------------


def run_relatedness(encoder: Any) -> dict[str, Any]:
    from linker.encoders.wordvec import tokenize
    from linker.evaluate import spearman
    from linker.text import normalize

    vectors = _word_vectors_of(encoder)
    out: dict[str, Any] = {}
    for name, rows in relatedness_sets().items():
        left = encoder.encode([normalize(a) for a, _, _ in rows])
        right = encoder.encode([normalize(b) for _, b, _ in rows])
        cosine = (np.asarray(left) * np.asarray(right)).sum(axis=1)
        entry: dict[str, Any] = {"spearman": round(spearman(cosine.tolist(), [s for _, _, s in rows]), 3)}
        if vectors is not None:
            covered = sum(all(t in vectors for t in tokenize(a) + tokenize(b)) for a, b, _ in rows)
            entry["coverage"] = round(covered / len(rows), 3)
        out[name] = entry
    return out


# --- the combined linker --------------------------------------------------------------------------------------


def run_cascade(fast: Any, transformer_artifact: str | None) -> dict[str, Any]:
    """Transformer alone, fast alone, fast first + transformer (cascade exact), on NCBI dev."""
    from dataclasses import replace

    from linker.encoders.transformer import TransformerEncoder
    from linker.index import DenseIndex
    from linker.linker import Linker
    from linker.retrieval import FirstStage, HybridRetriever, encode_names

    cache: dict[tuple[str, str], Any] = {}
    if transformer_artifact:
        base = Linker.load(transformer_artifact)
    else:
        base = linker_for(TransformerEncoder(layers=(0, 2, 5)), None, "ncbi", cache, "student")
    t0 = time.perf_counter()
    fast_index = DenseIndex.build(encode_names(fast, base.table.names, batch_size=4096))
    fast_build = time.perf_counter() - t0
    out: dict[str, Any] = {"transformer": transformer_artifact or "MiniLM 3-layer student, zero-shot",
                           "fast_index_build_names_per_s": round(len(base.table) / fast_build, 1)}
    cfg = base.retriever.config

    def variant(encoder: Any, index: Any, first: Any, **changes: Any) -> Any:
        return HybridRetriever(base.table, base.sparse, encoder, index, replace(cfg, **changes), base.concept_prior,
                               first)

    variants = {
        "transformer_alone": variant(base.encoder, base.index, None),
        "fast_alone": variant(fast, fast_index, None),
        "fast_alone_no_sparse_search": variant(fast, fast_index, None, sparse_search=False),
        "cascade_exact": variant(base.encoder, base.index, FirstStage(fast, fast_index), cascade="exact"),
        "cascade_exact_no_sparse_search": variant(base.encoder, base.index, FirstStage(fast, fast_index),
                                                  cascade="exact", sparse_search=False),
        "cascade_off": variant(base.encoder, base.index, FirstStage(fast, fast_index), cascade="off"),
    }
    original = base.retriever
    try:
        for label, retriever in variants.items():
            base.retriever = retriever
            runs = [_eval_linker(base, "ncbi", None) for _ in range(3)]
            best = runs[0] | {"mentions_per_s": statistics.median(r["mentions_per_s"] for r in runs)}
            out[label] = best
    finally:
        base.retriever = original
    return out


# --- main ------------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from linker.data import iter_dictionary

    torch.set_num_threads(args.threads)
    suites = set(args.suites.split(","))
    datasets = [d for d in args.datasets.split(",") if d]
    result: dict[str, Any] = {"machine": describe_machine(), "encoders": {}}
    map_sets = synonym_map_sets(datasets) if "map" in suites else {}
    if map_sets:
        result["jaccard_map"] = {name: round(run_map(_jaccard_scores, data), 4) for name, data in map_sets.items()}
    medic_names: list[str] = []
    if "speed" in suites:
        from linker.text import normalize

        medic_names = list(dict.fromkeys(normalize(n) for r in iter_dictionary(DATASETS["ncbi"]["dictionary"])
                                         for n in r.all_names()))
    cache: dict[tuple[str, str], Any] = {}
    for spec in args.encoder:
        label, path = spec.split("=", 1)
        encoder, artifact = load_encoder(path)
        entry: dict[str, Any] = {"path": path, "kind": encoder.kind, "dim": encoder.dim}
        if artifact is not None and (artifact / "training_report.json").exists():
            report = json.loads((artifact / "training_report.json").read_text())
            entry["training"] = {k: report.get(k) for k in ("method", "best_epoch", "epochs_run", "train_s",
                                                             "level", "objectives", "dev_accuracy")
                                 if k in report}
        if "speed" in suites:
            entry["speed"] = run_speed(encoder, medic_names)
            torch.set_num_threads(args.threads)
        if map_sets:
            entry["map"] = {name: round(run_map(cosine_scorer(encoder, data), data), 4)
                            for name, data in map_sets.items()}
        if "norm" in suites:
            entry["norm"] = {}
            for name in datasets:
                linker = linker_for(encoder, artifact, name, cache, label)
                entry["norm"][name] = {"dense": _eval_linker(linker, name, "dense"),
                                       "hybrid": _eval_linker(linker, name, "hybrid")}
        if "relatedness" in suites:
            entry["relatedness"] = run_relatedness(encoder)
        if "cascade" in suites and label == args.cascade_fast:
            result["cascade"] = run_cascade(encoder, args.transformer)
        result["encoders"][label] = entry
        cache.clear()
    return result


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## fast encoders (BNE, DAN) — {stamp}", "", f"- machine: {result['machine']}", f"- command: `{command}`"]
    if note:
        lines.append(f"- note: {note}")
    encoders = result["encoders"]
    if any("speed" in e for e in encoders.values()):
        lines += ["", "### encoding speed (distinct MEDIC names)", "", "| encoder | names | names/s 1 thread | names/s 2 threads |",
                  "|---|---|---|---|"]
        for label, e in encoders.items():
            if "speed" in e:
                s = e["speed"]
                lines.append(f"| {label} | {s['names']} | {s['names_per_s_1t']:.0f} | {s['names_per_s_2t']:.0f} |")
    if "jaccard_map" in result:
        names = list(result["jaccard_map"])
        lines += ["", "### synonym retrieval MAP (BNE protocol: BM25 top-20 concepts, names ranked by cosine)", "",
                  "| encoder | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|",
                  "| Jaccard | " + " | ".join(f"{result['jaccard_map'][n]:.3f}" for n in names) + " |"]
        for label, e in encoders.items():
            if "map" in e:
                lines.append(f"| {label} | " + " | ".join(f"{e['map'][n]:.3f}" for n in names) + " |")
        for label, (ncbi, bc5) in PAPER_MAP.items():
            lines.append(f"| *paper {label}* | *{ncbi:.3f}* | *{bc5:.3f}* |")
    if any("norm" in e for e in encoders.values()):
        lines += ["", "### normalization (dev)", "", "| encoder | dataset | dense Acc@1 | dense Acc@5 | hybrid Acc@1 | "
                  "hybrid Acc@5 | hybrid mentions/s |", "|---|---|---|---|---|---|---|"]
        for label, e in encoders.items():
            for name, r in e.get("norm", {}).items():
                lines.append(f"| {label} | {name} | {r['dense']['acc@1']:.4f} | {r['dense']['acc@5']:.4f} | "
                             f"{r['hybrid']['acc@1']:.4f} | {r['hybrid']['acc@5']:.4f} | "
                             f"{r['hybrid']['mentions_per_s']:.0f} |")
        for label, (ncbi, bc5) in PAPER_NORM.items():
            lines.append(f"| *paper {label}* | ncbi / bc5cdr (test) | *{ncbi:.3f}* / *{bc5:.3f}* | | | | |")
    if any("relatedness" in e for e in encoders.values()):
        lines += ["", "### relatedness (Spearman; coverage = pairs whose every word has a vector)", "",
                  "| encoder | UMNSRS sim | UMNSRS rel | MayoSRS |", "|---|---|---|---|"]
        for label, e in encoders.items():
            if "relatedness" in e:
                r = e["relatedness"]

                def cell(name: str, r: dict[str, Any] = r) -> str:
                    c = r[name].get("coverage")
                    return f"{r[name]['spearman']:.3f}" + (f" ({c:.0%})" if c is not None else "")

                lines.append(f"| {label} | {cell('umnsrs_sim')} | {cell('umnsrs_rel')} | {cell('mayosrs')} |")
        for label, (a, b, c) in PAPER_REL.items():
            lines.append(f"| *paper {label}* | *{a:.3f}* | *{b:.3f}* | *{c:.3f}* |")
    if "cascade" in result:
        c = result["cascade"]
        lines += ["", f"### combined linker on NCBI dev (transformer: {c['transformer']}; fast index build "
                      f"{c['fast_index_build_names_per_s']:.0f} names/s)", "",
                  "| retrieval | Acc@1 | Acc@5 | mentions/s (median of 3) |", "|---|---|---|---|"]
        for label, r in c.items():
            if isinstance(r, dict):
                lines.append(f"| {label} | {r['acc@1']:.4f} | {r['acc@5']:.4f} | {r['mentions_per_s']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", action="append", required=True, help="label=path (see above); repeat")
    parser.add_argument("--suites", default="speed,map,norm,relatedness,cascade")
    parser.add_argument("--datasets", default="ncbi,bc5cdr")
    parser.add_argument("--transformer", help="cascade: the transformer linker artifact (default: zero-shot student)")
    parser.add_argument("--cascade-fast", default="bne", help="cascade: the label of the fast encoder in front")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2, default=str))
    if not args.no_results:
        command = "python bench/fast_encoders.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
