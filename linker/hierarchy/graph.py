"""A dictionary's names and hierarchy as HiPrBERT reads them, and the pair distances it trains on.

HiPrBERT (Cai et al., 2023, section 3.3) orders pairs of terms from one hierarchy by

    0  synonyms (names of the same concept)
    1  siblings (the two concepts share a parent)
    2  parent and child
    3  anything else

Only the order matters to the loss. A pair that is both (a DAG where a child also shares a parent with its
own parent) takes the closer relation. Every distance is read from a concept's parents and children
directly, never by walking the graph, so a cycle in bad data (a is a parent of b and b of a) cannot hang it:
such a pair is simply parent-child both ways.

A :class:`HierarchySource` holds one dictionary (or a corpus's mention->concept pairs, which have synonyms
but no hierarchy). Names from two sources are never compared: concept ids of two dictionaries do not say
whether two names are the same disease, so the sampler builds every batch from one source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from linker.data import ConceptRecord
from linker.text import TextConfig, normalize

__all__ = ["SYNONYM", "SIBLING", "PARENT_CHILD", "OTHER", "DISTANCE_NAMES", "HierarchySource", "held_out",
           "NoHierarchyError"]

SYNONYM, SIBLING, PARENT_CHILD, OTHER = 0, 1, 2, 3
DISTANCE_NAMES = {SYNONYM: "synonym", SIBLING: "sibling", PARENT_CHILD: "parent-child", OTHER: "other"}


class NoHierarchyError(ValueError):
    """A dictionary offered for hierarchy pre-training has no parent links."""

    @classmethod
    def for_dictionary(cls, name: str, detail: str) -> NoHierarchyError:
        """The refusal every caller gives, naming the dictionary; ``detail`` says what was looked at."""
        return cls(f"dictionary {name!r} has no hierarchy ({detail}): hierarchy pre-training needs one; train it "
                   "with BioSyn's synonym pre-training instead")


def held_out(concept_id: str, share: float, seed: int = 13) -> bool:
    """Whether a concept is held out of training: a hash of its id, so that training and the benchmark agree
    without sharing state, and a concept stays held out whatever else the dictionary holds."""
    if share <= 0:
        return False
    digest = hashlib.sha1(f"{seed}:{concept_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


@dataclass
class HierarchySource:
    """Names per concept (normalised, distinct, preferred first) and parent links within one source.

    ``parents`` may name concepts that have no names here (a held-out parent keeps its children siblings).
    ``hierarchical`` is False for a synonyms-only source (corpus mention->concept pairs).
    """

    name: str
    names: dict[str, list[str]]
    parents: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hierarchical: bool = True
    children: dict[str, tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Self-loops are dropped here; cycles need no care (distances never walk the graph).
        self.parents = {c: tuple(p for p in dict.fromkeys(ps) if p != c) for c, ps in self.parents.items()}
        self.parents = {c: ps for c, ps in self.parents.items() if ps}
        kids: dict[str, list[str]] = {}
        for child, parents in self.parents.items():
            for parent in parents:
                kids.setdefault(parent, []).append(child)
        self.children = {p: tuple(cs) for p, cs in kids.items()}

    # --- construction ------------------------------------------------------------------------------

    @classmethod
    def from_records(
        cls, name: str, records: Iterable[ConceptRecord], cfg: TextConfig | None = None,
        require_hierarchy: bool = True,
    ) -> HierarchySource:
        """A dictionary as a source; ``require_hierarchy`` refuses one without any parent link."""
        cfg = cfg or TextConfig()
        names: dict[str, list[str]] = {}
        parents: dict[str, tuple[str, ...]] = {}
        for rec in records:
            if rec.obsolete:
                continue
            distinct = list(dict.fromkeys(n for n in (normalize(raw, cfg) for raw in rec.all_names()) if n))
            if distinct:
                names[rec.concept_id] = distinct
            if rec.parents:
                parents[rec.concept_id] = rec.parents
        source = cls(name, names, parents)
        if require_hierarchy and not source.edge_count:
            raise NoHierarchyError.for_dictionary(name, f"no parent links among its {len(names)} concepts")
        return source

    @classmethod
    def synonyms_only(cls, name: str, pairs: Iterable[tuple[str, str]], cfg: TextConfig | None = None) -> HierarchySource:
        """(mention text, concept id) pairs as a source without hierarchy; concepts with one name are kept
        (they are negatives for the others)."""
        cfg = cfg or TextConfig()
        names: dict[str, dict[str, None]] = {}
        for text, cid in pairs:
            norm = normalize(text, cfg)
            if norm and cid:
                names.setdefault(cid, {})[norm] = None
        return cls(name, {c: list(ns) for c, ns in names.items()}, {}, hierarchical=False)

    def add_names(self, pairs: Iterable[tuple[str, str]], resolve: Mapping[str, str] | None = None,
                  cfg: TextConfig | None = None) -> int:
        """Add (text, concept id) pairs (training mentions) as names of known concepts; ids are mapped through
        ``resolve`` (alt id -> primary) first. Returns how many new names were added."""
        cfg = cfg or TextConfig()
        added = 0
        for text, raw_id in pairs:
            cid = (resolve or {}).get(raw_id, raw_id)
            norm = normalize(text, cfg)
            if norm and cid in self.names and norm not in self.names[cid]:
                self.names[cid].append(norm)
                added += 1
        return added

    def without(self, concept_ids: Iterable[str]) -> HierarchySource:
        """A copy whose names omit these concepts (their parent links stay, so their children remain
        siblings)."""
        drop = set(concept_ids)
        return HierarchySource(self.name, {c: list(ns) for c, ns in self.names.items() if c not in drop},
                               dict(self.parents), self.hierarchical)

    def split(self, share: float, seed: int = 13) -> tuple[HierarchySource, list[str]]:
        """(the source without its held-out concepts, the held-out concept ids) per :func:`held_out`."""
        out = [c for c in self.names if held_out(c, share, seed)]
        return self.without(out), out

    # --- reading -----------------------------------------------------------------------------------

    @property
    def edge_count(self) -> int:
        return sum(len(p) for p in self.parents.values())

    @property
    def name_count(self) -> int:
        return sum(len(n) for n in self.names.values())

    def siblings(self, concept_id: str) -> list[str]:
        """Concepts sharing a parent with this one (itself excluded), in a stable order."""
        out: dict[str, None] = {}
        for parent in self.parents.get(concept_id, ()):
            for child in self.children.get(parent, ()):
                if child != concept_id:
                    out[child] = None
        return list(out)

    def relatives(self, concept_id: str) -> list[str]:
        """Its parents and children (distance 2)."""
        return list(dict.fromkeys((*self.parents.get(concept_id, ()), *self.children.get(concept_id, ()))))

    def distance(self, a: str, b: str) -> int:
        """The HiPrBERT distance between two concepts of this source (0 when ``a == b``)."""
        if a == b:
            return SYNONYM
        if not self.hierarchical:
            return OTHER
        parents_a, parents_b = self.parents.get(a, ()), self.parents.get(b, ())
        if parents_a and parents_b and not set(parents_a).isdisjoint(parents_b):
            return SIBLING
        if b in parents_a or a in parents_b:
            return PARENT_CHILD
        return OTHER

    def distance_matrix(self, concept_ids: Sequence[str]) -> np.ndarray:
        """[n, n] int64 distances between the concepts of a batch's names (diagonal 0)."""
        n = len(concept_ids)
        out = np.full((n, n), OTHER, dtype=np.int64)
        cache: dict[tuple[str, str], int] = {}
        for i in range(n):
            for j in range(i, n):
                a, b = concept_ids[i], concept_ids[j]
                key = (a, b) if a <= b else (b, a)
                d = cache.get(key)
                if d is None:
                    d = cache[key] = self.distance(a, b)
                out[i, j] = out[j, i] = d
        return out
