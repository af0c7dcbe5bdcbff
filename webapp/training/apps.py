from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Encoders and index versions"

    def ready(self) -> None:
        # Every Celery worker sweeps stale training runs in a thread of its own (webapp.training.sweeper).
        from celery.signals import worker_ready, worker_shutdown

        from webapp.training.releases import carry_over_on_promotion
        from webapp.training.signals import index_promoted
        from webapp.training.sweeper import start_in_worker, stop_in_worker

        worker_ready.connect(start_in_worker, dispatch_uid="training-stale-run-sweeper-start")
        worker_shutdown.connect(stop_in_worker, dispatch_uid="training-stale-run-sweeper-stop")
        index_promoted.connect(carry_over_on_promotion, dispatch_uid="training-carry-over-on-promotion")
