"""Work beside the caller on a second core, where torch keeps to one thread.

A web process limits torch to one thread per request (``LINKER_WEB_THREADS``), so one mention's link leaves the
machine's other core idle. Transformer passes that do not wait for each other (the mention's context beside the
retriever's search; two halves of the candidates' names) then run at once: torch and faiss release the GIL.
Where torch already has several threads (training, evaluation, batch suggestions), the work runs inline: two
parallel regions would contend for the same cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

import torch

__all__ = ["beside", "in_parallel"]

P = ParamSpec("P")
T = TypeVar("T")

# One thread per concurrent caller: a gunicorn worker serves 4 request threads.
_POOL_SIZE = 4
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    # A forked child (a Celery prefork worker, a gunicorn worker of a preloaded app) inherits the executor but not
    # its threads: work given to it would wait forever. The child starts its own on first use.
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="linker-beside")
        return _pool


def in_parallel() -> bool:
    """Whether :func:`beside` runs its work on another core (torch keeps to one thread), rather than inline."""
    return torch.get_num_threads() == 1


def beside(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
    """``fn(*args, **kwargs)`` on a pool thread when torch keeps to one thread, else here and now; its result
    (or its exception) from ``.result()`` either way. ``fn`` must not wait for other work given to the pool."""
    if in_parallel():
        return _executor().submit(fn, *args, **kwargs)
    done: Future[T] = Future()
    try:
        done.set_result(fn(*args, **kwargs))
    except BaseException as exc:  # re-raised by .result(), as the pool's future would
        done.set_exception(exc)
    return done
