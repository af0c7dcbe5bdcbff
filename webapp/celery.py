"""The Celery app: queues ``default`` (imports, linking) and ``gpu`` (training, index builds).

Tasks live in the top-level ``tasks`` package, take ids, and call service functions.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("gpu"))
app.conf.task_routes = {"tasks.training.*": {"queue": "gpu"}, "tasks.indexing.*": {"queue": "gpu"}}
# Explicit task modules: the tasks package sits outside the Django apps, so autodiscovery would miss it.
app.conf.include = ["tasks.health", "tasks.imports", "tasks.indexing", "tasks.curation", "tasks.training"]
