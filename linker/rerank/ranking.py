"""One mention's final ranking from the re-ranker's scores of its parts: the re-ranked candidates in the order of
their score r (or the retriever's, for a re-ranker that keeps it), the rest below them, and the types behind each
place (:class:`linker.rerank.results.LinkedMention`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from linker.dictionary import NameTable
from linker.rerank.reranker import Reranker, ScoredCandidates
from linker.rerank.results import RANKED_BY_LATTE, RANKED_BY_RETRIEVER, CandidateTyping, LinkedMention
from linker.retrieval import Candidate

__all__ = ["homonyms", "reranked_mention"]


def homonyms(table: NameTable, candidate: Candidate) -> tuple[str, ...]:
    """The other concepts that own the candidate's matched name."""
    return tuple(cid for cid in table.concepts_named(candidate.name) if cid != candidate.concept_id)


def reranked_mention(
    reranker: Reranker,
    parts: Sequence[Sequence[Candidate]],
    scored: Iterator[ScoredCandidates],
    table: NameTable,
) -> LinkedMention:
    """The mention whose retriever lists per part are ``parts``, ranked by the next ``len(parts)`` of ``scored``
    (each scores its part's first ``settings.top_k`` candidates)."""
    # A re-ranker whose held-out check kept the retriever's order serves its types only: the retriever's
    # order and scores S stand (its r would be 2/rank, bars that say nothing), and the ranking is the retriever's.
    keep = reranker.keeps_retriever_order
    candidates: list[Candidate] = []
    typing: list[CandidateTyping] = []
    head = None
    for part in parts:
        s = next(scored)
        head = head or s
        n = len(s.score)
        order = list(range(n)) if keep else sorted(range(n), key=lambda i: -float(s.score[i]))
        for i in order:
            c = part[i]
            candidates.append(c if keep else c._replace(score=float(s.score[i])))
            typing.append(CandidateTyping(
                latent_type=int(s.latent_type[i]), latent_probability=float(s.latent_probability[i]),
                known_types=reranker.concept_types.get(c.concept_id, ()),
                type_conflict=reranker.type_conflict(s.mention_known_types, c.concept_id),
                match=float(s.match[i]), type_similarity=float(s.type_similarity[i]),
                retriever_score=float(c.score), retriever_rank=i + 1))
        floor = min((float(x) for x in s.score), default=0.0)
        for i, c in enumerate(part[n:], start=n):
            # Below every re-ranked candidate, in the retriever's order.
            candidates.append(c if keep else c._replace(score=floor - (i - n + 1) * 1e-3))
            typing.append(CandidateTyping(-1, 0.0, reranker.concept_types.get(c.concept_id, ()),
                                          reranker.type_conflict(s.mention_known_types, c.concept_id),
                                          float("nan"), float("nan"), float(c.score), i + 1))
    return LinkedMention(
        candidates, RANKED_BY_RETRIEVER if keep else RANKED_BY_LATTE, [homonyms(table, c) for c in candidates], typing,
        head.mention_latent_type if head else None, head.mention_latent_probability if head else None,
        head.mention_known_types if head else [])
