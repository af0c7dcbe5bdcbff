"""Benchmark: higher-level semantics, the protocol of DAN (Fivez, Šuster and Daelemans, BioNLP 2021, sections
4-5, Tables 2-5) on a subtree of a hierarchy the workbench holds; prints one JSON object.

    python bench/higher_level.py [--dictionary hp --top HP:0000118] [--minutes 3] [--quick] [--note "..."]

The protocol (section 4.2). Below a high-level concept (``--top``; HPO's "Phenotypic abnormality" by default,
whose children are level 1), the concepts at depths 1-4 are classes, and the names of the concepts below level
4 ("lower-level names") are what is classed: at level L a name belongs to its concept's ancestors at depth L
(:mod:`linker.hierarchy.levels`). The names of the level 1-4 concepts are never training names; they are the
hypernyms of the hypernym-detection task. Test names: one held-out concept per level-4 class (a concept of
several classes covers each; a class keeps at least one training concept), one name of it; the same test names
serve levels 1-3, with their classes read from the full hierarchy. Every name of a test concept leaves the
training hierarchy (stricter than the paper, which holds out names: a test name's synonyms would otherwise be
training names of its own class), and a test name that another concept also carries is not chosen.

Encoders. One DAN per level L = 1..4 (the recipe method ``dan``, ``--minutes`` of training each on
``--threads`` threads, early stopping on the held-out mAP of validation names the recipe draws from the
training hierarchy), trained on the training hierarchy only; the fastText baseline (the mean of the DAN's input
word vectors); MiniLM zero-shot (the paper's BioBERT row: a pretrained transformer, no training); BNE
(``var/artifacts/ncbi-bne`` when it exists: trained on MEDIC synonym sets, the paper's BNE row); any
``--encoder label=spec`` (see bench/fast_encoders.py's ``load_encoder``).

Word vectors (``--word-vectors``, default ``var/artifacts/wv-<dictionary>-bench``): when the folder does not
exist, fastText is trained there on the NCBI and BC5CDR training documents and the names and definitions of
every concept of the dictionary except the test concepts (they are recorded beside the vectors, and a later run
whose test concepts are not all among them refuses the folder). Their token coverage of the training, test and hypernym names is reported,
beside that of ``var/artifacts/wv-disease`` (MEDIC's), which is also scored as a second fastText baseline.

Metrics (section 4.3), every encoder at every level: semantic-similarity mAP (each test name ranks all training
names of the level by cosine; the average precision of those sharing a class with it) and hypernym-detection
MRR (each test name ranks the names of the level's class concepts; the reciprocal rank of the first of its own
class). The training names ranked include the validation names the recipe kept out of DAN training (they are
no test names). The hypernym candidates are the names of the level's concepts that are classes: a concept at
depth 1-4 with nothing below level 4 is a dead end, which the paper leaves out of the taxonomy. ``--quick`` is a
smoke run (about 2 minutes): 6 s of DAN training per level, 150 test names, the training names ranked are a
sample of 3,000, no MiniLM unless asked for.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
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

from bench.hierarchy import HIERARCHIES  # noqa: E402 (after the path is set)
from bench.rerank import DATA, describe_machine  # noqa: E402

DOCUMENTS = (DATA / "ncbi-disease" / "NCBItrainset_corpus.txt", DATA / "bc5cdr" / "CDR_TrainingSet.PubTator.txt")
DEFAULT_TOP = {"hp": "HP:0000118"}
LEVELS = (1, 2, 3, 4)
# Fivez et al. (2021), subgraph C1290864 (SNOMED-CT "disorder of abdomen"): Table 4 (mAP) and Table 5 (MRR) per
# level 1-4; Table 2 (names per class) and Table 3 (classes per level; lower-level names train / test / validation).
PAPER_ROWS = ("DAN level 1", "DAN level 2", "DAN level 3", "DAN level 4", "fastText", "BioBERT", "BNE")
PAPER_MAP = dict(zip(PAPER_ROWS, ((0.57, 0.50, 0.39, 0.43), (0.49, 0.58, 0.46, 0.48), (0.43, 0.51, 0.56, 0.54),
                                  (0.38, 0.43, 0.47, 0.60), (0.26, 0.27, 0.25, 0.33), (0.27, 0.29, 0.29, 0.39),
                                  (0.35, 0.41, 0.42, 0.57)), strict=True))
PAPER_MRR = dict(zip(PAPER_ROWS, ((0.60, 0.58, 0.59, 0.68), (0.52, 0.59, 0.62, 0.70), (0.55, 0.57, 0.66, 0.73),
                                  (0.53, 0.52, 0.63, 0.74), (0.46, 0.44, 0.53, 0.65), (0.41, 0.41, 0.50, 0.62),
                                  (0.43, 0.50, 0.60, 0.71)), strict=True))
PAPER_CLASSES = {"classes": (27, 98, 248, 610), "min": (1, 1, 1, 1), "max": (10203, 10203, 3840, 2607),
                 "mean": (1015, 291, 118, 48), "stdev": (2053, 1101, 411, 195)}
PAPER_SPLIT = {"train": 24737, "test": 1557, "validation": 763}


def _log(line: str) -> None:
    print(f"[higher_level {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


# --- the split ------------------------------------------------------------------------------------------------


def build_split(source: Any, top: str, seed: int, test_concepts: int, quick: bool) -> dict[str, Any]:
    """The lower-level concepts, the held-out test concepts and names with their classes per level, and the
    training hierarchy (``source`` without the names of the level 1-4 concepts and of the test concepts)."""
    from linker.hierarchy.levels import LevelClasses, concept_classes, concept_depths, hold_out_per_class

    depths = concept_depths(source, top)
    depth_limit = LEVELS[-1]
    upper = {c for c, d in depths.items() if d <= depth_limit}
    lower = [c for c in source.names if depths.get(c, 0) > depth_limit]
    classes = {level: concept_classes(source, level, top) for level in LEVELS}
    bottom = classes[depth_limit]
    by_concept = LevelClasses(tuple(lower), tuple(bottom[c] for c in lower), depth_limit)
    cap = 150 if quick else (test_concepts or None)
    _, held = hold_out_per_class(by_concept, at_least=test_concepts, at_most=cap, seed=seed)
    held_ids = list(held.names)
    train_source = source.without(upper | set(held_ids))
    train_names = {n for ns in train_source.names.values() for n in ns}
    rng = random.Random(seed)
    tests: list[tuple[str, str]] = []  # (name, concept)
    for cid in held_ids:
        free = [n for n in source.names[cid] if n not in train_names]
        if free:
            tests.append((rng.choice(free), cid))
    test_classes = {level: tuple(classes[level][cid] for _, cid in tests) for level in LEVELS}
    digest = hashlib.sha1("\n".join(sorted(held_ids)).encode()).hexdigest()[:16]
    return {"depths": depths, "upper": upper, "lower": lower, "held_concepts": held_ids, "tests": tests,
            "test_classes": test_classes, "train_source": train_source, "split_id": digest}


def class_hypernyms(source: Any, split: dict[str, Any], level: int, top: str) -> Any:
    """The names of the concepts at depth ``level`` that are classes (some lower-level name belongs to them):
    the hypernym candidates. The paper leaves out "dead-end concepts which don't have a path to the required
    level", so a concept at depth 1-4 without any concept below level 4 is no candidate."""
    from linker.hierarchy.levels import LevelClasses, hypernyms, level_classes

    classes = level_classes(source.without(split["upper"]), level, top).members
    every = hypernyms(source, level, top)
    rows = [i for i, cs in enumerate(every.classes) if any(c in classes for c in cs)]
    return LevelClasses(tuple(every.names[i] for i in rows),
                        tuple(tuple(c for c in every.classes[i] if c in classes) for i in rows), level)


