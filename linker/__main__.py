"""Command line: ``python -m linker build-index | train | train-word-vectors | pretrain-hierarchy | train-rerank |
train-tagger | evaluate | link | detect``
(files in, files out).

argparse lives only here; each sub-command calls a typed ``*_main`` function.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from linker.data import DICTIONARY_FORMATS, PubTatorDocument, iter_dictionary, iter_pubtator, iter_texts
from linker.detect.merge import RULES
from linker.device import choose_device
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.registry import load_encoder
from linker.encoders.transformer import TransformerEncoder
from linker.evaluate import evaluate_linking
from linker.index import KINDS, IndexConfig
from linker.linker import Linker, LinkerConfig
from linker.methods.biosyn import BioSynRecipeConfig
from linker.methods.hiprbert import HiPrBERTRecipeConfig
from linker.methods.latte import LatteRecipeConfig
from linker.methods.tagger import TaggerRecipeConfig
from linker.rerank.model import LatteConfig
from linker.rerank.training import RerankTrainingConfig
from linker.retrieval import Mode, RetrievalConfig
from linker.text import Preprocessor, TextConfig
from linker.train import SCOPES, BioSynConfig, TrainerConfig

__all__ = ["build_index_main", "train_main", "train_word_vectors_main", "pretrain_hierarchy_main", "train_rerank_main",
           "train_tagger_main", "evaluate_main", "link_main", "detect_main", "main"]


def _read_docs(paths: Sequence[str | Path]) -> list[PubTatorDocument]:
    return [doc for p in paths for doc in iter_pubtator(p)]


def _types(value: str | None) -> set[str] | None:
    return {t.strip() for t in value.split(",") if t.strip()} if value else None


def _log_to(path: str | Path | None) -> Any:
    """A progress callback printing one JSON line to stderr and, if given, appending it to ``path`` (its
    folder made now: ``--log OUT/progress.jsonl`` before OUT exists)."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def callback(progress: dict[str, Any]) -> None:
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **progress})
        print(line, file=sys.stderr, flush=True)
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    return callback


def build_index_main(
    dictionary: str | Path,
    out: str | Path,
    encoder_path: str | Path | None = None,
    merge_train: Sequence[str | Path] = (),
    mention_types: set[str] | None = None,
    index_kind: str = "auto",
    sparse_weight: float = 1.0,
    dense_scale: float = 20.0,
    sparse_only: bool = False,
    quantize: bool = False,
    first_stage: str | Path | None = None,
    cascade: str = "exact",
    sparse_search: bool = True,
    device: str | None = None,
    hnsw_storage: str = "flat",
    vector_dtype: str = "auto",
) -> dict[str, Any]:
    """An artifact folder from a dictionary file (+ training mentions merged) and an encoder folder (any kind;
    a linker artifact stands for its encoder). ``first_stage``: a fast encoder (BNE, DAN) indexed in front of
    the transformer, with the transformer encoding only what ``cascade`` says. A transformer encodes on
    :func:`linker.device.choose_device` (``device``, else LINKER_DEVICE, else CUDA where there is one)."""
    from linker.protocol import training_pairs

    text_cfg = TextConfig()
    table = NameTable.from_records(iter_dictionary(dictionary), text_cfg)
    merged = 0
    if merge_train:
        merged = len(table.add(training_pairs(_read_docs(merge_train), table, Preprocessor(text_cfg), mention_types)))
    encoder: NameEncoder | None = None
    if not sparse_only:
        target = choose_device(device)
        encoder = load_encoder(encoder_folder(encoder_path), device=target) if encoder_path else TransformerEncoder()
        if isinstance(encoder, TransformerEncoder):
            encoder.place(target)
    fast = load_encoder(encoder_folder(first_stage)) if first_stage and encoder is not None else None
    config = LinkerConfig(
        text=text_cfg,
        retrieval=RetrievalConfig(sparse_weight=sparse_weight, dense_scale=dense_scale, sparse_search=sparse_search,
                                  cascade="exact" if fast is not None and cascade == "exact" else "off"),
        index=IndexConfig(kind=index_kind, hnsw_storage=hnsw_storage, vector_dtype=vector_dtype),  # type: ignore[arg-type]
        quantize=quantize,
    )
    t0 = time.perf_counter()
    linker = Linker.build(table, encoder, config, metadata={"dictionary": str(dictionary), "merged_train": merged},
                          first_stage_encoder=fast)
    elapsed = time.perf_counter() - t0
    linker.save(out)
    return {"names": len(table), "merged_train_names": merged, "build_s": elapsed, "names_per_s": len(table) / elapsed,
            "encode_device": linker.metadata.get("encode_device"),
            "encode_batch_size": linker.metadata.get("encode_batch_size")}


def encoder_folder(path: str | Path) -> Path:
    """An encoder folder, or a linker artifact's ``encoder/``."""
    path = Path(path)
    if (path / "config.json").exists() and (path / "encoder").is_dir():
        return path / "encoder"
    return path


def _read_texts(paths: Sequence[str | Path]) -> list[str]:
    return [text for p in paths for text in iter_texts(p)]


