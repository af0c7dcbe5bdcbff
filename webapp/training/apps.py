from typing import Any

from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Encoders and index versions"

    def ready(self) -> None:
        from webapp.curation.signals import decision_committed
        from webapp.training.job_kinds import register_kinds
        from webapp.training.signals import index_promoted

        register_kinds()  # training runs, evaluations and word-vector uploads are jobs (webapp.jobs)
        index_promoted.connect(carry_over_on_promotion, dispatch_uid="training-carry-over-on-promotion")
        # Curation sits below training and announces its decisions; the retrain policy listens (webapp.curation.signals).
        decision_committed.connect(retrain_after_decision, dispatch_uid="training-retrain-after-decision")


def carry_over_on_promotion(sender: Any, **kwargs: Any) -> None:
    """A promoted index may be over a newer release: carry the curator synonyms over
    (:func:`webapp.training.releases.carry_over_on_promotion`)."""
    # Imported when an index is promoted, not at start-up: releases reach the index builds, which import torch
    # (and faiss, scikit-learn); django.setup() in an export or a web process imports none of them (issue #45).
    from webapp.training.releases import carry_over_on_promotion as carry_over

    carry_over(sender, **kwargs)


def retrain_after_decision(sender: Any, *, dictionary_id: int | None, **kwargs: Any) -> None:
    """A committed decision may reach its dictionary's retrain threshold (:func:`webapp.training.loop.after_decision`)."""
    # Imported when a decision commits, not at start-up: the loop imports torch (about 3 s), which a manage.py
    # command or a worker that never sees a decision need not pay.
    from webapp.training.loop import after_decision

    after_decision(dictionary_id)
