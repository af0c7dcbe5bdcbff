"""The candidate panel's data: one read-only function, :func:`panel`, over a live ranking or the stored suggestions.

The live ranking (read only: a POST stores it) is computed by
:func:`webapp.curation.services.suggestions.panel_ranking` and handed in; with a LATTE re-ranker each row
carries what the re-ranker says of it (:mod:`webapp.curation.panel_types`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from linker.calibration import mention_confidence
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.lineage import Lineage, candidate_lineage
from webapp.curation.models import Decision
from webapp.curation.near_miss import NearMiss, kinship, near_miss, top_two_notice
from webapp.curation.panel_types import CandidateTypes, MentionTypes, candidate_types, mention_types
from webapp.curation.services.suggestions import PanelRanking
from webapp.curation.teaching import lesson
from webapp.linking.versions import active_index
from webapp.projects.concept_filter import filter_for_collection, filter_for_document
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge, KnownType

STORED_CONFLICT = "Type conflict: flagged by the model when it made this suggestion."
# Other owners of a shared name listed by the panel; the rest are counted (a common name of a UMLS-size
# dictionary can belong to hundreds of concepts, and each listed one is fetched and rendered).
HOMONYMS_SHOWN = 5


@dataclass(frozen=True)
class CandidateRow:
    number: int  # 1-based across parts: the key that picks it
    part: int
    part_text: str
    rank: int  # within its part
    concept_id: str
    concept: Concept | None  # None: an id the dictionary version lacks
    matched: str  # the name that matched ("" where unknown)
    score: float
    bar: int  # 0..100, relative to the part's top score
    dense: float | None
    sparse: float | None
    known_types: list[KnownType]
    path: list[Concept]  # root first, the concept last; empty for a root
    more_paths: int
    parent: Concept | None
    is_current: bool  # the mention's current curator link
    is_gold: bool
    types: CandidateTypes  # the re-ranker's latent type and type conflict; homonyms of the matched name
    homonyms: list[tuple[str, Concept | None]]  # the other concepts owning the matched name (the first HOMONYMS_SHOWN)
    near_miss: NearMiss | None = None  # its place in the hierarchy relative to the top candidate of its part
    more_homonyms: int = 0  # how many more concepts own it
    path_cut: bool = False  # the path is deeper than the panel shows: its first node is not a root
    teaches: str = ""  # what linking it teaches (webapp.curation.teaching), in the panel's words
    parent_teaches: str = ""  # what linking its parent teaches

    @property
    def preferred_name(self) -> str:
        return self.concept.preferred_name if self.concept else self.concept_id

    @property
    def matched_is_preferred(self) -> bool:
        return not self.matched or self.matched == self.preferred_name


@dataclass(frozen=True)
class Panel:
    mention: Mention
    parts: list[str]  # one entry per part (the mention text for a simple mention)
    candidates: list[CandidateRow]
    model_version: str
    live: bool  # candidates come from the active linker (False: stored suggestions only)
    version: DictionaryVersion | None  # the dictionary version concepts are searched in
    current: Link | None  # latest curator link
    gold: list[Link]
    latest: Decision | None
    note: str = ""
    types: MentionTypes | None = None  # who ranked, the mention's predicted types (None: stored suggestions)
    near_miss_notes: list[str] = field(default_factory=list)  # per part: its top two are siblings or parent and child
    has_hierarchy: bool = False  # the dictionary version has hierarchy edges ("a root" means something)
    # The linker's calibrated probability that its top-1 (every part's) is right; None: an uncalibrated linker.
    confidence: float | None = None
    nil_threshold: float = 0.0  # below it the linker says "no concept fits" (0: it never does)
    concept_filter: str = ""  # the project's concept filter in words (webapp.projects.concept_filter); "": none
    teaching: str = ""  # what the decisions on this mention teach (accept, another link, a parent), in words

    @property
    def says_nil(self) -> bool:
        return self.confidence is not None and self.confidence < self.nil_threshold

    @property
    def confidence_level(self) -> str:
        """high / medium / low, for the badge's colour: at least 0.9, at least 0.5, below."""
        if self.confidence is None:
            return ""
        return "high" if self.confidence >= 0.9 else "medium" if self.confidence >= 0.5 else "low"

    @property
    def is_composite(self) -> bool:
        return len(self.parts) > 1


