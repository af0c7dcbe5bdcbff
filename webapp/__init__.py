"""The Django project: settings, URLs, the Celery app and the apps (core, vocab, corpus)."""

from webapp.celery import app as celery_app

__all__ = ["celery_app"]
