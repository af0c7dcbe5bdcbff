"""Near misses: how each candidate sits in the dictionary's hierarchy relative to the top-ranked one.

When the top two candidates are siblings or parent and child, the linker is choosing between neighbours, and
that is when a curator should look twice. The relations follow HiPrBERT's distances (0 synonym, 1 sibling,
2 parent-child, 3 other), closest first when two apply: a sibling that is also a parent (a DAG) is called a
sibling.

Pure: a mapping of concept pk -> parent pks in, labels out; no database. Only the direct parents of the two
concepts are looked at, never the graph above them, so a cycle in bad data (a -> b -> a) cannot loop: there
``a`` is both a parent and a child of ``b``, and is called its parent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


class Relation(enum.Enum):
    """The candidate's relation to the top candidate."""

    SAME = "same"
    SIBLING = "sibling"
    PARENT = "parent"  # the candidate is a parent of the top candidate
    CHILD = "child"  # the candidate is a child of the top candidate
    OTHER = "other"


@dataclass(frozen=True)
class Kinship:
    relation: Relation
    via: tuple[int, ...] = ()  # siblings: the parents they share, in the top candidate's parent order


def kinship(candidate: int, top: int, parents: Mapping[int, Sequence[int]]) -> Kinship:
    """How ``candidate`` relates to ``top``, from the direct parents of both (a missing key: no parents)."""
    if candidate == top:
        return Kinship(Relation.SAME)
    candidate_parents = parents.get(candidate, ())
    top_parents = parents.get(top, ())
    shared = tuple(dict.fromkeys(p for p in top_parents if p in candidate_parents))
    if shared:
        return Kinship(Relation.SIBLING, shared)
    if candidate in top_parents:
        return Kinship(Relation.PARENT)
    if top in candidate_parents:
        return Kinship(Relation.CHILD)
    return Kinship(Relation.OTHER)


@dataclass(frozen=True)
class NearMiss:
    """What the panel shows on a candidate after the first: a short tag and its explanation."""

    relation: Relation
    label: str  # "sibling of #1"
    title: str  # the sentence behind the tag, for the title attribute


_LABELS = {Relation.SIBLING: "sibling of", Relation.PARENT: "parent of", Relation.CHILD: "child of"}


def near_miss(kin: Kinship, top_number: int, top_name: str, name: Callable[[int], str], scope: str = "") -> NearMiss | None:
    """The tag for a candidate of relation ``kin`` to candidate ``top_number`` (None: nothing worth showing).

    ``name`` gives the preferred name of a concept pk (the shared parents of siblings); ``scope`` says where
    ``#top_number`` counts, for the title (" for part 2" in a composite mention).
    """
    if kin.relation not in _LABELS:
        return None
    label = f"{_LABELS[kin.relation]} #{top_number}"
    top = f"#{top_number}{scope} ({top_name})"
    if kin.relation is Relation.SIBLING:
        title = f"Shares a parent ({_names(kin.via, name)}) with {top}: a near miss, check which one the text means."
    elif kin.relation is Relation.PARENT:
        title = f"A parent of {top}: broader than the top candidate."
    else:
        title = f"A child of {top}: narrower than the top candidate."
    return NearMiss(kin.relation, label, title)


def top_two_notice(kin: Kinship, first: int, second: int, first_parent_count: int, name: Callable[[int], str]) -> str:
    """One sentence on the top two candidates (numbered ``first`` and ``second``) when they are neighbours, else ""."""
    if kin.relation is Relation.SIBLING:
        return f"#{first} and #{second} are siblings under {_names(kin.via, name)}."
    if kin.relation is Relation.PARENT:
        # "the parent" would mislead where #1 has several parents (MEDIC and HPO concepts often do).
        article = "the" if first_parent_count <= 1 else "a"
        return f"#{second} is {article} parent of #{first}."
    if kin.relation is Relation.CHILD:
        return f"#{second} is a child of #{first}."
    return ""


def _names(pks: Sequence[int], name: Callable[[int], str]) -> str:
    names = [name(pk) for pk in pks]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