def train_main(
    dictionary: str | Path,
    train: Sequence[str | Path],
    out: str | Path,
    config: Any = None,
    mention_types: set[str] | None = None,
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
    method: str = "biosyn",
    dev: Sequence[str | Path] = (),
    texts: Sequence[str | Path] = (),
    word_vectors: str | Path | None = None,
) -> dict[str, Any]:
    """The files as the recipe's inputs, then :func:`linker.recipe.train` (``method``: biosyn, bne, dan): an
    artifact folder with the training mentions merged in, and its report. ``dev``: PubTator files the
    word-vector encoders stop on; ``texts`` (PubTator or plain text) and ``word_vectors`` (a folder or a
    .vec/.bin file) are what BNE and DAN start from. DAN above level 0 reads the dictionary's hierarchy."""
    from linker.protocol import training_pairs
    from linker.recipe import TrainingCallbacks, TrainingInputs, get_method, prior_counts
    from linker.recipe import train as train_recipe

    entry = get_method(method)
    records = list(iter_dictionary(dictionary))
    table = NameTable.from_records(records, TextConfig())
    docs = _read_docs(train)
    hierarchies = []
    level = int(getattr(config, "level", 0) or 0)
    if method == "dan" and level > 0:
        from linker.hierarchy.graph import HierarchySource
        from linker.hierarchy.sources import source_name

        hierarchies = [HierarchySource.from_records(source_name(dictionary), records, table.cfg)]
    inputs = TrainingInputs(
        table=table, pairs=training_pairs(docs, table, Preprocessor(table.cfg), mention_types),
        concept_counts=prior_counts(docs, table, mention_types), out=Path(out), base_model=base_model,
        metadata={"dictionary": str(dictionary), "train": [str(t) for t in train]},
        mention_types=frozenset(mention_types) if mention_types else None, dev_documents=_read_docs(dev),
        texts=[*(f"{d.title} {d.abstract}" for d in docs), *_read_texts(texts),
               *(r.definition for r in records if r.definition)],
        word_vectors=Path(word_vectors) if word_vectors else None, hierarchies=hierarchies,
    )
    log = _log_to(log_file)
    callbacks = TrainingCallbacks(on_step=log, on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                                  on_log=lambda line: log({"log": line}))
    _, report = train_recipe(method, inputs, config if config is not None else entry.config_class(), callbacks)
    return report


