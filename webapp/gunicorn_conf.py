"""gunicorn's settings for the workbench's web server: ``gunicorn webapp.wsgi --config python:webapp.gunicorn_conf``
(the launcher, bench/load.py and the Docker image all start it so).

Its one job is the metrics of several workers (webapp.core.metrics): each worker writes its request-latency samples
to files in ``PROMETHEUS_MULTIPROC_DIR`` and a scrape of /metrics, answered by any worker, adds them all up. The
folder is ``<data folder>/metrics/<bind address>`` (``var/metrics/127.0.0.1-8000``; ``EMBEDDED_DATA_DIR`` moves it)
unless the variable is set, and it is emptied when the server starts: samples of an earlier server's workers would be
counted again. Two web servers must therefore not share one folder (two on one data folder differ by their address).

The master sets the variable when it starts, before it forks the workers and before they load the app, so it is set
before any worker imports prometheus-client (which reads it once, on import). This module must not import Django or
prometheus-client at the top.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from webapp import embedded

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def metrics_dir(bind: list[str]) -> Path:
    """PROMETHEUS_MULTIPROC_DIR where set, else a folder of the data folder named after the addresses served."""
    given = os.environ.get(MULTIPROC_ENV, "").strip()
    if given:
        return Path(given)
    name = "_".join(re.sub(r"[^A-Za-z0-9.]+", "-", address).strip("-") for address in bind) or "default"
    return embedded.data_dir() / "metrics" / name


def prepare_metrics_dir(folder: Path) -> None:
    """An empty folder for this server's workers' samples."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)


def on_starting(server: Any) -> None:
    """gunicorn's hook, in the master before the workers start: the workers inherit the variable."""
    folder = metrics_dir(list(server.cfg.bind))
    prepare_metrics_dir(folder)
    os.environ[MULTIPROC_ENV] = str(folder)


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn's hook: a worker ended; its live gauges (none today) must stop counting."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
