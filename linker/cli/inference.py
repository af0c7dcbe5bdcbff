"""The sub-commands that run a trained artifact over files: ``evaluate``, ``calibrate``, ``link`` and ``detect``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from linker.cli.common import read_docs
from linker.data import iter_pubtator
from linker.device import choose_device
from linker.evaluate import evaluate_linking
from linker.linker import Linker
from linker.retrieval import Mode

__all__ = ["detect_main", "evaluate_main", "calibrate_main", "link_main"]


def _documents(path: str | Path) -> list[tuple[str, str]]:
    """(id, text) of each document: a PubTator file's (its PMID, title and abstract), or a plain text file's
    non-empty lines (id: the line number)."""
    from linker.textfiles import open_text

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
    from linker.detect.detector import Detector

    detector = Detector.load(tagger, dictionaries, dictionary_format, rule, device)
    documents = spans = 0
    t0 = time.perf_counter()
    for path in inputs:
        docs = _documents(path)
        found_all = detector.detect([text for _, text in docs], batch_size)
        for (doc_id, _), found in zip(docs, found_all, strict=True):
            output.write(json.dumps({"id": doc_id, "file": str(path), "spans": [s._asdict() for s in found]}) + "\n")
            documents += 1
            spans += len(found)
    elapsed = time.perf_counter() - t0
    return {"documents": documents, "spans": spans, "seconds": elapsed, "documents_per_s": documents / max(elapsed, 1e-9),
            "detectors": detector.detectors, "rule": rule if detector.merged else None}


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
    docs = read_docs(eval_files)
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
    docs = read_docs(gold_files)
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