def class_statistics(source: Any, split: dict[str, Any], top: str) -> dict[str, Any]:
    """Per level: the classes and names per class of all lower-level names (the paper's Table 2/3), the
    training names, the test names, the hypernym names."""
    from linker.hierarchy.levels import level_classes

    whole = source.without(split["upper"])
    out: dict[str, Any] = {}
    for level in LEVELS:
        every = level_classes(whole, level, top).class_sizes()
        train = level_classes(split["train_source"], level, top)
        hyper = class_hypernyms(source, split, level, top)
        covered = {c for cs in split["test_classes"][level] for c in cs}
        out[str(level)] = {k: round(v, 1) for k, v in every.items()} | {
            "training_names": len(train), "training_classes": len(train.members), "test_names": len(split["tests"]),
            "test_classes": len(covered), "hypernym_names": len(hyper), "hypernym_concepts": len(hyper.members)}
    return out


# --- word vectors ---------------------------------------------------------------------------------------------


def ensure_word_vectors(folder: Path, records: Sequence[Any], split: dict[str, Any], threads: int) -> dict[str, Any]:
    """The folder's vectors, trained first when it does not exist (see the module docstring)."""
    from linker.data import iter_texts
    from linker.dictionary import NameTable
    from linker.encoders.wordvec import FastTextConfig
    from linker.methods.base import TrainingInputs
    from linker.recipe import FastTextRecipeConfig
    from linker.recipe import train as train_recipe

    marker = folder / "higher_level_split.json"
    held = set(split["held_concepts"])
    if folder.exists():
        if marker.exists() and not held <= set(json.loads(marker.read_text()).get("held_concepts", ())):
            raise SystemExit(f"{folder} was trained on names of this split's test concepts (another seed or "
                             "--test-concepts): pass a new --word-vectors")
        return {"path": str(folder), "trained_here": False, "train_s": 0.0, "split_checked": marker.exists()}
    kept = [r for r in records if not r.obsolete and r.concept_id not in held]
    table = NameTable()
    table.add((name, r.concept_id) for r in kept for name in r.all_names())
    texts = [t for path in DOCUMENTS if path.exists() for t in iter_texts(path)]
    texts += [r.definition for r in kept if r.definition]
    _log(f"training fastText into {folder}: {len(texts)} texts, {len(table.names)} names (test concepts left out)")
    t0 = time.perf_counter()
    inputs = TrainingInputs(table=table, pairs=(), concept_counts={}, out=folder, texts=texts,
                            metadata={"texts": [str(p) for p in DOCUMENTS], "bench": "higher_level",
                                      "split_id": split["split_id"]})
    train_recipe("fasttext", inputs, FastTextRecipeConfig(FastTextConfig(workers=threads)))
    marker.write_text(json.dumps({"split_id": split["split_id"], "held_concepts": sorted(held)}) + "\n")
    return {"path": str(folder), "trained_here": True, "train_s": time.perf_counter() - t0}


