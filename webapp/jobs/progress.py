"""Progress of a running job, written where other connections can see it while the import runs.

An import is one transaction: a row updated inside it stays invisible to every other connection until the
import commits, so a progress bar fed that way would stand still and then jump to the end. The recorder
therefore writes through a database connection of its own (autocommit, not the one the import's
transaction holds), at most once per ``every`` seconds so a fast import is not slowed by its own reports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from webapp.jobs.models import Job

logger = logging.getLogger(__name__)

EVERY_S = 1.0


class ProgressRecorder:
    """A ``progress(done, total)`` callback (the importers', a runner's) that writes ``Job.progress``.

    Use it as a context manager so its connection is closed. The first report is written at once, later
    ones when ``every`` seconds have passed since the last write; :meth:`flush` writes the latest.
    """

    def __init__(self, job_id: int, *, every: float = EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.job_id = job_id
        self.every = every
        self.clock = clock
        self.done = 0
        self.total: int | None = None
        self.writes = 0
        self._last: float | None = None
        self._written: tuple[int, int | None] | None = None
        self._connection: BaseDatabaseWrapper | None = None

    def __call__(self, done: int, total: int | None = None) -> None:
        self.done, self.total = done, total
        now = self.clock()
        if self._last is not None and now - self._last < self.every:
            return
        self._last = now
        self._write()

    def flush(self) -> None:
        """Write the latest report if the last write missed it."""
        if self._written != (self.done, self.total):
            self._write()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> ProgressRecorder:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _write(self) -> None:
        table = Job._meta.db_table
        try:
            if self._connection is None:
                # Not connections[alias]: that one is this thread's, the connection the import's transaction is on.
                self._connection = connections.create_connection(DEFAULT_DB_ALIAS)
            with self._connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {self._connection.ops.quote_name(table)} SET progress = %s, progress_total = %s "
                    "WHERE id = %s AND state = %s",
                    [self.done, self.total, self.job_id, Job.State.RUNNING.value],
                )
        except DatabaseError as exc:
            # Progress is a courtesy: a job must not fail because its report could not be written.
            logger.warning("job %s: progress not written: %s", self.job_id, exc)
            return
        self._written = (self.done, self.total)
        self.writes += 1
