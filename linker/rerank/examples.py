"""Re-ranking examples: a mention part in its context, the retriever's top-k for it, and which are gold.

Training candidates are *cross-fitted*: the training documents are split into folds and each fold's
mentions are retrieved by a linker whose dictionary holds only the other folds' merged training mentions
(and whose concept prior counts only theirs). Retrieved by the full linker, a training mention would find
itself among the merged names with a perfect score, and the re-ranker would learn to trust that, which no
unseen mention offers. The folds reuse the base linker's name vectors, so cross-fitting costs a tf-idf fit
and a flat index per fold, not a re-encoding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from linker.data import PubTatorDocument
from linker.dictionary import NameTable
from linker.index import DenseIndex
from linker.linker import Linker, annotation_counts
from linker.protocol import EvalMention, build_eval_set, training_pairs
from linker.rerank.context import MentionContext, MentionSpan, mention_context
from linker.rerank.features import retriever_features
from linker.retrieval import Candidate
from linker.sparse import SparseEncoder

__all__ = ["RerankExample", "examples_for", "cross_fitted_examples", "Rejections"]

# (document id, start, end) -> concept ids a curator rejected for that mention: hard negatives.
Rejections = Mapping[tuple[str, int, int], frozenset[str]]


@dataclass
class RerankExample:
    mention: int  # index of the mention (parts of one composite share it)
    context: MentionContext
    candidates: list[Candidate]  # the retriever's top-k, in its order
    features: np.ndarray  # [C, F]
    gold: frozenset[str]
    rejected: frozenset[str] = frozenset()
    document: str = ""
    fold: int = -1  # the cross-fitting fold its candidates were retrieved in (-1: not cross-fitted)

    @property
    def positives(self) -> list[int]:
        return [i for i, c in enumerate(self.candidates) if c.concept_id in self.gold]


def examples_for(
    linker: Linker, mentions: Sequence[EvalMention], texts: Mapping[str, str], top_k: int, window_words: int,
    rejections: Rejections | None = None, first_index: int = 0,
) -> list[RerankExample]:
    """One example per mention part, retrieved by ``linker``."""
    flat_queries = [[q] for em in mentions for q in em.queries]
    ranked = linker.link_queries(flat_queries, k=top_k)
    out: list[RerankExample] = []
    pos = 0
    for i, em in enumerate(mentions):
        text = texts.get(em.pmid, "")
        span = MentionSpan(em.text, em.start, em.end)
        rejected = (rejections or {}).get((em.pmid, em.start, em.end), frozenset())
        for query, gold in zip(em.queries, em.gold_parts, strict=True):
            cands = ranked[pos][0]
            pos += 1
            feats = retriever_features(query, cands, linker.table, linker.concept_prior,
                                       linker.config.retrieval.dense_scale)
            out.append(RerankExample(first_index + i, mention_context(span, text, query, window_words), cands,
                                     feats, gold, rejected, em.pmid))
    return out


def _fold_linker(base: Linker, dictionary: NameTable, pairs: Sequence[tuple[str, str]], counts: Mapping[str, int],
                 vector_of: Callable[[list[str]], np.ndarray]) -> Linker:
    table = dictionary.copy()
    table.add(pairs)
    sparse = SparseEncoder().fit(table.names)
    index = DenseIndex.build(vector_of(table.names), config=base.config.index) if base.encoder is not None else None
    linker = Linker(table, sparse, base.encoder, index, base.config)
    linker.concept_prior.update({cid: math.log1p(n) for cid, n in counts.items() if n > 0})
    return linker


def cross_fitted_examples(
    base: Linker,
    dictionary: NameTable,
    docs: Sequence[PubTatorDocument],
    top_k: int,
    window_words: int,
    mention_types: set[str] | None = None,
    folds: int = 5,
    rejections: Rejections | None = None,
    curated_counts: Mapping[str, int] | None = None,
    on_fold: Callable[[int, int], None] | None = None,
) -> list[RerankExample]:
    """Training examples for ``docs`` (gold mentions), each fold retrieved without its own mentions.

    ``dictionary`` is the dictionary before any training mention was merged; ``base`` the trained linker
    whose encoder and name vectors are reused."""
    vectors: dict[str, np.ndarray] = {}
    if base.encoder is not None and base.index is not None:
        rows = np.arange(len(base.table))
        present = np.isin(rows, base.index.rows)
        if present.any():
            kept = rows[present]
            for row, vec in zip(kept, base.index.vectors(kept), strict=True):
                vectors.setdefault(base.table.names[int(row)], vec)

    def vector_of(names: list[str]) -> np.ndarray:
        missing = [n for n in dict.fromkeys(names) if n not in vectors]
        if missing:
            assert base.encoder is not None
            for name, vec in zip(missing, base.encoder.encode(missing), strict=True):
                vectors[name] = vec
        return np.stack([vectors[n] for n in names]).astype(np.float32)

    preprocessor = base.preprocessor
    texts = {d.pmid: d.text for d in docs}
    order = sorted(range(len(docs)), key=lambda i: docs[i].pmid)
    fold_of = {docs[i].pmid: n % max(1, folds) for n, i in enumerate(order)}
    out: list[RerankExample] = []
    n_mentions = 0
    for fold in range(max(1, folds)):
        held = [d for d in docs if fold_of[d.pmid] == fold]
        rest = [d for d in docs if fold_of[d.pmid] != fold] if folds > 1 else []
        pairs = training_pairs(rest, dictionary, preprocessor, mention_types)
        counts = annotation_counts(rest, dictionary, mention_types)
        for cid, n in (curated_counts or {}).items():
            counts[cid] = counts.get(cid, 0) + n
        linker = _fold_linker(base, dictionary, pairs, counts, vector_of)
        mentions = build_eval_set(held, dictionary, preprocessor, mention_types)
        for example in examples_for(linker, mentions, texts, top_k, window_words, rejections, n_mentions):
            example.fold = fold
            out.append(example)
        n_mentions += len(mentions)
        if on_fold is not None:
            on_fold(fold + 1, max(1, folds))
    return out
