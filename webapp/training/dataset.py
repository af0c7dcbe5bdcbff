"""The dataset builder: a run's training snapshot from gold links and curator decisions.

Pairs come from the gold links of the chosen collections and from curator accepts and relinks made up to the
run's ``snapshot_at`` (undone ones excluded); rejected candidates are kept as hard negatives, which BioSyn
puts into the candidate sets of their texts and weighs up in its loss (:class:`linker.losses.SynonymMarginalLoss`). The snapshot is
written once, as :class:`TrainingExample` rows, so it records which decisions trained which model.
:func:`training_inputs` turns it into the linker recipe's plain inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from django.db import transaction
from django.db.models import QuerySet

from linker.data import GoldMention, PubTatorDocument
from linker.dictionary import NameTable
from linker.methods.base import TrainingInputs, prior_counts
from linker.text import Preprocessor, TextConfig
from webapp.artifacts.local import local_base
from webapp.corpus.models import Document, Link
from webapp.curation.models import Decision, HardNegative
from webapp.curation.teaching import teaching_decisions
from webapp.training.errors import RunError
from webapp.training.models import TrainingExample, TrainingRun
from webapp.training.services import concept_records


def gold_parts(collection_ids: Iterable[int]) -> dict[int, list[str]]:
    """Mention pk -> its gold concept ids per part, in part order ("A+B" where one part names two concepts)."""
    parts: dict[int, list[tuple[int, str]]] = {}
    links = Link.objects.filter(
        mention__document__collection_id__in=list(collection_ids), origin=Link.Origin.GOLD, nil=False
    ).values_list("mention_id", "part", "concept__concept_id", "concept_ref")
    for mention_id, part, concept_id, ref in links.iterator(chunk_size=5000):
        ids = ref if ref and (not concept_id or "+" in ref) else (concept_id or ref)
        parts.setdefault(mention_id, []).append((part, ids))
    return {pk: [ids for _, ids in sorted(found)] for pk, found in parts.items()}


def plain_documents(
    documents: QuerySet[Document], parts: Mapping[int, Sequence[str]], key: Callable[[Document], str] | None = None
) -> list[PubTatorDocument]:
    """``documents`` as the linker's plain records with the mentions that ``parts`` links (mention pk -> concept
    ids per part); each document is named by ``key`` (default: its external id)."""
    docs = []
    for doc in documents.prefetch_related("mentions").iterator(chunk_size=200):
        mentions = []
        for m in doc.mentions.all():
            ids = list(parts.get(m.pk, ()))
            if not ids:
                continue
            mentions.append(GoldMention(
                start=m.start, end=m.end, text=m.text, mention_type=m.mention_type, ids_raw="|".join(ids),
                parts=tuple(tuple(i.split("+")) for i in ids), part_texts=tuple(m.part_texts or ()),
            ))
        # Offsets count characters of Document.text: it is the whole "title" here.
        name = key(doc) if key else doc.external_id
        docs.append(PubTatorDocument(pmid=name, title=doc.text, abstract="", mentions=tuple(mentions)))
    return docs


def gold_documents(collection_ids: list[int]) -> list[PubTatorDocument]:
    """The collections' documents with their gold mentions, as the linker's plain records."""
    return plain_documents(Document.objects.filter(collection_id__in=collection_ids), gold_parts(collection_ids))


def _curator_examples(run: TrainingRun, table: NameTable, pre: Preprocessor) -> list[TrainingExample]:
    out = []
    decisions = Decision.objects.filter(
        teaching_decisions(), action__in=[Decision.Action.ACCEPT, Decision.Action.RELINK], undone_at__isnull=True,
        created_at__lte=run.snapshot_at, concept__version__dictionary=run.dictionary,
    ).select_related("concept", "document").order_by("created_at", "id")
    abbreviations: dict[int, dict[str, str]] = {}
    for d in decisions:
        if d.document_id not in abbreviations:
            abbreviations[d.document_id] = pre.abbreviations(d.document.text)
        queries = pre.mention_queries(d.mention_text, abbreviations[d.document_id])
        text = queries[d.part] if len(queries) > 1 and d.part < len(queries) else pre.normalize(d.mention_text)
        cid = table.resolve_id(d.concept.concept_id)
        if text and cid:
            out.append(TrainingExample(run=run, text=text, mention_text=d.mention_text, concept_id=cid,
                                       source=TrainingExample.Source.CURATOR, decision=d))
    negatives = HardNegative.objects.filter(
        teaching_decisions("decision__"), decision__undone_at__isnull=True, decision__created_at__lte=run.snapshot_at,
        concept__version__dictionary=run.dictionary,
    ).select_related("concept").order_by("id")
    for n in negatives:
        cid = table.resolve_id(n.concept.concept_id)
        text = pre.normalize(n.mention_text)
        if text and cid:
            out.append(TrainingExample(run=run, text=text, mention_text=n.mention_text, concept_id=cid, negative=True,
                                       source=TrainingExample.Source.CURATOR, decision_id=n.decision_id))
    return out


def dictionary_table(run: TrainingRun) -> NameTable:
    version = run.dictionary.latest_version()
    if version is None:
        raise RunError(f"dictionary {run.dictionary.slug!r} has no imported release")
    return NameTable.from_records(concept_records(version), TextConfig())


def build_snapshot(run: TrainingRun, table: NameTable | None = None) -> list[TrainingExample]:
    """Write the run's training examples (once): curator decisions up to ``snapshot_at``, then gold links.

    Deduplicated on (normalised text, concept, negative); a decision's pair keeps the decision as provenance.
    """
    from linker.protocol import training_pairs

    table = table or dictionary_table(run)
    pre = Preprocessor(table.cfg)
    with transaction.atomic():
        locked = TrainingRun.objects.select_for_update().get(pk=run.pk)
        if locked.examples.exists():
            return list(locked.examples.all())
        candidates = _curator_examples(run, table, pre)
        docs = gold_documents(list(run.collections.values_list("pk", flat=True)))
        for text, cid in training_pairs(docs, table, pre):
            candidates.append(TrainingExample(run=run, text=text, concept_id=cid, source=TrainingExample.Source.GOLD))
        seen: set[tuple[str, str, bool]] = set()
        unique = []
        for ex in candidates:
            key = (ex.text, ex.concept_id, ex.negative)
            if key not in seen:
                seen.add(key)
                unique.append(ex)
        if not any(not ex.negative for ex in unique):
            raise RunError("no training pairs: the collections have no gold links to this dictionary's concepts "
                           "and no curator decisions were made")
        return TrainingExample.objects.bulk_create(unique, batch_size=2000)


def training_inputs(run: TrainingRun, table: NameTable, examples: list[TrainingExample], out: Path) -> TrainingInputs:
    """The snapshot as the recipe's inputs: its (text, concept) pairs, and the concept prior counted the
    recipe's one way (:func:`linker.recipe.prior_counts`) over the collections' gold mentions plus one per
    curated pair."""
    positives = [ex for ex in examples if not ex.negative]
    docs = gold_documents(list(run.collections.values_list("pk", flat=True)))
    curated = [ex.concept_id for ex in positives if ex.source == TrainingExample.Source.CURATOR]
    return TrainingInputs(
        table=table, pairs=[(ex.text, ex.concept_id) for ex in positives],
        negative_pairs=[(ex.text, ex.concept_id) for ex in examples if ex.negative],
        concept_counts=prior_counts(docs, table, curated=curated), out=out, base_model=local_base(run.base_model),
        metadata={"training_run": run.pk},
    )
