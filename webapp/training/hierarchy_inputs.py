"""A hierarchy pre-training run's inputs: each dictionary's names and parent links, read from the database.

Each dictionary's latest release becomes one :class:`~linker.hierarchy.graph.HierarchySource` (named by the
dictionary's slug) in two queries: its live concepts with their names and alternative ids (one aggregate
query), and its hierarchy edges as (child id, parent id) rows. Nothing here walks the graph, in SQL or in
Python, so a cycle in bad data (a -> b -> a) costs nothing: the linker reads each pair's distance from the
two concepts' parents directly.

The run's collections lend their gold mentions as further names of the concepts they are linked to (the
linked concept says which dictionary a mention belongs to); a composite mention counts only where its part
has its own text, since the whole span names none of its concepts alone.

A dictionary without edges is still passed on: the linker refuses it with
:class:`~linker.hierarchy.graph.NoHierarchyError`, naming it (the run then fails with that reason; the
start form and the API refuse it earlier, :func:`check_has_hierarchy`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import F

from linker.dictionary import NameTable
from linker.hierarchy.graph import HierarchySource, NoHierarchyError
from linker.methods.base import TrainingInputs
from linker.text import TextConfig, normalize
from webapp.artifacts.local import local_base
from webapp.corpus.models import Link
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, HierarchyEdge

__all__ = ["check_has_hierarchy", "dictionary_source", "hierarchy_inputs", "run_dictionaries"]


def no_hierarchy_message(dictionary: Dictionary, version: DictionaryVersion) -> str:
    return str(NoHierarchyError.for_dictionary(dictionary.slug, f"no parent links in release {version.release}"))


def check_has_hierarchy(dictionary: Dictionary) -> DictionaryVersion:
    """The dictionary's latest release, or a RunError naming the dictionary when it has none or no edges."""
    version = dictionary.latest_version()
    if version is None:
        raise RunError(f"dictionary {dictionary.slug!r} has no imported release")
    if not HierarchyEdge.objects.filter(version=version).exists():
        raise RunError(no_hierarchy_message(dictionary, version))
    return version


def run_dictionaries(run: TrainingRun, strict: bool = True) -> list[Dictionary]:
    """The dictionaries a run trains on, in the order chosen (the run's own first); one deleted since the run
    was queued is a RunError (``strict``) or left out."""
    ids = [int(i) for i in run.params.get("dictionaries") or [run.dictionary_id]]
    found = Dictionary.objects.in_bulk(ids)
    missing = [i for i in ids if i not in found]
    if missing and strict:
        raise RunError(f"dictionary {missing[0]} was deleted after the run was queued")
    return [found[i] for i in ids if i in found]


def dictionary_source(
    dictionary: Dictionary, version: DictionaryVersion, cfg: TextConfig | None = None
) -> tuple[HierarchySource, dict[str, str]]:
    """The release as a source (names normalised, distinct, the preferred name first), and its alternative
    ids -> primary ids (for corpus links made against an older release)."""
    cfg = cfg or TextConfig()
    names: dict[str, list[str]] = {}
    alternatives: dict[str, str] = {}
    rows = (
        Concept.objects.filter(version=version, obsolete=False)
        .annotate(texts=ArrayAgg("names__text", order_by=("-names__is_preferred", "names__id"), default=[]))
        .values_list("concept_id", "preferred_name", "alt_ids", "texts")
    )
    for cid, preferred, alt_ids, texts in rows.iterator(chunk_size=5000):
        normalised = (normalize(t, cfg) for t in (preferred, *(t for t in texts if t)))
        distinct = list(dict.fromkeys(n for n in normalised if n))
        if distinct:
            names[cid] = distinct
        alternatives.update((alt, cid) for alt in alt_ids or ())
    parents: dict[str, list[str]] = defaultdict(list)
    edges = HierarchyEdge.objects.filter(version=version).values_list("child__concept_id", "parent__concept_id")
    for child, parent in edges.iterator(chunk_size=20000):
        parents[child].append(parent)
    source = HierarchySource(dictionary.slug, names, {c: tuple(ps) for c, ps in parents.items()})
    return source, alternatives


def corpus_pairs(collection_ids: Sequence[int], dictionary_ids: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
    """Dictionary id -> (mention text, concept id) of the collections' gold links to that dictionary's
    concepts (any release), one query; composite parts without their own text are left out."""
    rows = (
        Link.objects.filter(mention__document__collection_id__in=list(collection_ids), origin=Link.Origin.GOLD,
                            nil=False, concept__version__dictionary_id__in=list(dictionary_ids))
        .annotate(dictionary_id=F("concept__version__dictionary_id"))
        .values_list("mention_id", "part", "mention__text", "mention__part_texts", "concept__concept_id",
                     "concept_ref", "dictionary_id")
    )
    by_mention: dict[int, list[tuple[int, str, list[str], str, str, int]]] = defaultdict(list)
    for mention_id, part, text, part_texts, cid, ref, dictionary_id in rows.iterator(chunk_size=5000):
        by_mention[mention_id].append((part, text, part_texts or [], cid, ref, dictionary_id))
    out: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for links in by_mention.values():
        for part, text, part_texts, cid, ref, dictionary_id in links:
            if "+" in ref:  # one part naming several concepts together ("A+B"): the text is neither
                continue
            if part < len(part_texts) and part_texts[part]:
                out[dictionary_id].append((part_texts[part], cid))
            elif len(links) == 1:
                out[dictionary_id].append((text, cid))
    return out


def hierarchy_inputs(run: TrainingRun, out: Path) -> TrainingInputs:
    """The recipe's inputs for HiPrBERT: one source per dictionary, corpus names added, metadata for the report."""
    cfg = TextConfig()
    dictionaries = run_dictionaries(run)
    sources: list[HierarchySource] = []
    resolvers: dict[int, dict[str, str]] = {}
    for dictionary in dictionaries:
        version = dictionary.latest_version()
        if version is None:
            raise RunError(f"dictionary {dictionary.slug!r} has no imported release")
        source, resolvers[dictionary.pk] = dictionary_source(dictionary, version, cfg)
        sources.append(source)
    collections = list(run.collections.order_by("slug").values_list("pk", "slug"))
    pairs = corpus_pairs([pk for pk, _ in collections], resolvers) if collections else {}
    gained = {}
    for dictionary, source in zip(dictionaries, sources, strict=True):
        gained[source.name] = source.add_names(pairs.get(dictionary.pk, ()), resolve=resolvers[dictionary.pk], cfg=cfg)
    return TrainingInputs(
        table=NameTable(), pairs=(), concept_counts={}, out=out, base_model=local_base(run.base_model),
        hierarchies=sources,
        metadata={"training_run": run.pk, "dictionaries": [d.slug for d in dictionaries],
                  "collections": [slug for _, slug in collections], "corpus_names_added": gained},
    )
