"""A trained linker's confidence: its calibration fitted after the run, before the index is recorded.

The calibration (:mod:`linker.calibration`) is fitted on what a run holds out and what curators said has no
concept: the gold mentions of the run's evaluation collection (right or wrong at rank 1, ranked as the linker
serves them) and the mentions curators marked NIL up to the run's snapshot (always wrong; they set the NIL
threshold). It never changes a ranking, only the confidence shown beside the top-1 and the auto-accept it
allows (:mod:`webapp.curation.services.auto_accept`). A run without an evaluation collection, or with too few
examples, gets no calibration and says why in its log: its suggestions show no confidence.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webapp.curation.models import Decision
from webapp.curation.teaching import teaching_decisions
from webapp.training.models import TrainingRun

if TYPE_CHECKING:
    from linker.rerank import MentionSpan

logger = logging.getLogger(__name__)

AUTO_ACCEPT_GRID = (0.8, 0.9, 0.95, 0.98, 0.99)

# Methods whose artifact is a linker (the others make word vectors, a base encoder or a tagger).
LINKER_METHODS = (TrainingRun.Method.BIOSYN, TrainingRun.Method.BNE, TrainingRun.Method.DAN, TrainingRun.Method.LATTE)


def nil_decisions(run: TrainingRun) -> list[Decision]:
    """The curators' NIL decisions in the run's dictionary up to its snapshot (not undone)."""
    if run.snapshot_at is None:
        return []
    return list(
        Decision.objects.filter(
            teaching_decisions(), action=Decision.Action.NIL, undone_at__isnull=True, created_at__lte=run.snapshot_at,
            document__collection__dictionary=run.dictionary,
        ).select_related("document", "mention").order_by("created_at", "id")
    )


def _span(decision: Decision) -> MentionSpan:
    """The NIL decision's mention as the linker reads it in its document: its offsets while the mention still
    has the decided text, else its first occurrence."""
    from linker.rerank import MentionSpan

    m = decision.mention
    if m is not None and m.text == decision.mention_text:
        return MentionSpan(m.text, m.start, m.end)
    return MentionSpan(decision.mention_text)


def calibrate_run(run: TrainingRun, folder: Path, say: Any) -> dict[str, Any]:
    """Fit and save the calibration of the linker a run wrote into ``folder``; returns its figures ({} and a
    line said when there is none). ``say`` takes a line for the run's log."""
    if run.method not in LINKER_METHODS:
        return {}
    if run.eval_collection_id is None:
        say("no calibration: no evaluation collection to fit the confidence on")
        return {}
    from linker.calibration import (
        fit_calibration,
        labelled_examples,
        nil_examples,
        precision_above,
        reliability,
    )
    from linker.linker import Linker
    from linker.protocol import build_eval_set
    from webapp.linking.devices import batch_device
    from webapp.training.dataset import gold_documents
    from webapp.training.evaluation import _ranked_in_context

    linker = Linker.load(folder, device=batch_device())
    docs = gold_documents([run.eval_collection_id])
    eval_set = build_eval_set(docs, linker.table, linker.preprocessor)
    queries = [m.queries for m in eval_set]
    if linker.reranker is not None:
        ranked = _ranked_in_context(linker, eval_set, {d.pmid: d.text for d in docs}, 20)
    else:
        ranked = linker.link_queries(queries, 20)
    normalize = linker.preprocessor.normalize
    examples = labelled_examples(queries, ranked, [m.gold_parts for m in eval_set], normalize)
    nils = nil_decisions(run)
    nil_queries = [linker.queries_for([d.mention_text], d.document.text)[0] for d in nils]
    # Scored as the gold examples are: in their document by the re-ranker where the linker has one (its scores are
    # on another scale than the retriever's; mixing the two taught the calibration that a high score means NIL).
    nil_ranked = [linker.ranked_as_served([_span(d)], d.document.text, 20, queries=[q])[0] for d, q in zip(nils, nil_queries, strict=True)]
    examples += nil_examples(nil_queries, nil_ranked, normalize)
    try:
        calibration = fit_calibration(examples, scored_by=linker.ranked_by)
    except ValueError as exc:
        say(f"no calibration: {exc}")
        return {}
    calibration.save(folder)
    fit = reliability([calibration.probability(e.features) for e in examples], [e.right for e in examples])

    probabilities = [calibration.probability(e.features) for e in examples]
    figures = {**calibration.fitted_on, "nil_threshold": calibration.nil_threshold, "ece": fit.get("ece", 0.0),
               "brier": fit.get("brier", 0.0), "collection": str(run.eval_collection),
               # What auto-accepting at each threshold did on these examples (in-sample: a guide, not a promise).
               "auto_accept": [precision_above(probabilities, [e.right for e in examples], t) for t in AUTO_ACCEPT_GRID]}
    say(f"calibrated on {len(eval_set)} gold mentions of {run.eval_collection} and {len(nils)} NIL decisions: "
        f"expected calibration error {figures['ece']:.3f}, NIL below {calibration.nil_threshold:.2f}")
    return figures
