"""POST /api/link: mentions of a text (given spans, or found by the dictionary matcher) with ranked candidates.

The linker is the dictionary's active index with curator synonyms kept in step (the one door,
webapp.training.registry.get_active_linker, that the curation panel and workers use too); candidates are
enriched with the preferred names and known types of the index's dictionary version. Each mention is linked with the whole
text as context, exactly as ``python -m linker link`` links a PubTator document's mentions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from linker.retrieval import Candidate
from webapp.corpus.detect import matcher_for_index
from webapp.training.registry import ActiveLinker
from webapp.vocab.models import Concept

__all__ = ["GivenSpan", "link_text"]


@dataclass(frozen=True)
class GivenSpan:
    start: int
    end: int
    mention_type: str = ""


def link_text(active: ActiveLinker, text: str, spans: Sequence[GivenSpan] | None, k: int) -> dict[str, Any]:
    """The response body of POST /api/link (see LinkResponseSerializer)."""
    if spans is None:
        linker = active.linker
        # Raw names, not the normalised ones: only they tell an acronym ("CADASIL") from a word.
        matcher = matcher_for_index(active.index_version_id, linker.table.raw_names, linker.table.cfg)
        found = [(s.start, s.end, "", "detected") for s in matcher.find(text)]
    else:
        found = [(s.start, s.end, s.mention_type, "given") for s in spans]
    ranked = active.linker.link_mentions([text[s:e] for s, e, _, _ in found], document_text=text, k=k) if found else []
    concepts = _concepts(active, {c.concept_id for cands in ranked for c in cands})
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
                "candidates": _candidates(active, candidates, concepts),
            }
            for (start, end, mention_type, source), candidates in zip(found, ranked, strict=True)
        ],
    }


def _concepts(active: ActiveLinker, ids: set[str]) -> dict[str, tuple[str, list[str]]]:
    """concept id -> (preferred name, known type labels) in the index's dictionary version."""
    rows = Concept.objects.filter(version=active.dictionary_version, concept_id__in=ids).prefetch_related("known_types")
    return {c.concept_id: (c.preferred_name, sorted(t.label for t in c.known_types.all())) for c in rows}


def _candidates(active: ActiveLinker, candidates: list[Candidate], concepts: dict[str, tuple[str, list[str]]]) -> list[dict[str, Any]]:
    out = []
    rank_in_part: dict[int, int] = {}
    for c in candidates:
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
            }
        )
    return out


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
