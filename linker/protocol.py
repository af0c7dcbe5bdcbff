"""The BioSyn evaluation protocol (Sung et al., ACL 2020) as code.

Queries: each gold mention is abbreviation-expanded from its own document, split into composite parts and
normalised (:class:`linker.text.Preprocessor`). Gold: the mention's id field, "|" separating composite parts
and "+" joining ids that are accepted as alternatives for one part; every id is resolved to the dictionary's
primary id through :meth:`NameTable.resolve_id`. Parts pair up with queries in order when their numbers
agree; otherwise the mention is one unsplit query for which any of its ids is correct. A mention is correct
at k only if every part is (:func:`linker.evaluate.evaluate_linking`).

Exclusions (counted in :class:`EvalSetReport`): mentions without an id ("-1", empty) are dropped, as BioSyn's
``filter_cuiless`` does; mentions with a part none of whose ids exists in the dictionary are dropped as well
(``drop_unresolved=True``), because no ranking over this dictionary could ever get them right and they
measure the dictionary version rather than the linker. Pass ``drop_unresolved=False`` to keep them as
guaranteed errors and report the stricter figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import permutations

from linker.data import GoldMention, PubTatorDocument
from linker.dictionary import NameTable
from linker.evaluate import evaluate_linking
from linker.sparse import SparseEncoder
from linker.text import Preprocessor

__all__ = [
    "EvalMention",
    "EvalSetReport",
    "build_eval_set",
    "training_pairs",
    "rank_concepts",
    "sparse_concept_ranking",
    "evaluate_sparse",
]


@dataclass(frozen=True)
class EvalMention:
    pmid: str
    text: str
    mention_type: str
    queries: list[str]  # normalised, one per part
    gold_parts: list[frozenset[str]]  # primary concept ids acceptable for each part
    start: int = -1
    end: int = -1


@dataclass
class EvalSetReport:
    """What :func:`build_eval_set` kept and dropped, so a benchmark can print it."""

    seen: int = 0
    kept: int = 0
    skipped_type: int = 0
    nil: int = 0
    unresolved: int = 0
    composite: int = 0
    split_paired: int = 0
    unresolved_ids: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return {
            "mentions_seen": float(self.seen),
            "mentions_kept": float(self.kept),
            "mentions_other_type": float(self.skipped_type),
            "mentions_nil": float(self.nil),
            "mentions_unresolved": float(self.unresolved),
            "mentions_composite": float(self.composite),
            "mentions_split_paired": float(self.split_paired),
        }


def _resolve_parts(
    mention: GoldMention, table: NameTable, report: EvalSetReport | None
) -> tuple[list[frozenset[str]], bool]:
    """Gold parts as sets of primary ids, and whether every part has at least one id in the dictionary.

    Unresolvable ids are kept verbatim in a part that has no resolvable id, so the mention can still be
    scored (as an error) when the caller keeps unresolved mentions.
    """
    parts: list[frozenset[str]] = []
    ok = True
    for part in mention.parts:
        resolved = {r for r in (table.resolve_id(i) for i in part) if r is not None}
        if not resolved:
            ok = False
            if report is not None:
                for i in part:
                    report.unresolved_ids[i] = report.unresolved_ids.get(i, 0) + 1
            resolved = set(part)
        parts.append(frozenset(resolved))
    return parts, ok


def _bigrams(text: str) -> set[str]:
    padded = f" {text} "
    return {padded[i : i + 2] for i in range(len(padded) - 1)}


def _similarity(query: str, part: frozenset[str], table: NameTable) -> float:
    """Best character-bigram Dice between a query and any dictionary name of the part's concepts."""
    q = _bigrams(query)
    best = 0.0
    for cid in part:
        for row in table.concept_names(cid):
            n = _bigrams(table.names[row])
            best = max(best, 2 * len(q & n) / (len(q) + len(n)))
    return best


def _align(queries: list[str], gold: list[frozenset[str]], table: NameTable) -> list[frozenset[str]]:
    """Reorder composite gold parts to follow the query parts.

    The corpora do not list a composite's ids in text order ("sub-total deficiency of C6 and C7" is
    annotated C7|C6), so parts are assigned to queries by the permutation that maximises the summed
    similarity of each query to its part's dictionary names. It looks only at gold and dictionary, never
    at a system's output. Composites of more than 6 parts keep the annotation order.
    """
    if len(gold) < 2 or len(gold) > 6 or len(set(gold)) == 1:
        return gold
    sims = [[_similarity(q, g, table) for g in gold] for q in queries]
    best_perm = tuple(range(len(gold)))
    best = sum(sims[i][i] for i in range(len(gold)))
    for perm in permutations(range(len(gold))):
        total = sum(sims[i][p] for i, p in enumerate(perm))
        if total > best + 1e-9:
            best, best_perm = total, perm
    return [gold[p] for p in best_perm]


def _queries_and_gold(
    mention: GoldMention,
    abbreviations: dict[str, str],
    gold: list[frozenset[str]],
    preprocessor: Preprocessor,
    table: NameTable,
) -> tuple[list[str], list[frozenset[str]], bool]:
    queries = preprocessor.mention_queries(mention.text, abbreviations)
    if len(queries) == len(gold):
        return queries, _align(queries, gold, table), len(gold) > 1
    # Numbers disagree: one unsplit query, any of the mention's ids accepted.
    whole = preprocessor.normalize(preprocessor.mention_parts_unsplit(mention.text, abbreviations))
    return [whole or queries[0]], [frozenset().union(*gold)], False