def train_word_vectors_main(
    out: str | Path,
    texts: Sequence[str | Path] = (),
    dictionaries: Sequence[str | Path] = (),
    config: Any = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """fastText word vectors on text files (PubTator documents or plain lines) and dictionaries' names and
    definitions: a word-vector folder that ``train --method bne|dan --word-vectors`` starts from."""
    from linker.recipe import FastTextRecipeConfig, TrainingCallbacks, TrainingInputs
    from linker.recipe import train as train_recipe

    table = NameTable(TextConfig())
    definitions: list[str] = []
    for path in dictionaries:
        records = list(iter_dictionary(path))
        table.add((name, r.concept_id) for r in records for name in r.all_names())
        definitions.extend(r.definition for r in records if r.definition)
    corpus = [*_read_texts(texts), *definitions]
    log = _log_to(log_file)
    inputs = TrainingInputs(table=table, pairs=(), concept_counts={}, out=Path(out), texts=corpus,
                            metadata={"texts": [str(t) for t in texts], "dictionaries": [str(d) for d in dictionaries]})
    callbacks = TrainingCallbacks(on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                                  on_log=lambda line: log({"log": line}))
    _, report = train_recipe("fasttext", inputs, config or FastTextRecipeConfig(), callbacks)
    return report


def pretrain_hierarchy_main(
    dictionaries: Sequence[str | Path],
    out: str | Path,
    config: HiPrBERTRecipeConfig | None = None,
    corpora: Sequence[str | Path] = (),
    synonym_files: Sequence[str | Path] = (),
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """HiPrBERT pre-training (:mod:`linker.methods.hiprbert`) over the dictionaries' synonyms and hierarchies,
    the corpora's mentions as names of their concepts and the synonym files' mention->concept pairs: a base
    encoder folder ``out`` for ``train --base-model`` and ``build-index --encoder``."""
    from linker.hierarchy.sources import sources_from_files
    from linker.recipe import TrainingCallbacks, TrainingInputs
    from linker.recipe import train as train_recipe

    sources, gained = sources_from_files(dictionaries, corpora, synonym_files)
    inputs = TrainingInputs(
        table=NameTable(), pairs=(), concept_counts={}, out=Path(out), base_model=base_model, hierarchies=sources,
        metadata={"dictionaries": [str(d) for d in dictionaries], "corpora": [str(c) for c in corpora],
                  "synonym_files": [str(f) for f in synonym_files], "corpus_names_added": gained},
    )
    log = _log_to(log_file)
    callbacks = TrainingCallbacks(on_step=log, on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                                  on_log=lambda line: log({"log": line}))
    _, report = train_recipe("hiprbert", inputs, config or HiPrBERTRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "pretrain"} | {"last_epoch": (report.get("pretrain") or [None])[-1]}


def train_rerank_main(
    dictionary: str | Path,
    train: Sequence[str | Path],
    base: str | Path,
    out: str | Path,
    config: LatteRecipeConfig | None = None,
    mention_types: set[str] | None = None,
    types_from: str | Path | None = None,
    dev: Sequence[str | Path] = (),
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """A LATTE re-ranker over the linker artifact ``base`` (see :mod:`linker.methods.latte`): the artifact
    ``out`` is that linker with ``rerank/`` inside. Known types come from ``dictionary`` itself, or by
    concept id from ``types_from`` (e.g. CTD_diseases.tsv.gz for the 2012 MEDIC release, which has none)."""
    from linker.protocol import training_pairs
    from linker.recipe import TrainingCallbacks, TrainingInputs, prior_counts
    from linker.recipe import train as train_recipe
    from linker.rerank.known_types import known_types_of

    records = list(iter_dictionary(dictionary))
    table = NameTable.from_records(records, TextConfig())
    types = known_types_of(iter_dictionary(types_from) if types_from else records)
    concept_types = {primary: t for cid, t in types.items() if (primary := table.resolve_id(cid))}
    docs = _read_docs(train)
    inputs = TrainingInputs(
        table=table, pairs=training_pairs(docs, table, Preprocessor(table.cfg), mention_types),
        concept_counts=prior_counts(docs, table, mention_types), out=Path(out), documents=docs,
        mention_types=frozenset(mention_types) if mention_types else None, concept_types=concept_types,
        base_artifact=Path(base), dev_documents=_read_docs(dev),
        metadata={"dictionary": str(dictionary), "train": [str(t) for t in train], "base": str(base)},
    )
    log = _log_to(log_file)
    callbacks = TrainingCallbacks(on_step=log, on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                                  on_log=lambda line: log({"log": line}))
    _, report = train_recipe("latte", inputs, config or LatteRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "latte"} | {"latte_last_epoch": (report.get("latte") or [None])[-1]}


def train_tagger_main(
    train: Sequence[str | Path],
    out: str | Path,
    config: TaggerRecipeConfig | None = None,
    dev: Sequence[str | Path] = (),
    mention_types: set[str] | None = None,
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
    dictionaries: Sequence[str | Path] = (),
    dictionary_format: str | None = None,
) -> dict[str, Any]:
    """A mention tagger (:mod:`linker.methods.tagger`) trained on the mentions of PubTator files (of
    ``mention_types``; None: all) -> the tagger folder ``out``; ``dev`` files are scored after every epoch.
    With ``dictionaries``, the tagger reads dictionary features over their names and the training mentions."""
    from linker.recipe import TrainingCallbacks, TrainingInputs
    from linker.recipe import train as train_recipe

    names = [name for d in dictionaries for record in iter_dictionary(d, dictionary_format)
             for name in record.all_names()]
    inputs = TrainingInputs(
        table=NameTable(), pairs=(), concept_counts={}, out=Path(out), base_model=base_model,
        documents=_read_docs(train), dev_documents=_read_docs(dev),
        mention_types=frozenset(mention_types) if mention_types else None, names=names,
        metadata={"train": [str(t) for t in train], "dev": [str(d) for d in dev],
                  "mention_types": sorted(mention_types or ()), "dictionaries": [str(d) for d in dictionaries]},
    )
    log = _log_to(log_file)
    callbacks = TrainingCallbacks(on_step=log, on_epoch_end=log, on_phase=lambda name: log({"phase": name}),
                                  on_log=lambda line: log({"log": line}))
    _, report = train_recipe("tagger", inputs, config or TaggerRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "history"}


def _documents(path: str | Path) -> list[tuple[str, str]]:
    """(id, text) of each document: a PubTator file's (its PMID, title and abstract), or a plain text file's
    non-empty lines (id: the line number)."""
    from linker.data import open_text

    with open_text(path) as fh:
        head = fh.read(4000)
    if "|t|" in head or "|a|" in head:
        return [(doc.pmid, doc.text) for doc in iter_pubtator(path)]
    with open_text(path) as fh:
        return [(str(number), line.rstrip("\r\n")) for number, line in enumerate(fh, start=1) if line.strip()]


def detect_main(
    inputs: Sequence[str | Path],
    output: TextIO,
    tagger: str | Path | None = None,
    dictionaries: Sequence[str | Path] = (),
    dictionary_format: str | None = None,
    rule: str = "tagger-first",
    batch_size: int = 16,
    device: str | None = None,
) -> dict[str, Any]:
    """Mentions of each document of ``inputs`` found by the tagger folder ``tagger``, the dictionary matcher over
    the names of ``dictionaries``, or both merged by ``rule`` (:mod:`linker.detect.merge`): one JSON object per
    document (``id``, ``spans`` with their offsets, text, source and score). Returns counts."""
    from linker.detect.matcher import DictionaryMatcher
    from linker.detect.merge import merge
    from linker.detect.tagger import Tagger

    if tagger is None and not dictionaries:
        raise ValueError("nothing to detect with: give a tagger folder, a dictionary, or both")
    matcher = DictionaryMatcher(
        name for d in dictionaries for record in iter_dictionary(d, dictionary_format) for name in record.all_names()
    ) if dictionaries else None
    model = Tagger.load(tagger, device) if tagger is not None else None
    documents = spans = 0
    t0 = time.perf_counter()
    for path in inputs:
        docs = _documents(path)
        texts = [text for _, text in docs]
        tagged = model.predict(texts, batch_size) if model is not None else None
        matched = matcher.find_many(texts) if matcher is not None else None
        for i, (doc_id, _) in enumerate(docs):
            if tagged is not None and matched is not None:
                found = merge(matched[i], tagged[i], rule, tagger_knows=model.knows if model is not None else None)
            else:
                found = (tagged if tagged is not None else matched or [[]])[i]
            output.write(json.dumps({"id": doc_id, "file": str(path), "spans": [s._asdict() for s in found]}) + "\n")
            documents += 1
            spans += len(found)
    elapsed = time.perf_counter() - t0
    return {"documents": documents, "spans": spans, "seconds": elapsed, "documents_per_s": documents / max(elapsed, 1e-9),
            "detectors": [d for d, on in (("tagger", model), ("matcher", matcher)) if on is not None],
            "rule": rule if model is not None and matcher is not None else None}


def _link_in_context(linker: Linker, eval_set: Sequence[Any], texts: dict[str, str], k: int) -> list[list[list[Any]]]:
    """Each evaluation mention re-ranked in its document, as parts of candidates (the protocol's queries)."""
    from linker.rerank import MentionSpan

    by_doc: dict[str, list[int]] = {}
    for i, em in enumerate(eval_set):
        by_doc.setdefault(em.pmid, []).append(i)
    out: list[list[list[Any]]] = [[] for _ in eval_set]
    for pmid, idx in by_doc.items():
        linked = linker.link_in_context([MentionSpan(eval_set[i].text, eval_set[i].start, eval_set[i].end) for i in idx],
                                        texts.get(pmid, ""), k, queries=[eval_set[i].queries for i in idx])
        for i, lm in zip(idx, linked, strict=True):
            out[i] = lm.by_part(len(eval_set[i].queries))
    return out


def evaluate_main(
    artifact: str | Path,
    eval_files: Sequence[str | Path],
    mention_types: set[str] | None = None,
    mode: Mode | None = None,
    k: int = 20,
    rerank: bool = True,
    device: str | None = None,
) -> dict[str, float]:
    """Acc@1/Acc@5 (composites correct only if every part is) of an artifact on PubTator gold mentions; an
    artifact with a re-ranker is scored re-ranked, each mention in its document (``rerank=False``: not). Queries
    are encoded on :func:`linker.device.choose_device` (``device``)."""
    from linker.protocol import build_eval_set

    linker = Linker.load(artifact, strict_rerank=True, device=choose_device(device))
    docs = _read_docs(eval_files)
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, mention_types)
    t0 = time.perf_counter()
    if linker.reranker is not None and mode is None and rerank:
        ranked = _link_in_context(linker, eval_set, {d.pmid: d.text for d in docs}, k)
    else:
        ranked = linker.link_queries([m.queries for m in eval_set], k) if mode is None else [
            [[c for c in part] for part in parts]
            for parts in _link_with_mode(linker, [m.queries for m in eval_set], k, mode)
        ]
    elapsed = time.perf_counter() - t0
    metrics = evaluate_linking(
        [m.gold_parts for m in eval_set],
        [[[c.concept_id for c in part] for part in parts] for parts in ranked],
    )
    metrics["mentions"] = float(len(eval_set))
    metrics["mentions_per_s"] = len(eval_set) / max(elapsed, 1e-9)
    return metrics


def calibrate_main(
    artifact: str | Path, gold_files: Sequence[str | Path], mention_types: set[str] | None = None, k: int = 20,
    nil_file: str | Path | None = None, device: str | None = None,
) -> dict[str, Any]:
    """Fit the artifact's confidence calibration (:mod:`linker.calibration`) on PubTator gold mentions (a held-out
    set, never the training data) and, optionally, mentions known to have no concept (a file of one mention a
    line): writes ``calibration.json`` into the artifact and returns its figures."""
    from linker.calibration import fit_calibration, labelled_examples, nil_examples, reliability
    from linker.protocol import build_eval_set
    from linker.rerank import MentionSpan

    linker = Linker.load(artifact, strict_rerank=True, device=choose_device(device))
    docs = _read_docs(gold_files)
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor, mention_types)
    queries = [m.queries for m in eval_set]
    if linker.reranker is not None:
        ranked = _link_in_context(linker, eval_set, {d.pmid: d.text for d in docs}, k)
    else:
        ranked = linker.link_queries(queries, k)
    examples = labelled_examples(queries, ranked, [m.gold_parts for m in eval_set], linker.preprocessor.normalize)
    if nil_file is not None:
        texts = [line.strip() for line in Path(nil_file).read_text(encoding="utf-8").splitlines() if line.strip()]
        nil_queries = linker.queries_for(texts)
        # Scored as the labelled examples are (re-ranked where the linker re-ranks), each text on its own.
        nil_ranked = [linker.ranked_as_served([MentionSpan(t)], None, k, queries=[q])[0] for t, q in zip(texts, nil_queries, strict=True)]
        examples += nil_examples(nil_queries, nil_ranked, linker.preprocessor.normalize)
    calibration = fit_calibration(examples, scored_by=linker.ranked_by)
    calibration.save(artifact)
    probs = [calibration.probability(e.features) for e in examples]
    return {"artifact": str(artifact), "nil_threshold": calibration.nil_threshold, **calibration.fitted_on,
            **{f"fit_{key}": value for key, value in reliability(probs, [e.right for e in examples]).items()}}


def _link_with_mode(linker: Linker, queries: list[list[str]], k: int, mode: Mode) -> list[list[list[Any]]]:
    flat = [q for parts in queries for q in parts]
    ranked = linker.retriever.retrieve(flat, k, mode=mode)
    out, pos = [], 0
    for parts in queries:
        out.append(ranked[pos : pos + len(parts)])
        pos += len(parts)
    return out


def link_main(
    artifact: str | Path, inputs: Sequence[str | Path], output: TextIO, k: int = 10, device: str | None = None
) -> int:
    """PubTator files: link every annotated mention with its document as context (re-ranked when the artifact
    has a re-ranker); other files: one mention per line. Writes one JSON object per mention; returns the
    number written. Mentions are encoded on :func:`linker.device.choose_device` (``device``)."""
    from linker.rerank import MentionSpan

    linker = Linker.load(artifact, device=choose_device(device))
    written = 0
    for path in inputs:
        path = Path(path)
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
        if "|t|" in head:
            for doc in iter_pubtator(path):
                spans = [MentionSpan(m.text, m.start, m.end) for m in doc.mentions]
                queries = linker.queries_for([m.text for m in doc.mentions], doc.text)
                linked_all = linker.link_in_context(spans, doc.text, k, queries=queries)
                nested = [[[c for c in linked.candidates if c.part == p] for p in range(len(qs))]
                          for qs, linked in zip(queries, linked_all, strict=True)]
                confidences = linker.confidences(queries, nested)
                for m, linked, parts, confidence in zip(doc.mentions, linked_all, nested, confidences, strict=True):
                    rec = {"pmid": doc.pmid, "start": m.start, "end": m.end, "mention": m.text,
                           "ranked_by": linked.ranked_by,
                           "mention_known_types": linked.mention_known_types,
                           **_confidence_fields(linker, confidence),
                           "parts": [[c._asdict() for c in part] for part in parts]}
                    output.write(json.dumps(rec) + "\n")
                    written += 1
        else:
            lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
            queries = linker.queries_for(lines)
            ranked = linker.link_queries(queries, k)
            for text, parts, confidence in zip(lines, ranked, linker.confidences(queries, ranked), strict=True):
                output.write(json.dumps({"mention": text, **_confidence_fields(linker, confidence),
                                         "parts": [[c._asdict() for c in p] for p in parts]}) + "\n")
                written += 1
    return written


def _confidence_fields(linker: Linker, confidence: float | None) -> dict[str, Any]:
    """A calibrated linker's verdict on a mention: its top-1 confidence and whether it says "no concept"."""
    if confidence is None or linker.calibration is None:
        return {}
    return {"confidence": round(confidence, 4), "nil": linker.calibration.says_nil(confidence)}


def _train_config(args: argparse.Namespace) -> BioSynRecipeConfig:
    """The train sub-command's flags; those not given take the scope's defaults (linker.train.SCOPE_DEFAULTS)."""
    defaults = BioSynConfig()
    return BioSynRecipeConfig(
        biosyn=BioSynConfig(num_threads=args.threads, topk=args.topk or defaults.topk,
                            batch_size=args.batch_size or defaults.batch_size),
        scope=args.scope, epochs=args.epochs, lr=args.lr, pretrain_epochs=args.pretrain_epochs,
        pretrain_max_pairs=args.pretrain_pairs, skip_pretrain=args.skip_pretrain, max_queries=args.max_queries,
        prior_weight=args.prior_weight, device=args.device or None, feature_cache=args.feature_cache,
        layers=tuple(int(x) for x in args.layers.split(",")) if args.layers else None,
    )


def _fast_config(args: argparse.Namespace) -> Any:
    """The train flags that the BNE or DAN config has, over its defaults (the papers' settings)."""
    from dataclasses import fields

    from linker.recipe import get_method

    config = get_method(args.method).config_class()
    names = {f.name for f in fields(config)}
    given: dict[str, Any] = {
        "epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "patience": args.patience,
        "max_minutes": args.max_minutes, "threads": args.threads, "level": args.level, "device": args.device,
        "objectives": tuple(o.strip() for o in args.objectives.split(",")) if args.objectives else None,
        "negatives": args.negatives,
    }
    unknown = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None and k not in names
               and k not in ("threads", "device")]
    if unknown:
        raise SystemExit(f"{args.method} does not take {', '.join(unknown)}")
    if args.bne_size != "paper" or args.epoch_names is not None:
        if args.method != "bne":
            raise SystemExit(f"{args.method} does not take --bne-size or --epoch-names")
        from linker.encoders.bne import FAST_BNE

        given["bne"] = FAST_BNE if args.bne_size == "fast" else None
        given["epoch_names"] = args.epoch_names
    return replace(config, **{k: v for k, v in given.items() if v is not None and k in names})


