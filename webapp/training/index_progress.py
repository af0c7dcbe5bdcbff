"""A running index build's live record: the linker's progress reports -> the IndexVersion row, and the cancel flag.

Written the way every job writes its own (webapp.jobs.progress): through a database connection of its own, so that a
build run inside a transaction still shows its progress, at most once per ``every`` seconds within a phase (a new
phase is written at once). The same reports read ``cancel_requested`` (on the builder's own connection, which sees
its own rows), and :class:`IndexBuildCancelled` unwinds the build from the next report after an admin asked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from webapp.linking.models import IndexVersion

logger = logging.getLogger(__name__)

EVERY_S = 1.0

# linker.build.BUILD_PHASES -> IndexVersion.Phase
LINKER_PHASES = {
    "tf-idf": IndexVersion.Phase.TFIDF,
    "encode": IndexVersion.Phase.ENCODING,
    "first-stage": IndexVersion.Phase.FIRST_STAGE,
    "faiss": IndexVersion.Phase.FAISS,
}

# ``echo(phase, done, total)``: every report, unthrottled (``manage.py build_index`` prints from it).
Echo = Callable[[str, int, int | None], None]


class IndexBuildCancelled(Exception):
    """An admin cancelled the build (or its row is no longer ``building``); ``where`` says how far it had come."""

    def __init__(self, where: str) -> None:
        super().__init__(f"cancelled {where}")
        self.where = where


class IndexProgressRecorder:
    """``recorder(phase, done, total)``: writes the build's progress, and raises :class:`IndexBuildCancelled` once an
    admin has asked it to stop. Use it as a context manager so that its connection is closed."""

    def __init__(self, index_id: int, *, every: float | None = None, clock: Callable[[], float] = time.monotonic,
                 echo: Echo | None = None) -> None:
        self.index_id = index_id
        self.every = EVERY_S if every is None else every
        self.clock = clock
        self.echo = echo
        self.phase = ""
        self.done = 0
        self.total: int | None = None
        self.writes = 0
        self._last: float | None = None
        self._written_phase: str | None = None
        self._connection: BaseDatabaseWrapper | None = None

    def __call__(self, phase: str, done: int = 0, total: int | None = None) -> None:
        phase = str(phase)  # a Phase member's value
        self.phase, self.done, self.total = phase, done, total
        if self.echo is not None:
            self.echo(phase, done, total)
        now = self.clock()
        if phase == self._written_phase and self._last is not None and now - self._last < self.every:
            return
        self._last = now
        self.check()
        self._write()

    def check(self) -> None:
        """Raise :class:`IndexBuildCancelled` when an admin asked the build to stop."""
        row = IndexVersion.objects.filter(pk=self.index_id).values_list("state", "cancel_requested").first()
        if row is None:
            raise IndexBuildCancelled("by deletion of the index version")
        state, cancel = row
        if cancel or state != IndexVersion.State.BUILDING:
            raise IndexBuildCancelled(self.where())

    def where(self) -> str:
        """"while encoding names, after 1,536 of 76,012 names" (how far the build had come)."""
        label = IndexVersion.Phase(self.phase).label.lower() if self.phase in IndexVersion.Phase.values else self.phase
        if self.phase in IndexVersion.COUNTED_PHASES and self.total:
            return f"while {label}, after {self.done:,} of {self.total:,} names"
        return f"while {label}" if label else "before it started"

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> IndexProgressRecorder:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _write(self) -> None:
        table = IndexVersion._meta.db_table
        first = self.writes == 0
        try:
            if self._connection is None:
                # Not connections[alias]: that one is this thread's, perhaps inside a transaction of the caller's.
                self._connection = connections.create_connection(DEFAULT_DB_ALIAS)
            with self._connection.cursor() as cursor:
                # The database's clock, as the page measures the rate and the time left against it. The first write
                # of a build (a build started again after its worker died too) restarts its clock.
                cursor.execute(
                    f"UPDATE {self._connection.ops.quote_name(table)} SET phase = %s, progress = %s, progress_total = %s, "
                    "progress_at = NOW(), "
                    "phase_started_at = CASE WHEN %s OR phase <> %s OR phase_started_at IS NULL THEN NOW() "
                    "ELSE phase_started_at END, "
                    "started_at = CASE WHEN %s OR started_at IS NULL THEN NOW() ELSE started_at END "
                    "WHERE id = %s AND state = %s",
                    [self.phase, self.done, self.total, first, self.phase, first, self.index_id,
                     IndexVersion.State.BUILDING.value],
                )
                # The build's job shows the same (the jobs page, /api/jobs/).
                cursor.execute(
                    "UPDATE jobs_job SET progress = %s, progress_total = %s, progress_note = %s WHERE id = "
                    f"(SELECT build_id FROM {self._connection.ops.quote_name(table)} WHERE id = %s) AND state = 'running'",
                    [self.done, self.total, self.where()[:200], self.index_id],
                )
        except DatabaseError as exc:
            # Progress is a courtesy: a build must not fail because its report could not be written.
            logger.warning("index %s: progress not written: %s", self.index_id, exc)
            return
        self._written_phase = self.phase
        self.writes += 1


class ConsoleProgress:
    """``echo`` for ``manage.py build_index``: a line when a phase starts, then every ``every`` seconds while names are
    encoded, and when they are all done ("encoding names: 34,560 / 76,012 (45%), 118 names/s, about 5 min 51 s
    left")."""

    def __init__(self, write: Callable[[str], None], every: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.write = write
        self.every = every
        self.clock = clock
        self.phase = ""
        self.phase_started = 0.0
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        now = self.clock()
        counted = phase in IndexVersion.COUNTED_PHASES and total
        if phase != self.phase:
            self.phase, self.phase_started, self.last = phase, now, now
            if not counted:
                self.write(f"{IndexVersion.Phase(phase).label.lower()}…" if phase in IndexVersion.Phase.values else phase)
                return
        elif not counted or (now - self.last < self.every and done < (total or 0)):
            return
        self.last = now
        assert total
        self.write(progress_line(IndexVersion.Phase(phase).label.lower(), done, total, now - self.phase_started))


def progress_line(label: str, done: int, total: int, seconds: float) -> str:
    rate = done / seconds if seconds > 0 and done else None
    line = f"{label}: {done:,} / {total:,} ({100 * done // total}%)"
    if rate:
        line += f", {rate:,.0f} names/s"
        if done < total:
            line += f", about {duration((total - done) / rate)} left"
    return line


def duration(seconds: float) -> str:
    """12 s, 5 min 51 s, 1 h 04 min."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
