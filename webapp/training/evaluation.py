"""Evaluating an index version (or any loaded linker) on a gold collection: Acc@1, Acc@5, MRR, per mention type,
and per mention (:class:`webapp.training.models.MentionOutcome`, what the comparison page sets side by side)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.artifacts.local import ensure_local
from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.corpus.models import Collection, Document, Mention
from webapp.jobs import lifecycle
from webapp.jobs.lease import JobLease
from webapp.linking.devices import batch_device, serving_device
from webapp.linking.models import IndexVersion
from webapp.training.dataset import gold_parts, plain_documents
from webapp.training.errors import RunError
from webapp.training.held_out import check_held_out, trained_collections
from webapp.training.models import Evaluation, MentionOutcome
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)

SUMMARY = ("acc@1", "acc@5", "mrr")  # the overall figures, also given per mention type under "by_type"


@dataclass(frozen=True)
class MentionResult:
    """One gold mention's outcome, as a :class:`MentionOutcome` row stores it (ids per part joined by ``|``, ``+``
    within a part naming several acceptable concepts)."""

    mention_id: int
    mention_type: str
    gold: str
    predicted: str
    rank: int | None  # the rank at which every part is right; None: not within the top k

    def row(self, evaluation_id: int) -> MentionOutcome:
        return MentionOutcome(evaluation_id=evaluation_id, mention_id=self.mention_id, mention_type=self.mention_type,
                              gold=self.gold, predicted=self.predicted, rank=self.rank)


@dataclass(frozen=True)
class LinkerEvaluation:
    """The contract's metrics dict and the per-mention outcomes they were computed from."""

    metrics: dict[str, Any]
    outcomes: list[MentionResult] = field(default_factory=list)


def evaluate_linker(linker: Any, collection_id: int, k: int = 20) -> dict[str, Any]:
    """Acc@1, Acc@5, MRR and mentions of a loaded linker on a gold collection (BioSyn protocol), and the same per
    mention type under ``by_type``; a linker with a re-ranker is scored as it serves, each mention read in its
    document."""
    return evaluate_linker_outcomes(linker, collection_id, k).metrics


def evaluate_linker_outcomes(linker: Any, collection_id: int, k: int = 20) -> LinkerEvaluation:
    """:func:`evaluate_linker` with the outcome of every mention it counted."""
    from linker.evaluate import evaluate_linking, mention_outcomes
    from linker.protocol import build_eval_set

    parts = gold_parts([collection_id])
    docs = plain_documents(Document.objects.filter(collection_id=collection_id), parts)
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor)
    if not eval_set:
        return LinkerEvaluation({"mentions": 0.0, "by_type": {}})
    if getattr(linker, "reranker", None) is not None:
        ranked = _ranked_in_context(linker, eval_set, {d.pmid: d.text for d in docs}, k)
    else:
        ranked = linker.link_queries([m.queries for m in eval_set], k)
    gold = [m.gold_parts for m in eval_set]
    ids = [[[c.concept_id for c in part] for part in parts] for parts in ranked]
    types = [m.mention_type for m in eval_set]
    metrics = _metrics(evaluate_linking(gold, ids, types), float(len(eval_set)))
    pks = _mention_pks(collection_id, parts)
    outcomes = [
        MentionResult(
            mention_id=pks[(m.pmid, m.start, m.end, m.mention_type)], mention_type=m.mention_type,
            gold="|".join("+".join(sorted(part)) for part in m.gold_parts),
            predicted="|".join(cid or "" for cid in outcome.top1), rank=outcome.rank,
        )
        for m, outcome in zip(eval_set, mention_outcomes(gold, ids), strict=True)
    ]
    return LinkerEvaluation(metrics, outcomes)


def _metrics(flat: dict[str, float], mentions: float) -> dict[str, Any]:
    """The linker's flat figures ("acc@1", "acc@1/Disease", "n/Disease" ...) as the contract's dict: overall figures,
    then {type: {"acc@1", "acc@5", "mrr", "mentions"}} under ``by_type``."""
    metrics: dict[str, Any] = {key: flat[key] for key in SUMMARY if key in flat}
    metrics["mentions"] = mentions
    by_type: dict[str, dict[str, float]] = {}
    for key, value in flat.items():
        name, slash, mention_type = key.partition("/")
        if slash and name in (*SUMMARY, "n"):
            by_type.setdefault(mention_type, {})["mentions" if name == "n" else name] = value
    metrics["by_type"] = by_type
    return metrics


def _mention_pks(collection_id: int, parts: dict[int, list[str]]) -> dict[tuple[str, int, int, str], int]:
    """(document external id, start, end, mention type) -> the gold mention's pk. The linker's records name a mention
    by these (plain_documents names documents by external id); within one collection they identify one mention,
    as the database guarantees (unique_document_per_collection, unique_mention_span)."""
    rows = Mention.objects.filter(document__collection_id=collection_id).values_list(
        "pk", "document__external_id", "start", "end", "mention_type")
    return {(doc, start, end, mention_type): pk for pk, doc, start, end, mention_type in rows.iterator(chunk_size=5000)
            if pk in parts}


