from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Encoders and index versions"

    def ready(self) -> None:
        # Every Celery worker sweeps stale training runs in a thread of its own (webapp.training.sweeper).
        from celery.signals import worker_ready, worker_shutdown

        from webapp.training.signals import index_promoted
        from webapp.training.sweeper import start_in_worker, stop_in_worker
        from webapp.vocab.releases import carry_over_on_promotion

        worker_ready.connect(start_in_worker, dispatch_uid="training-stale-run-sweeper-start")
        worker_shutdown.connect(stop_in_worker, dispatch_uid="training-stale-run-sweeper-stop")
        # Connected here, not in webapp.vocab: training sits above vocab in the layers (README, "Layers").
        index_promoted.connect(carry_over_on_promotion, dispatch_uid="vocab-carry-over-on-promotion")
