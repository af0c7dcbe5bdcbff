"""Where a linker's errors are: per mention part, whether its string was seen in training, where gold ranks, and
how gold stands to the top-1 in the dictionary's hierarchy.

Three questions decide what could still be won, and by what:

- a part whose normalised string is a training mention's ("seen") is mostly decided by what the annotators chose
  for that string, and a re-ranker can only follow or overrule them;
- gold outside the top k is out of any re-ranker's reach;
- gold that is the top-1's parent, child or sibling is a choice of specificity, not a spelling.

:func:`part_outcomes` labels each part; :func:`summarize` counts them. ``parents`` maps a concept id to its
parents' ids (any hierarchy; cycles are walked once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

__all__ = ["RELATIONS", "PartOutcome", "hierarchy_relation", "part_outcomes", "summarize"]

# How gold stands to a wrong top-1, closest first ("unrelated": none of these; "no hierarchy": nothing to say).
RELATIONS = ("parent", "ancestor", "child", "descendant", "sibling", "unrelated", "no hierarchy")


@dataclass(frozen=True)
class PartOutcome:
    query: str
    seen: bool  # the normalised query is one of the training mentions'
    gold_rank: int | None  # 1-based rank of the first gold candidate among those ranked; None: not among them
    relation: str  # "right" at rank 1, else one of RELATIONS for gold against the top-1

    @property
    def right(self) -> bool:
        return self.gold_rank == 1


def _ancestors(concept: str, parents: Mapping[str, Set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(parents.get(concept, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(parents.get(node, ()))
    seen.discard(concept)  # a cycle through the concept itself
    return seen


def hierarchy_relation(top: str, gold: Set[str], parents: Mapping[str, Set[str]]) -> str:
    """How the closest gold concept stands to a wrong ``top``: gold is its parent, ancestor, child, ..."""
    if not parents:
        return "no hierarchy"
    top_parents = set(parents.get(top, ()))
    if gold & top_parents:
        return "parent"
    if gold & _ancestors(top, parents):
        return "ancestor"
    if any(top in parents.get(g, ()) for g in gold):
        return "child"
    if any(top in _ancestors(g, parents) for g in gold):
        return "descendant"
    if any(top_parents & set(parents.get(g, ())) for g in gold):
        return "sibling"
    return "unrelated"


def part_outcomes(
    queries: Sequence[Sequence[str]],
    gold_parts: Sequence[Sequence[Set[str]]],
    ranked: Sequence[Sequence[Sequence[str]]],
    seen_queries: Set[str],
    parents: Mapping[str, Set[str]],
) -> list[PartOutcome]:
    """One outcome per mention part: ``queries``, ``gold_parts`` and ``ranked`` (concept ids, best first) are per
    mention, per part, as :func:`linker.evaluate.evaluate_linking` takes them."""
    out: list[PartOutcome] = []
    for mention_queries, mention_gold, mention_ranked in zip(queries, gold_parts, ranked, strict=True):
        for p, (query, gold) in enumerate(zip(mention_queries, mention_gold, strict=True)):
            ids = mention_ranked[p] if p < len(mention_ranked) else []
            rank = next((i + 1 for i, cid in enumerate(ids) if cid in gold), None)
            if rank == 1:
                relation = "right"
            elif not ids:
                relation = "unrelated"
            else:
                relation = hierarchy_relation(ids[0], gold, parents)
            out.append(PartOutcome(query, query in seen_queries, rank, relation))
    return out


def summarize(outcomes: Sequence[PartOutcome]) -> dict[str, object]:
    """Counts: right and wrong by seen/unseen string, wrong parts by gold's rank (2, 3-5, 6-k, absent) and by
    hierarchy relation, unseen strings only for the last two (seen ones are the annotators' call)."""
    def rank_bucket(rank: int | None) -> str:
        return "absent" if rank is None else "2" if rank == 2 else "3-5" if rank <= 5 else "6+"

    unseen_wrong = [o for o in outcomes if not o.seen and not o.right]
    relations = Counter(o.relation for o in unseen_wrong)
    ranks = Counter(rank_bucket(o.gold_rank) for o in unseen_wrong)
    return {
        "parts": len(outcomes),
        "seen": {"right": sum(o.seen and o.right for o in outcomes), "wrong": sum(o.seen and not o.right for o in outcomes)},
        "unseen": {"right": sum(not o.seen and o.right for o in outcomes), "wrong": len(unseen_wrong)},
        "unseen_wrong_gold_rank": {k: ranks.get(k, 0) for k in ("2", "3-5", "6+", "absent")},
        "unseen_wrong_relation": {k: relations.get(k, 0) for k in RELATIONS if relations.get(k, 0) or k != "no hierarchy"},
    }
