"""Health of the parts the workbench needs: the database, the broker, and a Celery worker that answers.

The checks take up to a second (the worker ping waits that long for answers) and hold a web thread
meanwhile, so :func:`cached_checks` answers from Django's cache for ``HEALTHZ_CACHE_SECONDS``: sixteen load
balancers probing at once cost one ping, not sixteen threads kept from serving pages.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import connection

# Per host: with a cache every host shares (CACHE_URL), one host's answer must not stand for another's.
CACHE_KEY = f"healthz:checks:{socket.gethostname()}"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    ms: float


def _timed(name: str, fn) -> Check:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    try:
        detail = fn()
        ok = True
    except Exception as exc:  # a health check reports every failure, it never raises
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return Check(name, ok, detail, round((time.perf_counter() - start) * 1000, 1))


def _database() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT version()")
        return str(cur.fetchone()[0]).split(" on ")[0]


def _broker() -> str:
    from webapp.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return conn.as_uri()


def _worker() -> str:
    from webapp.celery import app

    replies = app.control.ping(timeout=1.0) or []
    if not replies:
        raise RuntimeError("no Celery worker answered a ping within 1 s")
    return ", ".join(sorted(name for reply in replies for name in reply))


def run_checks() -> list[Check]:
    return [_timed("database", _database), _timed("broker", _broker), _timed("worker", _worker)]


_refreshing = threading.Lock()
# This process's latest answer and when it was taken, for probes that arrive while another thread refreshes.
_last: tuple[float, list[Check]] | None = None
# How much older than HEALTHZ_CACHE_SECONDS that answer may be: the checks' own time limits (a 2 s broker
# connection, a 1 s ping) and a little more. An older one (a process idle for an hour) is not served.
STALE_GRACE_S = 5.0


def cached_checks() -> list[Check]:
    """The checks, at most ``HEALTHZ_CACHE_SECONDS`` old; one thread of a process runs them when they expire.

    Probes arriving while that thread runs them get the previous answer (a refresh old at most) instead of
    waiting, or, on a cold start, wait for it rather than ping too. Failures are cached too: a dead worker
    is exactly when the probes would otherwise pile up on one-second pings.
    """
    global _last
    ttl = settings.HEALTHZ_CACHE_SECONDS
    if ttl <= 0:
        return run_checks()
    checks: list[Check] | None = cache.get(CACHE_KEY)
    if checks is not None:
        return checks
    previous = _last
    recent = previous is not None and time.monotonic() - previous[0] < ttl + STALE_GRACE_S
    if not _refreshing.acquire(blocking=not recent):
        assert previous is not None
        return previous[1]
    try:
        checks = cache.get(CACHE_KEY)  # another thread or process may have just refreshed it
        if checks is None:
            checks = run_checks()
            cache.set(CACHE_KEY, checks, ttl)
        _last = (time.monotonic(), checks)
        return checks
    finally:
        _refreshing.release()
