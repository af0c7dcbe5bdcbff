"""Health of the parts the workbench needs: the database, the broker, and a Celery worker that answers."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import connection


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