def build_eval_set(
    docs: Iterable[PubTatorDocument],
    table: NameTable,
    preprocessor: Preprocessor,
    mention_types: set[str] | None = None,
    drop_unresolved: bool = True,
    report: EvalSetReport | None = None,
) -> list[EvalMention]:
    """Gold mentions of ``docs`` as evaluation queries (see the module docstring for the rules).

    ``mention_types`` keeps only those types (e.g. {"Disease"} for BC5CDR); ``report``, when given, is
    filled with the counts of kept and dropped mentions and the unresolved ids.
    """
    out: list[EvalMention] = []
    for doc in docs:
        abbreviations = preprocessor.abbreviations(doc.text)
        for m in doc.mentions:
            if report is not None:
                report.seen += 1
            if mention_types is not None and m.mention_type not in mention_types:
                if report is not None:
                    report.skipped_type += 1
                continue
            if not m.parts:
                if report is not None:
                    report.nil += 1
                continue
            gold, ok = _resolve_parts(m, table, report)
            if not ok:
                if report is not None:
                    report.unresolved += 1
                if drop_unresolved:
                    continue
            queries, gold_parts, paired = _queries_and_gold(m, abbreviations, gold, preprocessor, table)
            if report is not None:
                report.kept += 1
                report.composite += int(len(m.parts) > 1)
                report.split_paired += int(paired)
            out.append(
                EvalMention(
                    pmid=doc.pmid,
                    text=m.text,
                    mention_type=m.mention_type,
                    queries=queries,
                    gold_parts=gold_parts,
                    start=m.start,
                    end=m.end,
                )
            )
    return out


def training_pairs(
    docs: Iterable[PubTatorDocument],
    table: NameTable,
    preprocessor: Preprocessor,
    mention_types: set[str] | None = None,
    unique: bool = True,
) -> list[tuple[str, str]]:
    """(normalised mention part, primary concept id) pairs for merging training mentions into a dictionary.

    Composite mentions contribute their parts: the annotated part texts where the corpus has them (BC5CDR's
    7th column), else our split when it matches the number of gold parts; a part (or an unsplit mention) whose gold is ambiguous (several ids) or not in the dictionary contributes nothing.
    Pairs are in corpus order; unique unless ``unique=False``, which keeps one pair per mention so that
    :meth:`NameTable.add` counts how often each pair was annotated (its tie-breaking support).
    """
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for doc in docs:
        abbreviations = preprocessor.abbreviations(doc.text)
        for m in doc.mentions:
            if (mention_types is not None and m.mention_type not in mention_types) or not m.parts:
                continue
            gold, ok = _resolve_parts(m, table, None)
            if not ok:
                continue
            if len(m.part_texts) == len(gold) > 1:
                # BC5CDR's 7th column names each part's text: better training pairs than our split.
                queries = [preprocessor.normalize(t) for t in m.part_texts]
                gold_parts = gold
            else:
                queries, gold_parts, _ = _queries_and_gold(m, abbreviations, gold, preprocessor, table)
            for q, g in zip(queries, gold_parts, strict=True):
                if len(g) != 1 or not q:
                    continue
                pair = (q, next(iter(g)))
                if not unique or pair not in seen:
                    seen.add(pair)
                    out.append(pair)
    return out


def rank_concepts(
    row_indices: Sequence[int], row_scores: Sequence[float], table: NameTable, k: int
) -> list[tuple[str, float, int]]:
    """Concept-level ranking from a best-first list of name rows: a concept scores its best name's score.

    Equal scores (one name shared by several concepts) are ordered by :meth:`NameTable.tie_key`, i.e. the
    concept whose name was attested by merged training mentions or curators comes first, then by row.
    Returns up to k (concept id, score, row of the best name), best first.
    """
    seen: set[str] = set()
    out: list[tuple[str, float, int]] = []
    order = sorted(
        zip(row_indices, row_scores, strict=True),
        key=lambda rs: (-float(rs[1]), *(-x for x in table.tie_key(int(rs[0]))), int(rs[0])),
    )
    for row, score in order:
        cid = table.concept_ids[int(row)]
        if cid in seen:
            continue
        seen.add(cid)
        out.append((cid, float(score), int(row)))
        if len(out) == k:
            break
    return out


def sparse_concept_ranking(
    queries: Sequence[str], table: NameTable, encoder: SparseEncoder, k: int = 20, name_factor: int = 8
) -> list[list[tuple[str, float, int]]]:
    """Top-k concepts per query by sparse score; ``k * name_factor`` names are searched to find k concepts."""
    if encoder.n_names != len(table):
        raise ValueError(f"the encoder indexes {encoder.n_names} names but the table has {len(table)} rows")
    scores, rows = encoder.top_k(list(queries), k * name_factor)
    return [rank_concepts(rows[i], scores[i], table, k) for i in range(len(queries))]


def evaluate_sparse(
    eval_set: Sequence[EvalMention], table: NameTable, encoder: SparseEncoder, k: int = 20
) -> dict[str, float]:
    """Acc@1, Acc@5, MRR (within the top k) of sparse-only, concept-level retrieval."""
    flat = [q for em in eval_set for q in em.queries]
    ranking = sparse_concept_ranking(flat, table, encoder, k)
    ranked: list[list[list[str]]] = []
    pos = 0
    for em in eval_set:
        ranked.append([[cid for cid, _, _ in ranking[pos + j]] for j in range(len(em.queries))])
        pos += len(em.queries)
    return evaluate_linking(
        [em.gold_parts for em in eval_set], ranked, [em.mention_type for em in eval_set], ks=(1, 5)
    )