def coverage(folder: Path, names: dict[str, Sequence[str]]) -> dict[str, float]:
    from linker.encoders.wordvec import WordVectors

    vectors = WordVectors.load(folder)
    return {k: round(vectors.coverage(v), 4) for k, v in names.items()}


# --- DAN per level --------------------------------------------------------------------------------------------


def train_dans(split: dict[str, Any], top: str, vectors: Path, out_dir: Path, args: argparse.Namespace) -> dict[int, Any]:
    """One DAN artifact per level, trained on the training hierarchy; {level: (artifact folder, report)}."""
    from linker.dictionary import NameTable
    from linker.methods.base import TrainingCallbacks, TrainingInputs
    from linker.recipe import DANRecipeConfig
    from linker.recipe import train as train_recipe

    source = split["train_source"]
    lower = set(split["lower"])
    table = NameTable()  # what the published linker indexes (no training name comes from it above level 0)
    pairs = [(n, c) for c, ns in source.names.items() if c in lower for n in ns]
    table.add(pairs[:2000] if args.quick else pairs)
    callbacks = TrainingCallbacks(on_log=_log)
    out: dict[int, Any] = {}
    for level in LEVELS:
        config = DANRecipeConfig(level=level, top=top, max_minutes=args.minutes, threads=args.threads,
                                 seed=args.seed, max_epochs=3 if args.quick else 50,
                                 validation_names=100 if args.quick else 500)
        inputs = TrainingInputs(table=table, pairs=(), concept_counts={}, out=out_dir / f"dan-level{level}",
                                hierarchies=[source], word_vectors=vectors,
                                metadata={"bench": "higher_level", "top": top, "split_id": split["split_id"]})
        t0 = time.perf_counter()
        folder, report = train_recipe("dan", inputs, config, callbacks)
        _log(f"DAN level {level}: best epoch {report['best_epoch']} of {len(report['history'])}, validation mAP "
             f"{report['validation_map']:.4f} (fastText {report['baseline_validation_map']:.4f}), "
             f"{time.perf_counter() - t0:.0f} s")
        out[level] = (folder, report)
    return out


# --- evaluation -----------------------------------------------------------------------------------------------


