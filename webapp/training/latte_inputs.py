"""A LATTE run's inputs: mentions in their documents, curators' rejections, the concepts' known types.

LATTE reads each mention in its context, so its training data are documents, not (text, concept) pairs:

- the gold mentions of the run's collections, and every mention a curator accepted or relinked up to the
  run's ``snapshot_at`` (any collection of the dictionary), the curator's concept winning over the gold one;
  a mention whose latest decision is NIL or "not a mention" (reject) is left out;
- the concepts curators turned down for a mention (:class:`~webapp.curation.models.HardNegative`) as
  ``rejections`` keyed by (document, start, end): the re-ranker's hard negatives;
- each concept's known types (``Concept.known_types`` labels) of the base index's dictionary version.

Documents are named by their primary key (external ids may repeat across collections).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from django.db.models import Q

from linker.data import PubTatorDocument
from linker.dictionary import NameTable
from linker.methods.base import TrainingInputs, prior_counts
from linker.text import TextConfig
from webapp.artifacts.local import ensure_local
from webapp.corpus.models import Document
from webapp.curation.models import Decision, HardNegative
from webapp.curation.teaching import teaching_decisions
from webapp.linking.models import IndexVersion
from webapp.training.dataset import gold_parts, plain_documents
from webapp.training.models import TrainingExample, TrainingRun
from webapp.training.services import concept_records
from webapp.vocab.models import Concept, DictionaryVersion

Rejections = dict[tuple[str, int, int], frozenset[str]]
_LINKING = (Decision.Action.ACCEPT, Decision.Action.RELINK)
_UNLINKING = (Decision.Action.NIL, Decision.Action.REJECT)


def _doc_key(doc: Document) -> str:
    return str(doc.pk)


def curated_parts(run: TrainingRun) -> tuple[dict[int, list[str]], set[int]]:
    """Mention pk -> the curators' concept per part (the latest decision of each part wins), and the mentions
    whose latest decision unlinked them (NIL, not a mention)."""
    latest: dict[int, dict[int, str]] = defaultdict(dict)
    unlinked: set[int] = set()
    decisions = Decision.objects.filter(
        Q(undone_at__isnull=True, created_at__lte=run.snapshot_at, mention__isnull=False), teaching_decisions(),
        Q(action__in=_LINKING, concept__version__dictionary=run.dictionary) | Q(action__in=_UNLINKING),
    ).order_by("created_at", "id").values_list("mention_id", "part", "action", "concept__concept_id", "concept_ref")
    for mention_id, part, action, concept_id, ref in decisions.iterator(chunk_size=5000):
        if action in _UNLINKING:
            latest.pop(mention_id, None)
            unlinked.add(mention_id)
        elif concept_id or ref:
            latest[mention_id][part] = concept_id or ref
            unlinked.discard(mention_id)
    return {pk: [ids for _, ids in sorted(by_part.items())] for pk, by_part in latest.items()}, unlinked


def rejections(run: TrainingRun) -> Rejections:
    """(document pk, start, end) -> the concepts curators turned down for that mention."""
    out: dict[tuple[str, int, int], set[str]] = defaultdict(set)
    rows = HardNegative.objects.filter(
        teaching_decisions("decision__"), decision__undone_at__isnull=True, decision__created_at__lte=run.snapshot_at,
        decision__mention__isnull=False, concept__version__dictionary=run.dictionary,
    ).values_list("decision__document_id", "decision__mention__start", "decision__mention__end", "concept__concept_id")
    for doc_id, start, end, cid in rows.iterator(chunk_size=5000):
        out[(str(doc_id), start, end)].add(cid)
    return {key: frozenset(cids) for key, cids in out.items()}


def concept_types(version: DictionaryVersion) -> dict[str, tuple[str, ...]]:
    """Concept id -> the labels of its known types, for the concepts that have any."""
    types: dict[str, set[str]] = defaultdict(set)
    rows = Concept.objects.filter(version=version, known_types__isnull=False).values_list("concept_id", "known_types__label")
    for cid, label in rows.iterator(chunk_size=20000):
        types[cid].add(label)
    return {cid: tuple(sorted(labels)) for cid, labels in types.items()}


def training_documents(run: TrainingRun) -> list[PubTatorDocument]:
    """The run's collections' gold mentions with the curators' decisions laid over them (module docstring)."""
    collection_ids = list(run.collections.values_list("pk", flat=True))
    parts = gold_parts(collection_ids)
    curated, unlinked = curated_parts(run)
    for pk in unlinked:
        parts.pop(pk, None)
    parts.update(curated)
    documents = Document.objects.filter(Q(collection_id__in=collection_ids) | Q(mentions__pk__in=list(curated))).distinct()
    return [doc for doc in plain_documents(documents, parts, key=_doc_key) if doc.mentions]


def dev_documents(run: TrainingRun) -> list[PubTatorDocument]:
    if run.eval_collection_id is None:
        return []
    collection = [run.eval_collection_id]
    return plain_documents(Document.objects.filter(collection_id__in=collection), gold_parts(collection), key=_doc_key)


def latte_table(index: IndexVersion) -> NameTable:
    """The dictionary version of the base index, with today's names (curator synonyms included)."""
    return NameTable.from_records(concept_records(index.dictionary_version), TextConfig())


def latte_inputs(run: TrainingRun, index: IndexVersion, table: NameTable, examples: list[TrainingExample],
                 out: Path) -> TrainingInputs:
    """The recipe's inputs for LATTE over the linker of ``index``."""
    documents = training_documents(run)
    return TrainingInputs(
        table=table, pairs=[(ex.text, ex.concept_id) for ex in examples if not ex.negative],
        concept_counts=prior_counts(documents, table), out=out, metadata={"training_run": run.pk, "base_index": index.pk},
        documents=documents, rejections=rejections(run), concept_types=concept_types(index.dictionary_version),
        base_artifact=ensure_local(index.artifact_path), dev_documents=dev_documents(run),
    )
