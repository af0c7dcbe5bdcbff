"""Evaluating an index version (or any loaded linker) on a gold collection: Acc@1, Acc@5, MRR."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.corpus.models import Collection
from webapp.training.dataset import gold_documents
from webapp.training.errors import RunError
from webapp.training.held_out import check_held_out, trained_collections
from webapp.training.models import Evaluation, IndexVersion

logger = logging.getLogger(__name__)


def evaluate_linker(linker: Any, collection_id: int, k: int = 20) -> dict[str, float]:
    """Acc@1, Acc@5, MRR of a loaded linker on a gold collection (BioSyn protocol); a linker with a re-ranker
    is scored as it serves, each mention read in its document."""
    from linker.evaluate import evaluate_linking
    from linker.protocol import build_eval_set

    docs = gold_documents([collection_id])
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor)
    if not eval_set:
        return {"mentions": 0.0}
    if getattr(linker, "reranker", None) is not None:
        ranked = _ranked_in_context(linker, eval_set, {d.pmid: d.text for d in docs}, k)
    else:
        ranked = linker.link_queries([m.queries for m in eval_set], k)
    metrics = evaluate_linking([m.gold_parts for m in eval_set], [[[c.concept_id for c in part] for part in parts] for parts in ranked])
    metrics["mentions"] = float(len(eval_set))
    return metrics


def _ranked_in_context(linker: Any, eval_set: list[Any], texts: dict[str, str], k: int) -> list[list[list[Any]]]:
    """Each mention's candidates per part as the re-ranking linker serves them, read in its document."""
    from linker.rerank import MentionSpan

    by_doc: dict[str, list[int]] = {}
    for i, m in enumerate(eval_set):
        by_doc.setdefault(m.pmid, []).append(i)
    out: list[list[list[Any]]] = [[[] for _ in m.queries] for m in eval_set]
    for pmid, rows in by_doc.items():
        spans = [MentionSpan(eval_set[i].text, eval_set[i].start, eval_set[i].end) for i in rows]
        for i, linked in zip(rows, linker.link_in_context(spans, texts.get(pmid, ""), k), strict=True):
            for c in linked.candidates:
                if c.part < len(out[i]):
                    out[i][c.part].append(c)
    return out


@transaction.atomic
def start_evaluation(index: IndexVersion, collection: Collection, user: Any = None, queue: str | None = None) -> Evaluation:
    """Queue Acc@1/Acc@5 of an index version on a gold collection (gpu queue, after commit); refused on a collection
    that trained the index's encoder (:func:`webapp.training.held_out.check_held_out`)."""
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
    Evaluation.objects.filter(pk=evaluation_id, state=Evaluation.State.QUEUED).update(
        state=Evaluation.State.FAILED, error=str(exc), finished_at=timezone.now()
    )


def run_evaluation(evaluation_id: int) -> str:
    """The task body: idempotent (an ended evaluation is not run again); failures are recorded with the reason.
    Run under the evaluation's lease (webapp.core.lease): a worker that dies leaves it to the sweep of abandoned
    jobs, which fails it, instead of "running" for ever."""
    from webapp.core.lease import JobLease

    with JobLease("evaluation", evaluation_id) as lease:
        if not lease.held:
            logger.warning("evaluation %s: another worker runs it (or the sweep is failing it); left to it", evaluation_id)
            return "taken"
        return _run_leased(evaluation_id)


def _run_leased(evaluation_id: int) -> str:
    from webapp.training.registry import load_linker

    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().select_related("index_version").get(pk=evaluation_id)
        if evaluation.state in (Evaluation.State.SUCCEEDED, Evaluation.State.FAILED):
            return evaluation.state  # a re-delivery after a lost worker finds it running and runs it again
        evaluation.state = Evaluation.State.RUNNING
        evaluation.error = ""  # a note of the sweep that queued it again (webapp.core.sweep)
        evaluation.save(update_fields=["state", "error"])
    try:
        metrics = evaluate_linker(load_linker(evaluation.index_version), evaluation.collection_id)
    except Exception as exc:
        logger.exception("evaluation %s failed", evaluation_id)
        Evaluation.objects.filter(pk=evaluation_id).update(
            state=Evaluation.State.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        return Evaluation.State.FAILED
    Evaluation.objects.filter(pk=evaluation_id).update(
        state=Evaluation.State.SUCCEEDED, metrics=metrics, finished_at=timezone.now()
    )
    return Evaluation.State.SUCCEEDED
