"""The Linker: mention strings in, ranked concepts out, built from small parts.

    NameTable (names, ids)  +  Preprocessor (normalise, abbreviations, composites)
    +  SparseEncoder (char tf-idf)  +  a NameEncoder (transformer, BNE or DAN)  +  DenseIndex (faiss)  +  λ
    ->  HybridRetriever

One artifact folder holds everything (``save``/``load``; its layout in :mod:`linker.artifact`). Building the
search structures is :mod:`linker.build`'s; the re-ranked order, :mod:`linker.rerank.ranking`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from linker.artifact import ArtifactParts, read_artifact, write_artifact
from linker.build import BuildProgress, build_search
from linker.calibration import Calibration
from linker.config import LinkerConfig
from linker.data import ConceptRecord, PubTatorDocument
from linker.delta import Delta, DeltaRows, DeltaTable, DeltaVectors
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.transformer import TransformerEncoder
from linker.index import DenseIndex
from linker.memo import QueryMemo
from linker.overlap import beside
from linker.rerank.context import MentionContext, MentionSpan, mention_context
from linker.rerank.ranking import homonyms, reranked_mention
from linker.rerank.reranker import Reranker
from linker.rerank.results import RANKED_BY_LATTE, RANKED_BY_RETRIEVER, LinkedMention
from linker.retrieval import Candidate, FirstStage, HybridRetriever
from linker.sparse import SparseEncoder
from linker.text import Preprocessor

__all__ = ["Linker", "annotation_counts"]


def annotation_counts(
    docs: Iterable[PubTatorDocument], table: NameTable, mention_types: set[str] | None = None
) -> dict[str, int]:
    """How often each (primary) concept is annotated in ``docs``: the evidence behind the concept prior."""
    counts: dict[str, int] = {}
    for doc in docs:
        for m in doc.mentions:
            if mention_types is not None and m.mention_type not in mention_types:
                continue
            for cid in m.concept_ids:
                primary = table.resolve_id(cid)
                if primary:
                    counts[primary] = counts.get(primary, 0) + 1
    return counts


class Linker:
    def __init__(
        self,
        table: NameTable,
        sparse: SparseEncoder,
        encoder: NameEncoder | None,
        index: DenseIndex | None,
        config: LinkerConfig,
        metadata: dict[str, Any] | None = None,
        concept_prior: dict[str, float] | None = None,
        first_stage: FirstStage | None = None,
        delta: DeltaRows | None = None,
        memo: QueryMemo | None = None,
    ) -> None:
        self.table = table
        self.sparse = sparse
        self.encoder = encoder
        self.index = index
        self.config = config
        self.preprocessor = Preprocessor(config.text)
        self.metadata: dict[str, Any] = dict(metadata or {})
        if isinstance(encoder, TransformerEncoder) and config.quantize and not encoder.quantized:
            encoder.quantize()
        mode = config.retrieval.mode if encoder is not None else "sparse"
        self.first_stage = first_stage if encoder is not None else None
        self.retriever = HybridRetriever(table, sparse, encoder, index, replace(config.retrieval, mode=mode),
                                         concept_prior, self.first_stage, delta, memo if delta is not None else None)
        # What this linker's searches compute per query, for the delta views made of it (linker.memo).
        self.query_memo = memo if memo is not None else QueryMemo()
        self.reranker: Reranker | None = None
        self.reranker_problem: str | None = None  # why the artifact's re-ranker was refused, if it was
        self.calibration_problem: str | None = None  # why the artifact's calibration was set aside, if it was
        # P(top-1 right) and the NIL threshold, fitted after training (linker.calibration); None: uncalibrated.
        self.calibration: Calibration | None = None

    @property
    def concept_prior(self) -> dict[str, float]:
        return self.retriever.concept_prior

    def set_concept_prior(self, counts: dict[str, int]) -> None:
        """Concept prior from annotation counts (log(1 + n)); weighted by ``RetrievalConfig.prior_weight``."""
        import math

        self.retriever.concept_prior = {cid: math.log1p(n) for cid, n in counts.items() if n > 0}

    def remember_searches(self) -> Linker:
        """Keep this linker's own per-query vectors and top lists too (:mod:`linker.memo`, as its delta views do):
        for a served linker, whose weights never change while a corpus run meets the same mention texts in
        document after document. Not for a linker whose encoder is still being trained. Returns the linker."""
        self.retriever.memo = self.query_memo
        return self

    # --- names added and taken back over an immutable base ---------------------------------------------

    def with_delta(self, delta: Delta, vectors: DeltaVectors | None = None) -> Linker:
        """This linker's names with ``delta``'s added and taken back, ranked as a fresh build over those names would
        rank them (the tf-idf vectoriser fitted on this linker's names): see :mod:`linker.delta`. This linker is not
        changed; the one returned shares its indexes, encoders, re-ranker and calibration.

        ``vectors``: the delta names' vectors met before (kept by the caller between deltas of this linker): only
        the names it has not met are encoded."""
        if isinstance(self.table, DeltaTable):
            raise ValueError("a linker with a delta takes no other: ask the base linker")
        table = DeltaTable(self.table, delta)
        stage = self.first_stage
        rows = DeltaRows.of(table, self.sparse, self.encoder, self.index, stage.encoder if stage else None,
                            stage.index if stage else None, self.config.encode_batch_size, vectors or DeltaVectors())
        view = Linker(table, self.sparse, self.encoder, self.index, self.config, self.metadata, self.concept_prior,
                      stage, rows, self.query_memo)
        view.reranker, view.reranker_problem = self.reranker, self.reranker_problem
        view.calibration, view.calibration_problem = self.calibration, self.calibration_problem
        return view

    # --- construction --------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        dictionary: NameTable | Iterable[ConceptRecord],
        encoder: NameEncoder | None,
        config: LinkerConfig | None = None,
        metadata: dict[str, Any] | None = None,
        feature_cache: str | Path | None = None,
        first_stage_encoder: NameEncoder | None = None,
        progress: BuildProgress | None = None,
    ) -> Linker:
        """Fit tf-idf on the dictionary's names and encode them into a dense index (no encoder: sparse only).

        ``feature_cache``: a folder where the transformer's features are memoised (see
        :func:`linker.encoders.transformer.cached_features`); only the projection head then runs for names
        already seen by the same transformer.
        ``first_stage_encoder``: a fast encoder (BNE, DAN) indexed beside ``encoder`` and searched first (see
        ``RetrievalConfig.cascade``: with "exact" the transformer encodes only queries that are not a name).
        ``progress``: see :data:`linker.build.BuildProgress` (the feature cache path reports no per-name progress).
        The encoder computes where it is (:meth:`TransformerEncoder.place`, ``load_encoder(device=...)``); the
        metadata records that device (``encode_device``) and the names per forward pass (``encode_batch_size``).
        """
        config = config or LinkerConfig()
        table = dictionary if isinstance(dictionary, NameTable) else NameTable.from_records(dictionary, config.text)
        built = build_search(table, encoder, config, feature_cache, first_stage_encoder, progress)
        return cls(table, built.sparse, encoder, built.index, config, {**(metadata or {}), **built.metadata},
                   first_stage=built.first_stage)

    # --- linking -------------------------------------------------------------------------------------

    def queries_for(self, mentions: Sequence[str], document_text: str | None = None) -> list[list[str]]:
        """Normalised queries per mention: one per composite part, abbreviations expanded from the text."""
        abbreviations = self.preprocessor.abbreviations(document_text) if document_text else None
        return [self.preprocessor.mention_queries(m, abbreviations) or [self.preprocessor.normalize(m)]
                for m in mentions]

    def link_parts(
        self, mentions: Sequence[str], document_text: str | None = None, k: int = 20
    ) -> list[list[list[Candidate]]]:
        """mention -> composite part -> top-k candidates (a simple mention has one part)."""
        queries = self.queries_for(mentions, document_text)
        return self.link_queries(queries, k)

    def link_queries(self, queries: Sequence[Sequence[str]], k: int = 20) -> list[list[list[Candidate]]]:
        """Already normalised queries per mention (e.g. :class:`linker.protocol.EvalMention.queries`)."""
        flat = [q for parts in queries for q in parts]
        return self._per_mention(queries, self.retriever.retrieve(flat, k), renumber=True)

    @staticmethod
    def _per_mention(queries: Sequence[Sequence[str]], flat: list[Any], renumber: bool = False) -> list[list[Any]]:
        """A flat list over every mention's parts back into one list per mention; ``renumber``: each part's
        candidates get their part's number."""
        out: list[list[Any]] = []
        pos = 0
        for parts in queries:
            one = flat[pos : pos + len(parts)]
            out.append([[c._replace(part=p) for c in cands] for p, cands in enumerate(one)] if renumber else one)
            pos += len(parts)
        return out

    def link_mentions(
        self, mentions: Sequence[str], document_text: str | None = None, k: int = 20
    ) -> list[list[Candidate]]:
        """Top-k candidates per mention, best first.

        A composite mention ("breast and ovarian cancer") is split into parts, each ranked separately; its
        list holds the k candidates of part 0, then the k of part 1, ..., each tagged with ``Candidate.part``
        (so ``[c for c in cands if c.part == 0][0]`` is the best concept of the first part). For a simple
        mention every candidate has ``part == 0``. :meth:`link_parts` gives the nested form.
        """
        return [[c for part in parts for c in part] for parts in self.link_parts(mentions, document_text, k)]

    def link_in_context(
        self, mentions: Sequence[MentionSpan], document_text: str | None = None, k: int = 20, rerank: bool = True,
        queries: Sequence[Sequence[str]] | None = None,
    ) -> list[LinkedMention]:
        """Top-k candidates per mention (as :meth:`link_mentions`), re-ranked by the LATTE re-ranker when the
        linker has one (and ``rerank``), with the types behind the ranking and the homonyms of each name.

        The re-ranker reads each part's query and a window of ``document_text`` around the mention (its
        offsets when given, else its first occurrence) and re-orders the first ``settings.top_k`` candidates
        of each part; any further candidates keep the retriever's order below them.
        ``queries`` (normalised, one list of parts per mention) replaces the linker's own split, as the
        evaluation protocol does when it pairs composite parts with gold.
        """
        return self.link_documents([(mentions, document_text)], k, rerank,
                                   None if queries is None else [queries])[0]

    def link_documents(
        self, documents: Sequence[tuple[Sequence[MentionSpan], str | None]], k: int = 20, rerank: bool = True,
        queries: Sequence[Sequence[Sequence[str]]] | None = None,
    ) -> list[list[LinkedMention]]:
        """:meth:`link_in_context` over several documents (mentions, text) at once: the mentions of every document
        are searched together (one encoder batch), each re-ranked in its own document's text. ``queries``: one
        list per document, as :meth:`link_in_context`'s."""
        if queries is None:
            queries = [self.queries_for([m.text for m in mentions], text) for mentions, text in documents]
        reranker = self.reranker if rerank else None
        contexts: list[MentionContext] = []
        warming: Future[object] | None = None
        if reranker is not None:
            contexts = [mention_context(m, text, q, reranker.settings.window_words)
                        for (mentions, text), doc_queries in zip(documents, queries, strict=True)
                        for m, qs in zip(mentions, doc_queries, strict=True) for q in qs]
            # The mentions' transformer pass needs no candidate: on a second core while the retriever searches
            # (linker.overlap; inline where torch has several threads).
            warming = beside(reranker.states.mentions, contexts)
        parts = self.link_queries([qs for doc_queries in queries for qs in doc_queries], k)
        scored = None
        if reranker is not None:
            if warming is not None:
                warming.result()  # the states are cached now (and an error in encoding them is raised here)
            top = reranker.settings.top_k
            lists = [part[:top] for mention_parts in parts for part in mention_parts]
            scored = iter(reranker.score(contexts, lists, self.table, self.concept_prior,
                                         self.config.retrieval.dense_scale))
        flat: list[LinkedMention] = []
        for mention_parts in parts:
            if scored is None or reranker is None:
                cands = [c for part in mention_parts for c in part]
                flat.append(LinkedMention(cands, RANKED_BY_RETRIEVER, [homonyms(self.table, c) for c in cands]))
            else:
                flat.append(reranked_mention(reranker, mention_parts, scored, self.table))
        out: list[list[LinkedMention]] = []
        pos = 0
        for mentions, _ in documents:
            out.append(flat[pos : pos + len(mentions)])
            pos += len(mentions)
        return out

    def ranked_as_served(
        self, mentions: Sequence[MentionSpan], document_text: str | None, k: int = 20,
        queries: Sequence[Sequence[str]] | None = None,
    ) -> list[list[list[Candidate]]]:
        """Each mention's candidates per part (its ``queries``; default: the linker's own) ranked and scored as the
        panel serves them: in their document by the re-ranker where the linker has one, else by the retriever.

        A calibration is fitted on the scores of the top candidates, and the re-ranker's r is on another scale
        than the retriever's S (about 2 against 20 at rank 1): every example of one calibration must be scored
        this one way."""
        if queries is None:
            queries = self.queries_for([m.text for m in mentions], document_text)
        if self.reranker is None:
            return self.link_queries(queries, k)
        linked = self.link_in_context(mentions, document_text, k, queries=queries)
        return [one.by_part(len(qs)) for qs, one in zip(queries, linked, strict=True)]

    def confidences(
        self, queries: Sequence[Sequence[str]], ranked: Sequence[Sequence[Sequence[Candidate]]]
    ) -> list[float | None]:
        """Each mention's calibrated probability that its top-1 (every part's) is right, from its normalised
        queries and ranked candidates per part; None for each when the linker has no calibration."""
        if self.calibration is None:
            return [None] * len(queries)
        calibration = self.calibration
        return [calibration.confidence(list(zip(qs, parts, strict=False)), self.preprocessor.normalize)
                for qs, parts in zip(queries, ranked, strict=True)]

    @property
    def sparse_weight(self) -> float:
        return self.config.retrieval.sparse_weight

    # --- persistence ---------------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        write_artifact(folder, ArtifactParts(
            self.table, self.sparse, self.encoder, self.index, self.config, self.metadata, self.concept_prior,
            self.first_stage, self.calibration, self.reranker))

    @classmethod
    def load(
        cls, folder: str | Path, quantize: bool | None = None, strict_rerank: bool = False,
        device: torch.device | str | None = None,
    ) -> Linker:
        """Load an artifact. A ``rerank/`` folder that does not fit this linker is refused: the linker ranks
        by the retriever and ``reranker_problem`` says why (``strict_rerank``: raise
        :class:`linker.rerank.reranker.RerankerError`).
        ``device``: where the transformer encodes queries (None: the CPU; batch jobs pass
        :func:`linker.device.choose_device`); a quantised artifact stays on the CPU, and so do BNE and DAN."""
        parts = read_artifact(folder, quantize, strict_rerank, device)
        linker = cls(parts.table, parts.sparse, parts.encoder, parts.index, parts.config, parts.metadata, parts.prior,
                     parts.first_stage)
        linker.calibration = parts.calibration
        linker.reranker, linker.reranker_problem = parts.reranker, parts.reranker_problem
        linker._check_calibration()
        return linker

    def _check_calibration(self) -> None:
        """Set aside a calibration fitted on other scores than this linker serves: the retriever's S and the
        re-ranker's r are on different scales. One fitted before the scorer was recorded is kept, except over a
        re-ranker that keeps the retriever's order: that one served r = 2/rank then and serves S now."""
        calibration = self.calibration
        if calibration is None or self.reranker is None:
            return
        if calibration.scored_by == self.ranked_by or (not calibration.scored_by and not self.reranker.keeps_retriever_order):
            return
        fitted = calibration.scored_by or "the re-ranker's 2/rank"
        self.calibration_problem = (f"the calibration was fitted on {fitted} scores and this linker serves the "
                                    f"{self.ranked_by}'s: calibrate it again (python -m linker calibrate, or a new run)")
        self.calibration = None

    @property
    def ranked_by(self) -> str:
        """Who orders the candidates this linker serves: the re-ranker, unless it has none or keeps the retriever's
        order (it then adds types only)."""
        return RANKED_BY_LATTE if self.reranker is not None and not self.reranker.keeps_retriever_order else RANKED_BY_RETRIEVER

