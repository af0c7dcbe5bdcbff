"""Leases on running jobs: whoever runs a job holds a PostgreSQL advisory lock on it for as long as it runs.

A job's row says ``running`` from the moment a worker takes it until it ends. If the worker dies first (a
SIGKILL, the kernel's out-of-memory killer, the machine going down) nothing writes the end, and the row would
say ``running`` for ever. Jobs that run for hours on a GPU beat a heartbeat for this (webapp.jobs.models); the others need none: their
runner holds a session-level advisory lock keyed on the job, through a connection of its
own (not the one a job's long transaction is on), taken before the row is marked running and kept until the
job has ended. PostgreSQL releases a session's locks the moment its connection closes, and a killed process's
connections close with it. So a running job whose lease nobody holds has lost its runner, at once and with no
clock to trust. :func:`webapp.jobs.sweep.fail_lost_jobs` fails such jobs.

Both sides *try* the lock: a runner that cannot take it within a few seconds leaves the job to whoever holds it (a
duplicate delivery of the same message); one held only for a moment (the sweep failing the job, a try that is
ending) is waited for. The sweep takes the lease itself before failing a job, so that no runner can take the job
up between the sweep's look and its write.

Keys are (namespace, job id): one namespace for every job (all kinds share the job table's ids), distinct from
the project's other advisory locks (imports' per-collection lock, the decisions' per-text lock, the index build lock).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from types import TracebackType

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

WAIT_S = 5.0  # how long a runner tries for a lease another process holds before leaving the job to it

# The lock's first key: four ASCII letters, a positive 32-bit integer.
NAMESPACE = 0x4A4F4253  # "JOBS"


def _keys(job_id: int) -> list[int]:
    return [NAMESPACE, job_id & 0x7FFFFFFF]


class JobLease:
    """The lease on one job, held through a connection of its own from :meth:`acquire` to :meth:`release`.

    Use it as a context manager; ``held`` says whether the lease was taken (False: another process holds it).
    """

    def __init__(self, job_id: int, wait_s: float | None = None) -> None:
        self.job_id = job_id
        self.wait_s = WAIT_S if wait_s is None else wait_s
        self.held = False
        self._connection: BaseDatabaseWrapper | None = None

    def acquire(self) -> bool:
        """Take the lease, trying for up to ``wait_s`` seconds: another holder may be about to let go (the sweep
        failing the job, a try that is ending); one that keeps it runs the job, and this one leaves it."""
        # A connection of its own: the job's own work may run one long transaction on this thread's connection,
        # and an error there must not drop the lease (nor a lease's end commit the job's work).
        self._connection = connections.create_connection(DEFAULT_DB_ALIAS)
        deadline = time.monotonic() + self.wait_s
        with self._connection.cursor() as cursor:
            while True:
                cursor.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", _keys(self.job_id))
                self.held = bool(cursor.fetchone()[0])
                if self.held or time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
        if not self.held:
            self.release()
        return self.held

    def release(self) -> None:
        """End the lease. Unlocked explicitly before the connection closes: a closed connection's server process
        lets go of its locks a moment after the client has gone, and the next look must not still see them."""
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                if self.held:
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", _keys(self.job_id))
            except DatabaseError:  # a connection the database already dropped: its locks went with it
                logger.debug("job %s: unlocking the lease failed", self.job_id, exc_info=True)
            finally:
                try:
                    connection.close()
                except DatabaseError:
                    logger.debug("job %s: closing the lease's connection failed", self.job_id, exc_info=True)
        self.held = False

    def __enter__(self) -> JobLease:
        self.acquire()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.release()


def leased(job_ids: Iterable[int]) -> set[int]:
    """Which of these jobs some session of this database holds the lease of (read from ``pg_locks``)."""
    ids = [job_id & 0x7FFFFFFF for job_id in job_ids]
    if not ids:
        return set()
    with connection.cursor() as cursor:
        # Two-key advisory locks show as classid = key 1, objid = key 2, objsubid = 2; pg_locks lists every
        # database's locks, and another database (a test's, a second workbench) may use the same ids.
        cursor.execute(
            "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND classid = %s::bigint::oid AND objid = ANY(%s::bigint[]::oid[])",
            [NAMESPACE, ids],
        )
        return {int(row[0]) for row in cursor.fetchall()}


def try_take_over(job_id: int) -> bool:
    """Take the lease of a job in the current transaction of this thread's connection, if nobody holds it; it
    is released when that transaction ends (the sweep marks the job ended meanwhile)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s::int, %s::int)", _keys(job_id))
        return bool(cursor.fetchone()[0])