def _hierarchy_config(args: argparse.Namespace) -> HiPrBERTRecipeConfig:
    """The pretrain-hierarchy flags; those not given take the scope's defaults (linker.methods.hiprbert)."""
    from linker.hierarchy.training import HierarchyPretrainConfig

    return HiPrBERTRecipeConfig(
        pretrain=HierarchyPretrainConfig(num_threads=args.threads), scope=args.scope, epochs=args.epochs,
        batch_size=args.batch_size, max_batches=args.max_batches, lr=args.lr, distances=args.distances,
        holdout_share=args.holdout, device=args.device or None,
        layers=tuple(int(x) for x in args.layers.split(",")) if args.layers else None,
    )


def _rerank_config(args: argparse.Namespace) -> LatteRecipeConfig:
    base = LatteRecipeConfig.paper() if args.paper else LatteRecipeConfig()
    model = replace(base.model, latent_types=args.latent_types, hidden=base.model.hidden if args.paper else args.hidden,
                    use_match="match" not in args.without, use_latent="latent" not in args.without,
                    use_features="features" not in args.without)
    training = replace(base.training, epochs=args.epochs, known_type_weight=args.known_type_weight,
                       part_weight=args.part_weight, num_threads=args.threads)
    return replace(base, model=model, training=training, top_k=args.top_k, device=args.device or None)


