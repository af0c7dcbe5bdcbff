"""What curation tells the apps above it, so that it need not import them (the layers contract, pyproject.toml).

A curator's decision may start a retraining run (training's retrain policy, :mod:`webapp.training.loop`). Training
sits above curation: it learns from curation's decisions, so curation may not call into it. Curation announces
instead, and training listens (its app's ``ready`` connects the receiver).
"""

from __future__ import annotations

import logging

from django.dispatch import Signal

from webapp.curation.models import Decision

__all__ = ["announce_decision", "decision_committed"]

log = logging.getLogger(__name__)

# Sent (sender: Decision) once a curator's decision (with its propagation to identical mentions) has committed: ``dictionary_id``, the
# dictionary of the decided mention's collection (None for a collection without one).
decision_committed = Signal()


def announce_decision(dictionary_id: int | None) -> None:
    """Send :data:`decision_committed` (the decision service registers this with ``transaction.on_commit``).

    The decision is committed already, so no receiver may fail it: a receiver's error is logged, not raised."""
    for receiver, result in decision_committed.send_robust(sender=Decision, dictionary_id=dictionary_id):
        if isinstance(result, Exception):
            log.error("after a decision of dictionary %s: %r failed", dictionary_id, receiver, exc_info=result)
