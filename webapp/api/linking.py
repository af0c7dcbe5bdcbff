"""POST /api/link: mentions of a text (given spans, or found by the dictionary matcher) with ranked candidates.

The linker is the dictionary's active index with curator synonyms kept in step (the one door,
webapp.linking.registry.get_active_linker, that the curation panel and workers use too); candidates are
enriched with the preferred names and known types of the index's dictionary version. Each mention is linked in
the whole text (:meth:`linker.linker.Linker.link_in_context`), exactly as the candidate panel and
``python -m linker link`` link a document's mentions: with a LATTE re-ranker the order and scores are the
re-ranker's, and each mention says who ranked it, its predicted known types and latent type, and each candidate
its latent type, whether its known types conflict with the mention's, and the concepts sharing its matched name.
A calibrated index adds each mention's top-1 confidence and whether it says that no concept fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from linker.rerank import MentionSpan
from linker.rerank.results import LinkedMention
from webapp.corpus.detect import matcher_for_index
from webapp.curation.panel_types import latent_summary
from webapp.linking.registry import ActiveLinker
from webapp.vocab.models import Concept

if TYPE_CHECKING:  # heavy (torch, faiss): imported where the work runs, not when Django loads (issue #45)
    from linker.linker import Linker

__all__ = ["GivenSpan", "link_text"]


@dataclass(frozen=True)
class GivenSpan:
    start: int
    end: int
    mention_type: str = ""


def link_text(active: ActiveLinker, text: str, spans: Sequence[GivenSpan] | None, k: int, types: bool = True) -> dict[str, Any]:
    """The response body of POST /api/link (see webapp.api.link_serializers.LinkResponseSerializer).
    ``types=False`` skips the re-ranker's pass where it only types (it kept the retriever's order): the ranking is
    the same, the types are left out; a re-ranker that re-orders still ranks (and types)."""
    linker = active.linker
    if spans is None:
        # Raw names, not the normalised ones: only they tell an acronym ("CADASIL") from a word.
        matcher = matcher_for_index(active.index_version_id, linker.table.raw_names, linker.table.cfg)
        found = [(s.start, s.end, "", "detected") for s in matcher.find(text)]
    else:
        found = [(s.start, s.end, s.mention_type, "given") for s in spans]
    mentions = [MentionSpan(text[s:e], s, e) for s, e, _, _ in found]
    queries = linker.queries_for([m.text for m in mentions], text)
    rerank = types or (linker.reranker is not None and not linker.reranker.keeps_retriever_order)
    linked = linker.link_in_context(mentions, text, k, rerank=rerank, queries=queries) if found else []
    confidences = linker.confidences(queries, [one.by_part(len(qs)) for qs, one in zip(queries, linked, strict=True)])
    concepts = _concepts(active, {c.concept_id for one in linked for c in one.candidates})
    version = active.dictionary_version
    return {
        "dictionary": version.dictionary.slug,
        "release": version.release,
        "model_version": active.label,
        "index_version": active.index_version_id,
        "mentions": [
            {
                "start": start,
                "end": end,
                "text": text[start:end],
                "mention_type": mention_type,
                "source": source,
                "ranked_by": one.ranked_by,
                "predicted_types": [{"type": label, "probability": round(p, 4)} for label, p in one.mention_known_types],
                "latent_type": _latent(linker, one.mention_latent_type, one.mention_latent_probability),
                **_confidence(linker, confidence),
                "candidates": _candidates(active, one, concepts),
            }
            for (start, end, mention_type, source), one, confidence in zip(found, linked, confidences, strict=True)
        ],
    }


def _latent(linker: Linker, index: int | None, probability: float | None) -> dict[str, Any] | None:
    """A latent type as the API gives it: its index, the dictionary names most typical of it, the probability."""
    summary = latent_summary(linker, index)
    if summary is None or probability is None:
        return None
    return {"index": summary.index, "label": summary.label, "typical_names": list(summary.typical_names),
            "probability": round(float(probability), 4)}


def _confidence(linker: Linker, confidence: float | None) -> dict[str, Any]:
    if confidence is None or linker.calibration is None:
        return {"confidence": None, "nil": None}
    return {"confidence": round(confidence, 4), "nil": linker.calibration.says_nil(confidence)}


def _concepts(active: ActiveLinker, ids: set[str]) -> dict[str, tuple[str, list[str]]]:
    """concept id -> (preferred name, known type labels) in the index's dictionary version."""
    rows = Concept.objects.filter(version=active.dictionary_version, concept_id__in=ids).prefetch_related("known_types")
    return {c.concept_id: (c.preferred_name, sorted(t.label for t in c.known_types.all())) for c in rows}


def _candidates(active: ActiveLinker, linked: LinkedMention, concepts: dict[str, tuple[str, list[str]]]) -> list[dict[str, Any]]:
    out = []
    rank_in_part: dict[int, int] = {}
    typing = linked.typing or [None] * len(linked.candidates)
    for c, typed, homonyms in zip(linked.candidates, typing, linked.homonyms, strict=True):
        rank_in_part[c.part] = rank_in_part.get(c.part, 0) + 1
        preferred, types = concepts.get(c.concept_id) or (active.linker.table.preferred_names.get(c.concept_id, ""), [])
        out.append(
            {
                "rank": rank_in_part[c.part],
                "part": c.part,
                "concept_id": c.concept_id,
                "preferred_name": preferred,
                "matched_name": c.name,
                "score": _finite(c.score) or 0.0,
                "dense": _finite(c.dense),  # NaN in sparse-only mode: JSON has no NaN, so null
                "sparse": _finite(c.sparse),
                "known_types": types,
                "latent_type": _latent(active.linker, typed.latent_type, typed.latent_probability) if typed else None,
                "type_conflict": bool(typed.type_conflict) if typed else False,
                "homonyms": list(homonyms),
            }
        )
    return out


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