def _tagger_config(args: argparse.Namespace) -> TaggerRecipeConfig:
    """The train-tagger flags given, over the recipe's CPU defaults."""
    given = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "max_length": args.max_length,
             "stride": args.stride, "max_documents": args.max_documents, "num_threads": args.threads,
             "device": args.device, "seed": args.seed,
             "dictionary_features": False if getattr(args, "no_dictionary_features", False) else None}
    return replace(TaggerRecipeConfig(), **{k: v for k, v in given.items() if v is not None})


DEVICE_HELP = "cpu, cuda, cuda:1 ... (default: LINKER_DEVICE, else cuda if there is one)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m linker", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build-index", help="dictionary (+ training mentions) -> artifact folder")
    b.add_argument("--dictionary", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--encoder", help="encoder folder (default: the base model)")
    b.add_argument("--merge-train", nargs="*", default=[], help="PubTator files whose mentions join the dictionary")
    b.add_argument("--mention-types", help="comma-separated, e.g. Disease")
    b.add_argument("--index", default="auto", choices=list(KINDS),
                   help="auto: flat (exact) below a million names, else an HNSW graph with a float16 copy; ivfpq: "
                        "product-quantised codes for tens of millions of names")
    b.add_argument("--hnsw-storage", choices=["flat", "sq8"], default="flat", help="sq8: the graph's vectors as int8")
    b.add_argument("--vector-dtype", choices=["auto", "float32", "float16"], default="auto",
                   help="the kept copy of the vectors (pair scores, re-ranking of quantised candidates); auto: float16 "
                        "from a million names")
    b.add_argument("--sparse-weight", type=float, default=1.0)
    b.add_argument("--sparse-only", action="store_true")
    b.add_argument("--quantize", action="store_true")
    b.add_argument("--first-stage", help="a fast encoder (BNE/DAN artifact or encoder folder) searched before --encoder")
    b.add_argument("--cascade", choices=["exact", "off"], default="exact",
                   help="with --first-stage: exact: the transformer encodes only queries that are not a dictionary "
                        "name; off: every query")
    b.add_argument("--no-sparse-search", action="store_true",
                   help="tf-idf scores the dense candidates only (no search over all names; faster)")
    b.add_argument("--device", help=DEVICE_HELP)

    t = sub.add_parser("train", help="train a linker (BioSyn, BNE or DAN) -> artifact folder")
    t.add_argument("--method", choices=["biosyn", "bne", "dan"], default="biosyn",
                   help="biosyn: synonym pre-training + BioSyn (transformer); bne: BiLSTM over characters and word "
                        "vectors; dan: deep averaging network over word vectors")
    t.add_argument("--dictionary", required=True)
    t.add_argument("--train", nargs="+", required=True, help="PubTator training files")
    t.add_argument("--out", required=True)
    t.add_argument("--mention-types")
    t.add_argument("--base-model")
    t.add_argument("--epochs", type=int, help="BioSyn epochs (default: the scope's, see linker.train.SCOPE_DEFAULTS)")
    t.add_argument("--pretrain-pairs", type=int, help="synonym pairs for pre-training (0: all; default: the scope's)")
    t.add_argument("--skip-pretrain", action="store_true")
    t.add_argument("--max-queries", type=int, default=0, help="train on the first N queries only (smoke tests)")
    t.add_argument("--log", help="append JSON progress lines here")
    t.add_argument("--scope", choices=["auto", *SCOPES], default="auto",
                   help="full: the paper (GPU); student: the paper on a 3-layer student of the base model (CPU); "
                        "head: frozen transformer + projection head; auto: full on CUDA, else student")
    t.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    t.add_argument("--feature-cache", default="var/cache/features", help="folder for frozen-transformer features")
    t.add_argument("--layers", help="keep these base-model layers, e.g. 0,2,5 (default: the scope's)")
    t.add_argument("--lr", type=float, help="transformer learning rate (default: the scope's)")
    t.add_argument("--pretrain-epochs", type=int, help="default: the scope's")
    t.add_argument("--topk", type=int, help=f"BioSyn candidates per query (default {BioSynConfig.topk}, the paper's)")
    t.add_argument("--batch-size", type=int, help=f"BioSyn queries per batch (default {BioSynConfig.batch_size})")
    t.add_argument("--prior-weight", type=float, default=1e-3, help="weight of the concept prior log(1 + n)")
    t.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if there is one)")
    w = t.add_argument_group("bne and dan")
    w.add_argument("--word-vectors", help="a word-vector folder (train-word-vectors) or a .vec/.bin file "
                                          "(default: fastText trained on the training documents and names first)")
    w.add_argument("--texts", nargs="*", default=[], help="more text for that fastText (PubTator or plain lines)")
    w.add_argument("--dev", nargs="*", default=[], help="PubTator files to stop on (default: a share of the pairs)")
    w.add_argument("--patience", type=int, help="epochs without dev gain before stopping")
    w.add_argument("--max-minutes", type=float, help="stop after this much training time")
    w.add_argument("--objectives", help="BNE: comma-separated of syn,def,ctx (default: all three)")
    w.add_argument("--level", type=int, help="DAN: 0 concepts (linking); L >= 1 ancestors at level L as classes")
    w.add_argument("--bne-size", choices=["paper", "fast"], default="paper",
                   help="BNE: the paper's recurrent states (200/200) or smaller ones (50/100) that encode ~2x faster")
    w.add_argument("--epoch-names", type=int, help="BNE: anchors per epoch (default: every name)")
    w.add_argument("--negatives", type=int, help="BNE: in-batch negatives per anchor and objective (the paper: 1)")

    v = sub.add_parser("train-word-vectors", help="fastText word vectors on documents and names -> folder")
    v.add_argument("--text", nargs="*", default=[], help="PubTator files or plain text files (a text a line)")
    v.add_argument("--dictionary", nargs="*", default=[], help="dictionaries whose names and definitions join")
    v.add_argument("--out", required=True)
    v.add_argument("--dim", type=int, default=200)
    v.add_argument("--epochs", type=int, default=10)
    v.add_argument("--min-count", type=int, default=2)
    v.add_argument("--threads", type=int, default=2)
    v.add_argument("--log", help="append JSON progress lines here")

    h = sub.add_parser("pretrain-hierarchy", help="HiPrBERT pre-training on dictionaries' hierarchies -> base encoder folder")
    h.add_argument("--dictionary", action="append", required=True,
                   help="a dictionary with a hierarchy (MEDIC TSV, OBO); repeat for several")
    h.add_argument("--corpus", action="append", default=[],
                   help="PubTator training file whose mentions join the dictionary that resolves their ids")
    h.add_argument("--synonyms", action="append", default=[],
                   help="'ID||mention' lines or a .tar.gz of them (test/ folders skipped): a synonyms-only source")
    h.add_argument("--out", required=True)
    h.add_argument("--base-model", help="local Hugging Face folder (default: the shipped MiniLM)")
    h.add_argument("--scope", choices=["auto", "full", "student"], default="auto",
                   help="full: the whole model, the paper (GPU); student: its 3-layer student (CPU); auto: by device")
    h.add_argument("--epochs", type=int)
    h.add_argument("--batch-size", type=int, help="names per batch (default: 256 full, 128 student)")
    h.add_argument("--max-batches", type=int, help="batches per epoch (0: all; default: all full, 1000 student)")
    h.add_argument("--lr", type=float)
    h.add_argument("--layers", help="keep these base-model layers, e.g. 0,2,5 (default: the scope's)")
    h.add_argument("--distances", choices=["hierarchy", "synonym"],
                   help="hierarchy: the paper; synonym: the same batches with synonymy only (the baseline)")
    h.add_argument("--holdout", type=float, default=0.0, help="share of concepts held out and scored at the end")
    h.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    h.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    h.add_argument("--log", help="append JSON progress lines here")

    r = sub.add_parser("train-rerank", help="a LATTE re-ranker over a linker artifact -> artifact folder")
    r.add_argument("--dictionary", required=True, help="the dictionary the base artifact was built from")
    r.add_argument("--train", nargs="+", required=True, help="PubTator training files")
    r.add_argument("--base", required=True, help="the linker artifact to re-rank over")
    r.add_argument("--out", required=True)
    r.add_argument("--mention-types")
    r.add_argument("--types-from", help="a dictionary file whose known types apply by concept id")
    r.add_argument("--dev", nargs="*", default=[], help="PubTator files scored after every epoch")
    r.add_argument("--epochs", type=int, default=RerankTrainingConfig.epochs)
    r.add_argument("--latent-types", type=int, default=LatteConfig.latent_types, help="K (the paper's 2048)")
    r.add_argument("--hidden", type=int, default=LatteConfig.hidden, help="BiLSTM width per direction")
    r.add_argument("--top-k", type=int, default=10, help="candidates re-ranked per mention part")
    r.add_argument("--known-type-weight", type=float, default=RerankTrainingConfig.known_type_weight,
                   help="0 trains without known types (the paper's LATTE-NKT)")
    r.add_argument("--part-weight", type=float, default=RerankTrainingConfig.part_weight,
                   help="weight of f's and g's own ranking losses (0, the default: they learn only through r, "
                        "which starts at the retriever's order; see linker.rerank.training)")
    r.add_argument("--without", action="append", default=[], choices=["match", "latent", "features"],
                   help="ablation: drop f (cross-attention), g (latent types) or the retriever's features")
    r.add_argument("--paper", action="store_true", help="the paper's sizes (two 512-d BiLSTM layers; a GPU job)")
    r.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    r.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    r.add_argument("--log", help="append JSON progress lines here")

    tg = sub.add_parser("train-tagger", help="a mention tagger (BIO token classifier) on PubTator files -> folder")
    tg.add_argument("--train", action="append", required=True, help="PubTator training file; repeat for several")
    tg.add_argument("--dev", action="append", default=[], help="PubTator file scored after every epoch (the best "
                                                                "epoch is kept); repeat for several")
    tg.add_argument("--mention-type", action="append", default=[],
                    help="keep mentions of this type (e.g. Disease); repeat for several (default: all)")
    tg.add_argument("--out", required=True)
    tg.add_argument("--dictionary", action="append", default=[],
                    help="dictionary whose names (with the training mentions) the tagger reads as features; "
                         "repeat for several (default: none, the tagger reads the text alone)")
    tg.add_argument("--dictionary-format", help="the dictionaries' format (default: sniffed)")
    tg.add_argument("--no-dictionary-features", action="store_true",
                    help="read the text alone even when --dictionary is given")
    tg.add_argument("--base-model", help="local Hugging Face folder (default: the shipped MiniLM)")
    tg.add_argument("--epochs", type=int, help=f"default {TaggerRecipeConfig.epochs}")
    tg.add_argument("--lr", type=float, help=f"default {TaggerRecipeConfig.lr}")
    tg.add_argument("--batch-size", type=int, help=f"windows per batch (default {TaggerRecipeConfig.batch_size})")
    tg.add_argument("--max-length", type=int, help=f"subword tokens per window (default {TaggerRecipeConfig.max_length})")
    tg.add_argument("--stride", type=int, help=f"tokens consecutive windows share (default {TaggerRecipeConfig.stride})")
    tg.add_argument("--max-documents", type=int, help="train on the first N documents only (quick runs)")
    tg.add_argument("--seed", type=int)
    tg.add_argument("--threads", type=int, help=f"torch CPU threads (default {TaggerRecipeConfig.num_threads})")
    tg.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    tg.add_argument("--log", help="append JSON progress lines here")

    e = sub.add_parser("evaluate", help="Acc@k of an artifact on PubTator gold mentions")
    e.add_argument("--artifact", required=True)
    e.add_argument("--eval", nargs="+", required=True)
    e.add_argument("--mention-types")
    e.add_argument("--mode", choices=["hybrid", "dense", "sparse"])
    e.add_argument("--no-rerank", action="store_true", help="score the retriever alone even with a re-ranker")
    e.add_argument("--device", help=DEVICE_HELP)

    ca = sub.add_parser("calibrate", help="fit an artifact's top-1 confidence (and NIL threshold) on held-out gold")
    ca.add_argument("--artifact", required=True)
    ca.add_argument("--gold", nargs="+", required=True, help="PubTator files with gold mentions (not the training data)")
    ca.add_argument("--mention-types")
    ca.add_argument("--nil", help="a file of mentions that have no concept, one a line (teaches the NIL threshold)")
    ca.add_argument("--device", help=DEVICE_HELP)

    li = sub.add_parser("link", help="link mentions of PubTator or one-mention-a-line files -> JSON lines")
    li.add_argument("--artifact", required=True)
    li.add_argument("inputs", nargs="+")
    li.add_argument("--k", type=int, default=10)
    li.add_argument("--output", help="default: stdout")
    li.add_argument("--device", help=DEVICE_HELP)

    d = sub.add_parser("detect", help="find mentions in PubTator or plain text files (a document a line) -> JSON lines")
    d.add_argument("--in", dest="inputs", action="append", required=True, help="a .PubTator or .txt file; repeat")
    d.add_argument("--tagger", help="a tagger folder (train-tagger)")
    d.add_argument("--dictionary", action="append", default=[], help="a dictionary whose names the matcher finds")
    d.add_argument("--dictionary-format", choices=list(DICTIONARY_FORMATS), help="default: from the file")
    d.add_argument("--rule", choices=list(RULES), default="tagger-first", help="how tagger and matcher spans merge")
    d.add_argument("--batch-size", type=int, default=16, help="tagger windows per batch")
    d.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    d.add_argument("--out", required=True, help="the JSON-lines file to write")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = _parser().parse_args(argv)
    if args.command == "build-index":
        result: Any = build_index_main(args.dictionary, args.out, args.encoder, args.merge_train,
                                       _types(args.mention_types), args.index, args.sparse_weight,
                                       sparse_only=args.sparse_only, quantize=args.quantize,
                                       first_stage=args.first_stage, cascade=args.cascade,
                                       sparse_search=not args.no_sparse_search, device=args.device,
                                       hnsw_storage=args.hnsw_storage, vector_dtype=args.vector_dtype)
    elif args.command == "train" and args.method == "biosyn":
        result = train_main(args.dictionary, args.train, args.out, _train_config(args), _types(args.mention_types),
                            args.base_model, args.log)
        result = {k: v for k, v in result.items() if k not in ("pretrain", "biosyn")} | {
            "biosyn_last_epoch": result["biosyn"][-1] if result["biosyn"] else None}
    elif args.command == "train":
        result = train_main(args.dictionary, args.train, args.out, _fast_config(args), _types(args.mention_types),
                            log_file=args.log, method=args.method, dev=args.dev, texts=args.texts,
                            word_vectors=args.word_vectors)
        result = {k: v for k, v in result.items() if k != "history"}
    elif args.command == "train-word-vectors":
        from linker.encoders.wordvec import FastTextConfig
        from linker.recipe import FastTextRecipeConfig

        fasttext = FastTextConfig(dim=args.dim, epochs=args.epochs, min_count=args.min_count, workers=args.threads)
        result = train_word_vectors_main(args.out, args.text, args.dictionary, FastTextRecipeConfig(fasttext),
                                         args.log)
    elif args.command == "pretrain-hierarchy":
        result = pretrain_hierarchy_main(args.dictionary, args.out, _hierarchy_config(args), args.corpus,
                                         args.synonyms, args.base_model, args.log)
    elif args.command == "train-rerank":
        result = train_rerank_main(args.dictionary, args.train, args.base, args.out, _rerank_config(args),
                                   _types(args.mention_types), args.types_from, args.dev, args.log)
    elif args.command == "train-tagger":
        result = train_tagger_main(args.train, args.out, _tagger_config(args), args.dev,
                                   set(args.mention_type) or None, args.base_model, args.log,
                                   args.dictionary, args.dictionary_format)
    elif args.command == "detect":
        if not args.tagger and not args.dictionary:
            raise SystemExit("detect needs --tagger, --dictionary, or both")
        with open(args.out, "w", encoding="utf-8") as fh:
            result = detect_main(args.inputs, fh, args.tagger, args.dictionary, args.dictionary_format, args.rule,
                                 args.batch_size, args.device)
    elif args.command == "calibrate":
        result = calibrate_main(args.artifact, args.gold, _types(args.mention_types), nil_file=args.nil,
                                device=args.device)
    elif args.command == "evaluate":
        result = evaluate_main(args.artifact, args.eval, _types(args.mention_types), args.mode,
                               rerank=not args.no_rerank, device=args.device)
    else:
        if args.output:
            with open(args.output, "w", encoding="utf-8") as fh:
                result = {"written": link_main(args.artifact, args.inputs, fh, args.k, args.device)}
        else:
            result = {"written": link_main(args.artifact, args.inputs, sys.stdout, args.k, args.device)}
            print(json.dumps(result), file=sys.stderr)
            return 0
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
