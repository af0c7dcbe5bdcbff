from typing import Any

from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Encoders and index versions"

    def ready(self) -> None:
        # Every Celery worker sweeps stale training runs in a thread of its own (webapp.training.sweeper).
        from celery.signals import worker_ready, worker_shutdown

        from webapp.curation.signals import decision_committed
        from webapp.training.releases import carry_over_on_promotion
        from webapp.training.signals import index_promoted
        from webapp.training.sweeper import start_in_worker, stop_in_worker

        worker_ready.connect(start_in_worker, dispatch_uid="training-stale-run-sweeper-start")
        worker_shutdown.connect(stop_in_worker, dispatch_uid="training-stale-run-sweeper-stop")
        index_promoted.connect(carry_over_on_promotion, dispatch_uid="training-carry-over-on-promotion")
        # Curation sits below training and announces its decisions; the retrain policy listens (webapp.curation.signals).
        decision_committed.connect(retrain_after_decision, dispatch_uid="training-retrain-after-decision")


def retrain_after_decision(sender: Any, *, dictionary_id: int | None, **kwargs: Any) -> None:
    """A committed decision may reach its dictionary's retrain threshold (:func:`webapp.training.loop.after_decision`)."""
    # Imported when a decision commits, not at start-up: the loop imports torch (about 3 s), which a manage.py
    # command or a worker that never sees a decision need not pay.
    from webapp.training.loop import after_decision

    after_decision(dictionary_id)