def _ranked_in_context(linker: Any, eval_set: list[Any], texts: dict[str, str], k: int) -> list[list[list[Any]]]:
    """Each mention's candidates per part as the re-ranking linker serves them, read in its document."""
    from linker.rerank import MentionSpan

    by_doc: dict[str, list[int]] = {}
    for i, m in enumerate(eval_set):
        by_doc.setdefault(m.pmid, []).append(i)
    out: list[list[list[Any]]] = [[] for _ in eval_set]
    for pmid, rows in by_doc.items():
        spans = [MentionSpan(eval_set[i].text, eval_set[i].start, eval_set[i].end) for i in rows]
        for i, linked in zip(rows, linker.link_in_context(spans, texts.get(pmid, ""), k), strict=True):
            out[i] = linked.by_part(len(eval_set[i].queries))
    return out


def evaluable_collections(dictionary: Dictionary) -> list[Collection]:
    """Gold collections an index of ``dictionary`` can be evaluated on (:func:`start_evaluation`'s rule): its own
    and those bound to no dictionary."""
    return list(Collection.objects.filter(Q(dictionary=dictionary) | Q(dictionary__isnull=True), has_gold=True)
                .order_by("slug"))


@transaction.atomic
def start_evaluation(index: IndexVersion, collection: Collection, user: Any = None, queue: str | None = None) -> Evaluation:
    """Queue Acc@1/Acc@5 of an index version on a gold collection (the interactive queue, after commit: someone waits
    on it, not behind a training run); refused on a collection that trained the index's encoder
    (:func:`webapp.training.held_out.check_held_out`)."""
    if index.state not in (IndexVersion.State.READY, IndexVersion.State.ACTIVE, IndexVersion.State.RETIRED):
        raise RunError(f"index {index.pk} is {index.state}; only a built index can be evaluated")
    if collection.dictionary_id not in (None, index.dictionary_id):
        raise RunError(f"{collection} links to another dictionary than index {index.pk}")
    check_held_out(collection, trained_collections(index.encoder), f"index {index.pk}")
    evaluation = Evaluation.objects.create(
        index_version=index, collection=collection, created_by=user if getattr(user, "pk", None) else None
    )
    enqueue("tasks.training.evaluate_task", evaluation.pk, queue=queue, task_id=job_task_id(evaluation),
            on_failure=partial(_unqueued, evaluation.pk))
    return evaluation


def _unqueued(evaluation_id: int, exc: QueueUnavailable) -> None:
    lifecycle.fail(evaluation_id, str(exc))


def run_evaluation(evaluation_id: int) -> str:
    """The task body: idempotent (an ended evaluation is not run again); failures are recorded with the reason.
    Run under the evaluation's lease (webapp.jobs.lease): a worker that dies leaves it to the job sweep, which fails
    it, instead of "running" for ever."""
    with JobLease(evaluation_id) as lease:
        if not lease.held:
            logger.warning("evaluation %s: another worker runs it (or the sweep is failing it); left to it", evaluation_id)
            return "taken"
        return _run_leased(evaluation_id)


def _run_leased(evaluation_id: int) -> str:
    if not lifecycle.take(evaluation_id):  # ended; a re-delivery after a lost worker finds it running: runs again
        return Evaluation.objects.get(pk=evaluation_id).state
    evaluation = Evaluation.objects.select_related("index_version").get(pk=evaluation_id)
    try:
        result = evaluate_linker_outcomes(_evaluation_linker(evaluation.index_version), evaluation.collection_id)
    except Exception as exc:
        logger.exception("evaluation %s failed", evaluation_id)
        lifecycle.fail(evaluation_id, f"{type(exc).__name__}: {exc}")
        return Evaluation.State.FAILED
    with transaction.atomic():
        # A re-delivered task runs it again from the start: its earlier outcomes (if any were written) go first.
        MentionOutcome.objects.filter(evaluation_id=evaluation_id).delete()
        MentionOutcome.objects.bulk_create([r.row(evaluation_id) for r in result.outcomes], batch_size=2000)
        Evaluation.objects.filter(pk=evaluation_id).update(metrics=result.metrics)
        lifecycle.succeed(evaluation_id)
    return Evaluation.State.SUCCEEDED


def _evaluation_linker(index: IndexVersion) -> Any:
    """The linker an evaluation encodes with, on the batch device (LINKER_DEVICE: CUDA where there is one). The one
    this process serves is reused when it is on that device; otherwise (a GPU worker whose served linkers stay on
    the CPU) the artifact is loaded for this evaluation alone and let go after it."""
    from linker.linker import Linker
    from webapp.linking.registry import load_linker

    device = batch_device()
    if device == serving_device():
        return load_linker(index)
    return Linker.load(ensure_local(index.artifact_path), device=device)


def record_evaluation(index: IndexVersion, collection_id: int, result: LinkerEvaluation, user: Any = None) -> Evaluation:
    """A SUCCEEDED evaluation of ``index`` with its outcomes, from figures computed elsewhere (a training run's own
    evaluation of the linker it built: the same artifact, so not computed twice). The caller's transaction holds
    it together with the index row."""
    now = timezone.now()
    evaluation = Evaluation.objects.create(
        index_version=index, collection_id=collection_id, state=Evaluation.State.SUCCEEDED, metrics=result.metrics,
        created_by=user if getattr(user, "pk", None) else None, finished_at=now,
    )
    MentionOutcome.objects.bulk_create([r.row(evaluation.pk) for r in result.outcomes], batch_size=2000)
    return evaluation
