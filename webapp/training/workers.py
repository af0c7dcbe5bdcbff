"""Where a training run will train: the workers that take the training queue, and the device each one has.

Training tasks go to the ``gpu`` queue (``webapp.celery``'s routes; ``TASK_QUEUE_OVERRIDE`` sends every task to
another). The name says what the queue is for, not what takes it: the worker that ``scripts/run`` starts takes
``default`` and ``gpu`` on whatever machine it runs on, and trains on that machine's CPU when it has no CUDA
GPU; the compose file's ``worker-gpu`` has one. The worker records the device it uses when it starts a run
(:meth:`TrainingRun.start`); before that, :func:`placement` says what is known: which workers take the queue
(asked through the broker, cached for :data:`CACHE_S`), whether one of them runs on this machine (whose CUDA
the web process can see), and which device each other one's last run used.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from webapp.training.models import TrainingRun

logger = logging.getLogger(__name__)

CACHE_KEY = "training:queue-workers"
CACHE_S = 15
INSPECT_TIMEOUT_S = 0.5
UNKNOWN = "unknown"


@dataclass(frozen=True)
class QueueWorker:
    name: str  # the Celery node name, e.g. worker@host
    host: str
    local: bool  # on the machine that serves this page
    cuda: bool | None  # this machine's CUDA for a local worker; for another, the device of its last run (None: none yet)


@dataclass(frozen=True)
class Placement:
    """What the page says about where a queued run will train."""

    queue: str
    workers: list[QueueWorker] | None  # None: the broker did not say
    text: str
    cpu: bool  # it will (as far as anyone can tell) train on a CPU


def training_queue() -> str:
    """The queue training tasks are sent to."""
    from webapp.celery import app

    override = getattr(settings, "TASK_QUEUE_OVERRIDE", "")
    return override or str(app.conf.task_routes["tasks.training.*"]["queue"])


def local_cuda() -> bool:
    """Whether this machine has a CUDA GPU that torch can use (torch is loaded by the linker already)."""
    import torch

    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver: no GPU to train on either
        return False


def _queue_workers(queue: str) -> list[str] | None:
    """The names of the workers consuming ``queue``, or None when the broker could not be asked."""
    found = cache.get(CACHE_KEY)
    if found is not None:
        return None if found == UNKNOWN else found.get(queue, [])
    from webapp.celery import app

    try:
        replies = app.control.inspect(timeout=INSPECT_TIMEOUT_S).active_queues() or {}
    except Exception:
        logger.warning("could not ask the broker which workers take which queue", exc_info=True)
        cache.set(CACHE_KEY, UNKNOWN, CACHE_S)  # a broker that is down is not asked by every page view
        return None
    by_queue: dict[str, list[str]] = {}
    for name, queues in replies.items():
        for q in queues or ():
            by_queue.setdefault(str(q.get("name", "")), []).append(name)
    cache.set(CACHE_KEY, by_queue, CACHE_S)
    return by_queue.get(queue, [])


def queue_workers(queue: str) -> list[QueueWorker] | None:
    names = _queue_workers(queue)
    if names is None:
        return None
    here = socket.gethostname()
    out = []
    for name in sorted(names):
        host = name.split("@", 1)[-1]
        if host == here:
            out.append(QueueWorker(name, host, True, local_cuda()))
            continue
        last = (TrainingRun.objects.filter(worker=host).exclude(device="").order_by("-started_at")
                .values_list("device", flat=True).first())
        out.append(QueueWorker(name, host, False, None if last is None else last.startswith("cuda")))
    return out


def placement(asked_device: str = "", lead: str = "Queued for a worker of the {queue} queue") -> Placement:
    """Where a run queued now (or waiting in the queue) will train, in a sentence that starts with ``lead``;
    ``asked_device``: the device the run's params name ("": the worker's choice)."""
    queue = training_queue()
    workers = queue_workers(queue)
    lead = lead.format(queue=queue)
    cpu = False
    if workers is None:
        text = (f"{lead}. It trains on that worker's GPU where it has one, else on its CPU; the device is shown "
                "here once a worker starts it.")
    elif not workers:
        text = f"{lead}; no worker takes that queue now, so the run waits until one starts (scripts/run starts one)."
    elif all(w.local for w in workers):
        names = ", ".join(w.name for w in workers)
        cpu = not workers[0].cuda
        text = (f"{lead}: {names} on this machine takes it. " + (
            "This machine has no GPU (CUDA), so the run will train on the CPU." if cpu else "It will train on its GPU."))
    else:
        said = []
        for w in workers:
            if w.local:
                said.append(f"{w.name} (this machine: {'a GPU' if w.cuda else 'no GPU'})")
            elif w.cuda is None:
                said.append(f"{w.name} (device unknown until it runs one)")
            else:
                said.append(f"{w.name} (its last run trained on {'a GPU' if w.cuda else 'the CPU'})")
        cpu = all(w.cuda is False for w in workers)
        text = (f"{lead}: {', '.join(said)}; the first free one takes it"
                + (". None has a GPU, so the run will train on the CPU." if cpu else "."))
    if asked_device.startswith("cuda"):
        text += (" Its parameters ask for a GPU" + (", which no worker of the queue has: it will fail when it starts."
                                                    if cpu else "."))
        cpu = False
    elif asked_device == "cpu":
        text += " Its parameters ask for the CPU."
        cpu = True
    return Placement(queue, workers, text, cpu)


def device_text(run: TrainingRun) -> str:
    """Where a started run trains (or trained): the device its worker recorded; "" for a queued run (see
    :func:`placement`)."""
    if run.device:
        where = "the CPU" if run.device == "cpu" else f"a GPU ({run.device})"
        verb = {TrainingRun.State.RUNNING: "Trains", TrainingRun.State.SUCCEEDED: "Trained"}.get(run.state, "Ran")
        return f"{verb} on {where} of {run.worker or 'an unknown host'}."
    if run.is_finished:
        return "Never started."
    return ""