def evaluate(encoder: Any, split: dict[str, Any], train_sets: dict[int, Any], hyper_sets: dict[int, Any],
             threads: int) -> dict[str, Any]:
    """mAP and MRR per level; every distinct name is encoded once."""
    import torch

    from linker.hierarchy.levels import hypernym_mrr, semantic_similarity_map

    torch.set_num_threads(threads)
    test_names = [n for n, _ in split["tests"]]
    names = list(dict.fromkeys([*test_names, *(n for s in train_sets.values() for n in s.names),
                                *(n for s in hyper_sets.values() for n in s.names)]))
    t0 = time.perf_counter()
    vectors = np.asarray(encoder.encode(names), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    encode_s = time.perf_counter() - t0
    row = {n: i for i, n in enumerate(names)}

    def encode(texts: Sequence[str]) -> np.ndarray:
        return vectors[[row[t] for t in texts]]

    out: dict[str, Any] = {"map": {}, "mrr": {}, "names_encoded": len(names), "encode_s": round(encode_s, 1)}
    for level in LEVELS:
        train, hyper, classes = train_sets[level], hyper_sets[level], split["test_classes"][level]
        out["map"][str(level)] = semantic_similarity_map(encode, train.names, train.classes, test_names, classes)
        out["mrr"][str(level)] = hypernym_mrr(encode, test_names, classes, hyper.names, hyper.classes)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from bench.fast_encoders import load_encoder, mean_word_vectors
    from linker.data import iter_dictionary
    from linker.encoders.wordvec import WordVectors
    from linker.hierarchy.graph import HierarchySource
    from linker.hierarchy.levels import LevelClasses, level_classes

    torch.set_num_threads(args.threads)
    started, cpu0 = time.perf_counter(), time.process_time()
    phases: dict[str, float] = {}
    path = HIERARCHIES[args.dictionary]
    top = args.top or DEFAULT_TOP.get(args.dictionary)
    if top is None:
        raise SystemExit(f"--top is needed for {args.dictionary}")
    records = list(iter_dictionary(path))
    source = HierarchySource.from_records(args.dictionary, records)
    split = build_split(source, top, args.seed, args.test_concepts, args.quick)
    stats = class_statistics(source, split, top)
    train_sets = {level: level_classes(split["train_source"], level, top) for level in LEVELS}
    hyper_sets = {level: class_hypernyms(source, split, level, top) for level in LEVELS}
    tests = [n for n, _ in split["tests"]]
    leaked = set(tests) & {n for ns in split["train_source"].names.values() for n in ns}
    if leaked:  # build_split guarantees none; a check that costs nothing
        raise AssertionError(f"{len(leaked)} test names are training names")
    training_names = len(train_sets[LEVELS[-1]])
    if args.quick:  # rank a sample of the training names (the DAN still trains on all of them)
        rng = random.Random(args.seed)
        for level, data in train_sets.items():
            rows = sorted(rng.sample(range(len(data)), min(3000, len(data))))
            train_sets[level] = LevelClasses(tuple(data.names[i] for i in rows), tuple(data.classes[i] for i in rows), level)
    phases["split_s"] = time.perf_counter() - started
    result: dict[str, Any] = {
        "machine": describe_machine(), "dictionary": args.dictionary, "file": str(path), "top": top,
        "top_name": (source.names.get(top) or [top])[0], "quick": args.quick, "seed": args.seed,
        "dan_minutes": args.minutes, "threads": args.threads, "split_id": split["split_id"],
        "sizes": {"lower_concepts": len(split["lower"]), "test_concepts": len(split["held_concepts"]),
                  "test_names": len(tests), "training_names": training_names,
                  "ranked_training_names": len(train_sets[LEVELS[-1]]),
                  "training_concepts": sum(1 for c in split["lower"] if c in split["train_source"].names)},
        "classes": stats,
    }

    wv_default = ROOT / "var" / "artifacts" / f"wv-{args.dictionary}-bench"
    wv_disease = ROOT / "var" / "artifacts" / "wv-disease"
    vectors = Path(args.word_vectors) if args.word_vectors else wv_default
    if args.quick and not args.word_vectors and not vectors.exists():
        vectors = wv_disease  # no time for fastText in a smoke run
    t0 = time.perf_counter()
    result["word_vectors"] = ensure_word_vectors(vectors, records, split, args.threads)
    phases["word_vectors_s"] = time.perf_counter() - t0
    seen = {"training": train_sets[LEVELS[-1]].names, "test": tests,
            "hypernyms": [n for s in hyper_sets.values() for n in s.names]}
    result["coverage"] = {str(vectors): coverage(vectors, seen)}
    if wv_disease.exists() and wv_disease.resolve() != vectors.resolve():
        result["coverage"][str(wv_disease)] = coverage(wv_disease, seen)

    t0 = time.perf_counter()
    out_dir = Path(args.out_dir) if args.out_dir else \
        ROOT / "var" / "artifacts" / f"higher-level-{args.dictionary}{'-quick' if args.quick else ''}"
    dans = train_dans(split, top, vectors, out_dir, args)
    phases["dan_training_s"] = time.perf_counter() - t0
    result["dan_training"] = {
        str(level): {k: report.get(k) for k in ("training_names", "validation_names", "best_epoch", "stopped",
                                                "validation_map", "baseline_validation_map", "train_s")}
        | {"epochs": len(report.get("history", ())), "classes": report["classes"]["classes"], "artifact": str(folder)}
        for level, (folder, report) in dans.items()}

    specs: list[tuple[str, str]] = [(f"DAN level {level}", str(folder)) for level, (folder, _) in dans.items()]
    specs.append((f"fastText ({vectors.name})", str(vectors)))
    if wv_disease.exists() and wv_disease.resolve() != vectors.resolve():
        specs.append(("fastText (wv-disease)", str(wv_disease)))
    if not args.quick and not args.no_minilm:
        specs.append(("MiniLM zero-shot", "minilm"))
    bne = ROOT / "var" / "artifacts" / "ncbi-bne"
    result["bne"] = str(bne) if bne.exists() else f"skipped: {bne} does not exist"
    if bne.exists():
        specs.append(("BNE (ncbi-bne)", str(bne)))
    specs += [tuple(s.split("=", 1)) for s in args.encoder]  # type: ignore[misc]
    result["encoders"] = {}
    t0 = time.perf_counter()
    for label, spec in specs:
        encoder = mean_word_vectors(spec) if WordVectors.is_folder(spec) else load_encoder(spec)[0]
        entry = {"spec": spec, "kind": getattr(encoder, "kind", type(encoder).__name__)}
        entry |= evaluate(encoder, split, train_sets, hyper_sets, args.threads)
        _log(f"{label}: mAP {[round(v, 3) for v in entry['map'].values()]}, "
             f"MRR {[round(v, 3) for v in entry['mrr'].values()]} ({entry['encode_s']} s encoding)")
        result["encoders"][label] = entry
    phases["evaluation_s"] = time.perf_counter() - t0
    result["time"] = {k: round(v, 1) for k, v in phases.items()} | {
        "wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(time.process_time() - cpu0, 1)}
    return result


# --- the report -----------------------------------------------------------------------------------------------


def _markdown(result: dict[str, Any], command: str, note: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sizes, t = result["sizes"], result["time"]
    wv = result["word_vectors"]
    lines = [f"## higher-level semantics (DAN protocol, Fivez et al. 2021) — {stamp}", "",
             f"- machine: {result['machine']}", f"- command: `{command}`",
             f"- subtree: {result['dictionary']} below {result['top']} ({result['top_name']}); levels 1-4 below it "
             f"are the classes, the names of the {sizes['lower_concepts']} concepts below level 4 are classed",
             f"- split (seed {result['seed']}): {sizes['training_names']} training names "
             f"({sizes['training_concepts']} concepts) / {sizes['test_names']} test names (one name of each of "
             f"{sizes['test_concepts']} held-out concepts, one per level-4 class; every name of a test concept left "
             f"out of training); paper C1290864: {PAPER_SPLIT['train']} / {PAPER_SPLIT['test']} / "
             f"{PAPER_SPLIT['validation']} validation",
             "- hypernym candidates: the names of the level's class concepts (dead ends, concepts at depth 1-4 "
             "with nothing below level 4, left out as in the paper)",
             f"- DAN: one per level, {result['dan_minutes']} min of training each on {result['threads']} thread(s) "
             f"(the recipe's CPU defaults: 1,024 hidden units, dropout 0.1; validation names drawn from the training "
             f"names by the recipe); word vectors {wv['path']}"
             + (f" (trained by this run on the training documents and the dictionary without the test concepts, "
                f"{wv['train_s']:.0f} s)" if wv["trained_here"] else ""),
             "- token coverage of the word vectors (training / test / hypernym names): "
             + "; ".join(f"{Path(p).name} {c['training']:.1%} / {c['test']:.1%} / {c['hypernyms']:.1%}"
                         for p, c in result["coverage"].items()),
             f"- BNE: {result['bne']}",
             f"- time: {t['wall_s'] / 60:.1f} min wall, {t['cpu_s'] / 60:.1f} min CPU (split {t['split_s']:.0f} s, "
             f"word vectors {t['word_vectors_s']:.0f} s, DAN training {t['dan_training_s']:.0f} s, evaluation "
             f"{t['evaluation_s']:.0f} s)"]
    if result["quick"]:
        lines.append(f"- **quick smoke run**: 6 s of DAN per level, 150 test names, {sizes['ranked_training_names']} "
                     "training names ranked")
    if note:
        lines.append(f"- note: {note}")
    lines += ["", "### classes per level (all lower-level names; paper C1290864 in italics)", "",
              "| level | classes | names | names in several classes | min | max | mean | stdev | training names | "
              "test classes covered | hypernym names (concepts) |", "|---" * 11 + "|"]
    for level in LEVELS:
        s = result["classes"][str(level)]
        lines.append(f"| {level} | {int(s['classes'])} | {int(s['names'])} | {int(s['multi_class_names'])} | "
                     f"{int(s['min'])} | {int(s['max'])} | {s['mean']:.0f} | {s['stdev']:.0f} | {s['training_names']} | "
                     f"{s['test_classes']} | {s['hypernym_names']} ({s['hypernym_concepts']}) |")
        p = {k: v[level - 1] for k, v in PAPER_CLASSES.items()}
        lines.append(f"| *paper {level}* | *{p['classes']}* | | | *{p['min']}* | *{p['max']}* | *{p['mean']}* | "
                     f"*{p['stdev']}* | | | |")
    lines += ["", "### DAN training", "", "| DAN | classes | training names | validation names | epochs | best epoch | "
              "stopped | validation mAP | fastText validation mAP |", "|---" * 9 + "|"]
    for level, d in result["dan_training"].items():
        lines.append(f"| level {level} | {int(d['classes'])} | {d['training_names']} | {d['validation_names']} | "
                     f"{d['epochs']} | {d['best_epoch']} | {d['stopped']} | {d['validation_map']:.3f} | "
                     f"{d['baseline_validation_map']:.3f} |")
    for metric, title, paper in (("map", "semantic similarity ranking, mAP (paper Table 4)", PAPER_MAP),
                                 ("mrr", "unsupervised hypernym detection, MRR (paper Table 5)", PAPER_MRR)):
        lines += ["", f"### {title}, test names, per level", "", "| encoder | level 1 | level 2 | level 3 | level 4 |",
                  "|---|---|---|---|---|"]
        encoders = result["encoders"]
        best = {str(lv): max(e[metric][str(lv)] for e in encoders.values()) for lv in LEVELS}
        for label, entry in encoders.items():
            cells = [f"**{entry[metric][str(lv)]:.3f}**" if entry[metric][str(lv)] == best[str(lv)]
                     else f"{entry[metric][str(lv)]:.3f}" for lv in LEVELS]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        for label, values in paper.items():
            lines.append(f"| *paper {label} (C1290864)* | " + " | ".join(f"*{v:.2f}*" for v in values) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dictionary", default="hp", choices=sorted(HIERARCHIES))
    parser.add_argument("--top", help="the high-level concept whose children are level 1 (hp: HP:0000118)")
    parser.add_argument("--minutes", type=float, help="DAN training budget per level (default 3; quick 0.1)")
    parser.add_argument("--test-concepts", type=int, default=0,
                        help="at least this many test concepts, in rounds of one per level-4 class (0: one round)")
    parser.add_argument("--word-vectors", help="word-vector folder (default var/artifacts/wv-<dictionary>-bench, "
                                               "trained when missing)")
    parser.add_argument("--out-dir", help="where the DAN artifacts go (default var/artifacts/higher-level-<dictionary>)")
    parser.add_argument("--encoder", action="append", default=[], help="label=spec, another encoder to score")
    parser.add_argument("--no-minilm", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a 2-minute smoke run (see above)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--note", default="")
    parser.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    if args.minutes is None:
        args.minutes = 0.1 if args.quick else 3.0
    if not HIERARCHIES[args.dictionary].exists():
        print(json.dumps({"skipped": f"{HIERARCHIES[args.dictionary]} does not exist"}))
        return 0
    result = run(args)
    print(json.dumps(result, indent=2, default=str))
    if not args.no_results:
        command = " ".join(["python bench/higher_level.py", *(argv if argv is not None else sys.argv[1:])])
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + _markdown(result, command, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