def search_version(collection: Collection) -> DictionaryVersion | None:
    """The dictionary version concept search looks in: the one the active index serves, else the latest."""
    dictionary = collection.dictionary
    if dictionary is None:
        return None
    active = active_index(dictionary.pk)
    return active.dictionary_version if active is not None else dictionary.latest_version()


def search_within(where: Collection | Document) -> frozenset[str] | None:
    """The concept ids concept search keeps for the mentions of a document (or of a collection): the concept filter
    of the projects covering it, else None (all)."""
    concept_filter = filter_for_document(where) if isinstance(where, Document) else filter_for_collection(where)
    return concept_filter.concept_ids if concept_filter is not None else None


def _safe(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


# (part, rank, concept id, matched name, score, dense, sparse, types)
_Candidate = tuple[int, int, str, str, float, float | None, float | None, CandidateTypes]


@dataclass(frozen=True)
class _Ranked:
    """The candidates the panel lists and where they come from: the live ranking or the stored suggestions."""

    candidates: list[_Candidate]
    by_cid: dict[str, Concept]  # the concepts of the candidates (and of their listed homonyms) the version has
    version: DictionaryVersion | None
    model_version: str
    live: bool
    parts: list[str]
    types: MentionTypes | None = None
    note: str = ""


def panel(mention: Mention, ranking: PanelRanking | None) -> Panel:
    """Everything the candidate panel shows for one mention (the mention comes with document__collection__dictionary).

    ``ranking`` is the active linker's live ranking (a decision stores it first, so the rank it records is the rank
    shown); None without an active index: the stored suggestions are shown. Every query here is a handful of rows by index.
    """
    parts = list(mention.part_texts) or [mention.text]
    links = list(mention.links.select_related("concept__version__dictionary", "created_by").order_by("part", "rank", "-created_at", "-id"))
    # The live ranking is filtered already; stored suggestions may predate the project's filter.
    concept_filter = ranking.concept_filter if ranking is not None else filter_for_document(mention.document)
    if concept_filter is not None:
        links = [link for link in links if link.origin != Link.Origin.MODEL or concept_filter.allows_id(link.concept_ref)]
    if ranking is not None:
        ranked = _live(ranking, parts)
    else:
        ranked = _stored(links, mention.document.collection.dictionary, parts)
    curated = sorted((link for link in links if link.origin == Link.Origin.CURATOR), key=lambda link: (link.created_at, link.pk))
    current = curated[-1] if curated else None
    gold = [link for link in links if link.origin == Link.Origin.GOLD]
    workspace = mention.document.collection.is_workspace
    whole_text_of_parts = not mention.part_texts and len(ranked.parts) > 1
    rows, notes = _candidate_rows(mention, ranked, current, gold, workspace, whole_text_of_parts)
    latest = Decision.objects.filter(mention=mention).select_related("user", "concept").order_by("-created_at", "-id").first()
    # A candidate with a path proves a hierarchy; only when none has one is the version asked (one indexed row).
    has_hierarchy = any(row.path for row in rows) or (
        ranked.version is not None and HierarchyEdge.objects.filter(version=ranked.version).exists())
    confidence, nil_threshold = _confidence(ranking, links)
    return Panel(mention, ranked.parts, rows, ranked.model_version, ranked.live, ranked.version, current, gold, latest,
                 ranked.note, ranked.types, notes, has_hierarchy, confidence, nil_threshold,
                 concept_filter.describe() if concept_filter is not None else "",
                 _teaching(rows, workspace, whole_text_of_parts))


def _live(ranking: PanelRanking, parts: list[str]) -> _Ranked:
    """The active linker's ranking, with what its re-ranker says of each candidate and of the mention."""
    version = ranking.active.dictionary_version
    linker = ranking.active.linker
    per_candidate = candidate_types(linker, ranking.linked)
    wanted = {c.concept_id for c in ranking.candidates} | {h for t in per_candidate for h in t.homonyms[:HOMONYMS_SHOWN]}
    by_cid = _concepts(version, wanted)
    seen_rank: dict[int, int] = {}
    candidates: list[_Candidate] = []
    for c, typed in zip(ranking.candidates, per_candidate, strict=True):
        seen_rank[c.part] = seen_rank.get(c.part, 0) + 1
        candidates.append((c.part, seen_rank[c.part], c.concept_id, c.name, float(c.score), _safe(c.dense), _safe(c.sparse), typed))
    types = mention_types(linker, ranking.linked)
    # The linker may split a composite mention the source did not: the parts are then named as it queried them.
    return _Ranked(candidates, by_cid, version, ranking.active.label, True,
                   ranking.part_queries if ranking.part_queries is not None else parts, types)


def _stored(links: list[Link], dictionary: Dictionary | None, parts: list[str]) -> _Ranked:
    """The model's suggestions stored on the mention, shown when no index is active."""
    model_links = [link for link in links if link.origin == Link.Origin.MODEL]
    candidates: list[_Candidate] = [
        (s.part, s.rank or i + 1, s.concept_ref, "", s.score or 0.0, None, None, CandidateTypes(conflict=STORED_CONFLICT if s.type_conflict else ""))
        for i, s in enumerate(model_links)
    ]
    note = (
        "No active index for this dictionary: showing stored suggestions." if model_links
        else "No active index for this dictionary and no stored suggestions: search for a concept (/)."
    )
    return _Ranked(candidates, {s.concept_ref: s.concept for s in model_links if s.concept is not None},
                   dictionary.latest_version() if dictionary is not None else None,
                   model_links[0].model_version if model_links else "", False, parts, note=note)


def _candidate_rows(mention: Mention, ranked: _Ranked, current: Link | None, gold: list[Link], workspace: bool,
                    whole_text_of_parts: bool) -> tuple[list[CandidateRow], list[str]]:
    """One row per candidate (its types, path, near miss, what linking it teaches), and the near-miss note of each
    part whose top two are neighbours."""
    candidates, by_cid, parts = ranked.candidates, ranked.by_cid, ranked.parts
    shown_pks = [by_cid[c[2]].pk for c in candidates if c[2] in by_cid]
    known = _known_types(shown_pks)
    ancestry = candidate_lineage(shown_pks)
    gold_pks = {g.concept_id for g in gold if g.concept_id}
    top_by_part = {c[0]: c[4] for c in candidates if c[1] == 1}
    near_misses, notes = _near_misses(candidates, by_cid, ancestry)
    rows = []
    for number, (part, rank, cid, matched, score, dense, sparse, typed) in enumerate(candidates, start=1):
        concept = by_cid.get(cid)
        pk = concept.pk if concept is not None else None
        top = top_by_part.get(part) or 0.0
        ancestors, more = ancestry.paths.get(pk, ([], 0)) if pk else ([], 0)
        part_text = parts[part] if part < len(parts) else mention.text
        rows.append(
            CandidateRow(
                number=number, part=part, part_text=part_text, rank=rank,
                concept_id=cid, concept=concept, matched=matched, score=score,
                bar=max(2, min(100, round(100 * score / top))) if top > 0 else 0,
                dense=dense, sparse=sparse, known_types=known.get(pk, []) if pk else [],
                path=[*ancestors, concept] if ancestors and concept is not None else [], more_paths=more,
                parent=ancestors[-1] if ancestors else None,
                is_current=current is not None and current.concept_id is not None and current.concept_id == pk,
                is_gold=pk in gold_pks if pk else False,
                types=typed, homonyms=[(h, by_cid.get(h)) for h in typed.homonyms[:HOMONYMS_SHOWN]],
                more_homonyms=max(0, len(typed.homonyms) - HOMONYMS_SHOWN), near_miss=near_misses.get(number),
                path_cut=pk in ancestry.cut if pk else False,
                teaches=lesson(action=Decision.Action.RELINK, via=Decision.Via.CANDIDATE, text=part_text, concept=concept,
                               workspace=workspace, whole_text_of_parts=whole_text_of_parts).describe(),
                parent_teaches=lesson(action=Decision.Action.RELINK, via=Decision.Via.PARENT, text=part_text,
                                      concept=ancestors[-1] if ancestors else None).describe(),
            )
        )
    return rows, notes


def _teaching(rows: list[CandidateRow], workspace: bool, whole_text_of_parts: bool) -> str:
    """What deciding this mention teaches, for the line above the candidates: accepting the top candidate, linking
    another, linking a parent (webapp.curation.teaching decides; this only says it)."""
    if workspace:
        return "Decisions here teach nothing until adjudicated: an annotator's copy adds no name and no training pair."
    if whole_text_of_parts:
        return ("Linking teaches no name: the whole text of a composite mention names no single part "
                "(the decision is still training evidence). A parent (↑, p) teaches nothing.")
    parts = sorted({row.part for row in rows})
    tops = [next(row for row in rows if row.part == part) for part in parts]
    accept = "; ".join(f"“{row.part_text}” as a name of {row.preferred_name}" for row in tops if row.concept is not None)
    said = f"Accept teaches {accept}. " if accept else ""
    return (f"{said}Linking another candidate or a search result teaches the text as a name of that concept; "
            "a parent (↑, p) teaches nothing.")


def _confidence(ranking: PanelRanking | None, links: list[Link]) -> tuple[float | None, float]:
    """The top-1 confidence the live ranking gives (or the stored suggestions carry) and the NIL threshold."""
    if ranking is not None:
        calibration = ranking.active.linker.calibration
        return ranking.confidence, calibration.nil_threshold if calibration is not None else 0.0
    top = {link.part: link.confidence for link in links if link.origin == Link.Origin.MODEL and link.rank == 1}
    return mention_confidence([top.get(p) for p in range(max(top, default=-1) + 1)]), 0.0


def _near_misses(candidates: list[_Candidate], by_cid: dict[str, Concept], ancestry: Lineage) -> tuple[dict[int, NearMiss], list[str]]:
    """Per candidate number: its relation to the first candidate of its part; and a note per part whose top two are neighbours.

    Candidates are named by their place in their part ("#1" is the part's top), not by their key number: from
    the second part of a composite mention on, key numbers pass 9 and the panel shows none.
    The parents come from the lineage query the paths already made: no query here.
    """
    composite = len({c[0] for c in candidates}) > 1
    out: dict[int, NearMiss] = {}
    notes: list[str] = []
    tops: dict[int, Concept | None] = {}  # part -> the concept of its first candidate
    place: dict[int, int] = {}
    for number, (part, _rank, cid, *_rest) in enumerate(candidates, start=1):
        place[part] = place.get(part, 0) + 1
        concept = by_cid.get(cid)
        if place[part] == 1:
            tops[part] = concept
            continue
        top = tops[part]
        if concept is None or top is None:
            continue  # an id the dictionary version lacks has no place in its hierarchy
        kin = kinship(concept.pk, top.pk, ancestry.parents)
        label = near_miss(kin, 1, top.preferred_name, ancestry.name, f" for part {part + 1}" if composite else "")
        if label is None:
            continue
        out[number] = label
        if place[part] == 2:
            text = top_two_notice(kin, 1, 2, len(ancestry.parents.get(top.pk, ())), ancestry.name)
            notes.append(f"Part {part + 1}: {text}" if composite else text)
    return out, notes


def _concepts(version: DictionaryVersion, concept_ids: set[str]) -> dict[str, Concept]:
    if not concept_ids:
        return {}
    rows = Concept.objects.filter(version=version, concept_id__in=concept_ids).select_related("version__dictionary")
    return {c.concept_id: c for c in rows}


def _known_types(concept_pks_: list[int]) -> dict[int, list[KnownType]]:
    out: dict[int, list[KnownType]] = {}
    through = Concept.known_types.through.objects.filter(concept_id__in=concept_pks_).select_related("knowntype__vocabulary")
    for row in through.order_by("knowntype__label"):
        out.setdefault(row.concept_id, []).append(row.knowntype)
    return out
