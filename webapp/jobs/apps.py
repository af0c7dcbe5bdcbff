from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"
    verbose_name = "Background jobs"

    def ready(self) -> None:
        # Every Celery worker (and the launcher) runs the one sweep of lost jobs in a thread of its own.
        from celery.signals import worker_ready, worker_shutdown

        from webapp.jobs.sweeper import start_in_worker, stop_in_worker

        worker_ready.connect(start_in_worker, dispatch_uid="jobs-sweeper-start")
        worker_shutdown.connect(stop_in_worker, dispatch_uid="jobs-sweeper-stop")
