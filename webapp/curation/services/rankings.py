"""The active linker's rankings of a document's mentions, kept in this process while the index is unchanged.

A panel view links its mention live, so that a synonym a curator added a moment ago counts; that link is the
largest part of a panel's server time (retrieval, the re-ranker's pass over the mention's context;
bench/RESULTS.md). Curators go through a document mention after mention. So once a panel has linked its mention,
the document's other open mentions are linked together on a background thread (:func:`prefetch_document`, started
once the panel's answer is rendered, so that it does not compete with it), and their panels find their rankings
here (:func:`link_mention`).

A ranking is served only where the current linker would make the very same one: rankings are kept per served linker
object, filed under the mention's text and offsets, the document's text and the number of candidates asked for. The
registry hands out a new linker object whenever the curator names it serves change (the delta's watermark:
:mod:`webapp.linking.registry`) and never changes one it has handed out, so a ranking kept for the linker served
now is current, and the old linker's rankings go with it. The cache only ever saves work, never shows a stale
ranking.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from django.conf import settings

from linker.rerank import MentionSpan
from linker.rerank.results import LinkedMention
from webapp.corpus.models import Mention
from webapp.corpus.windows import window_at
from webapp.curation.models import OPEN_STATUSES
from webapp.linking.registry import ActiveLinker

if TYPE_CHECKING:  # heavy (torch, faiss): imported where the work runs, not when Django loads (issue #45)
    from linker.linker import Linker

__all__ = ["Linking", "PAYOFF", "PrefetchPayoff", "RANKINGS", "RankingCache", "forget_rankings", "link_mention", "link_now",
           "prefetch_document", "wait_for_prefetch"]

log = logging.getLogger(__name__)

# Per served linker: about 200 documents' open mentions. A ranking of 10 candidates with its types takes about 6.5 KB
# (tracemalloc, the CTD MEDIC LATTE linker), so at most about 13 MB; five times that under a project's concept filter.
RANKINGS_KEPT = 2048
PREFETCH_CHUNK = 2  # mentions linked per call: between calls requests come first
PREFETCH_BACKLOG = 2  # documents waiting for the background thread: the newest are the ones a curator is on
PREFETCH_PATIENCE = 1.0  # seconds a chunk waits for this process's requests to stop linking before it gives up


@dataclass(frozen=True)
class Linking:
    """One mention's queries (one per part: abbreviations expanded, composites split) and its ranking."""

    queries: list[str]
    linked: LinkedMention


@dataclass(frozen=True)
class _Span:
    """What linking reads of a mention (a background thread gets these, not model rows)."""

    pk: int
    text: str
    start: int
    end: int


_Key = tuple[int, str, int, int, int, int]  # mention pk, text, start, end, hash(document text), k


@dataclass(frozen=True)
class _Kept:
    linking: Linking
    unread_prefetch: bool  # prefetched, and no panel has read it yet


class RankingCache:
    """Rankings per served linker (dropped with it), least recently used first out; counts how many of the
    prefetched ones a panel went on to read."""

    def __init__(self, size: int = RANKINGS_KEPT) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._per_linker: weakref.WeakKeyDictionary[Linker, OrderedDict[_Key, _Kept]] = weakref.WeakKeyDictionary()
        self.hits = 0
        self.misses = 0
        self.prefetched = 0
        self.prefetched_read = 0

    def get(self, linker: Linker, key: _Key) -> Linking | None:
        with self._lock:
            found = self._find(linker, key)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            if found.unread_prefetch:
                self.prefetched_read += 1
                found = replace(found, unread_prefetch=False)
            self._per_linker[linker][key] = found
            return found.linking

    def has(self, linker: Linker, key: _Key) -> bool:
        """Whether a current ranking is kept under ``key``."""
        with self._lock:
            return self._find(linker, key) is not None

    def _find(self, linker: Linker, key: _Key) -> _Kept | None:
        kept = self._per_linker.get(linker)
        found = kept.get(key) if kept is not None else None
        if kept is None or found is None:
            return None
        kept.move_to_end(key)
        return found

    def put(self, linker: Linker, key: _Key, linking: Linking, prefetched: bool = False) -> None:
        with self._lock:
            kept = self._per_linker.setdefault(linker, OrderedDict())
            kept[key] = _Kept(linking, prefetched)
            kept.move_to_end(key)
            self.prefetched += prefetched
            while len(kept) > self.size:
                kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._per_linker.clear()
            self.hits = self.misses = self.prefetched = self.prefetched_read = 0


class PrefetchPayoff:
    """Whether prefetching pays in this process: of the last rankings prefetched, how many a panel read.

    With many curators deciding at once, synonyms change the index every second or so and most prefetched
    rankings are outdated before anyone reads them (or thrown away as they are made): work that only slows the
    panels being answered (bench/load.py, 20 curators: panel p50 86 -> 114 ms before this was counted). Below
    ``floor`` over a window, only every ``probe_every``-th document is prefetched, which keeps measuring."""

    def __init__(self, cache: RankingCache, window: int = 64, floor: float = 0.2, probe_every: int = 4) -> None:
        self.cache, self.window, self.floor, self.probe_every = cache, window, floor, probe_every
        self.reset()

    def reset(self) -> None:
        self._start = (0, 0)  # (prefetched, read) when the current window began
        self.throttled = False
        self._skipped = 0

    def allows(self) -> bool:
        made, read = self.cache.prefetched, self.cache.prefetched_read
        if made < self._start[0]:  # the cache was cleared
            self._start = (0, 0)
        if made - self._start[0] >= self.window:
            self.throttled = (read - self._start[1]) / (made - self._start[0]) < self.floor
            self._start = (made, read)
        if not self.throttled:
            return True
        self._skipped = (self._skipped + 1) % self.probe_every
        return self._skipped == 0


RANKINGS = RankingCache()
PAYOFF = PrefetchPayoff(RANKINGS)


def forget_rankings() -> None:
    """Drop every kept ranking and what prefetching has measured (tests)."""
    RANKINGS.clear()
    PAYOFF.reset()


def _key(span: _Span, document_text: str, k: int) -> _Key:
    return (span.pk, span.text, span.start, span.end, hash(document_text), k)


def link_now(active: ActiveLinker, mentions: Sequence[Mention], document_text: str, k: int) -> list[Linking]:
    """The mentions of one document linked in their context (their offsets in ``document_text``), now, uncached
    (the background suggestions task: each of its rankings is stored once)."""
    return _link(active.linker, [_Span(m.pk, m.text, m.start, m.end) for m in mentions], document_text, k)


def _link(linker: Linker, spans: Sequence[_Span], document_text: str, k: int) -> list[Linking]:
    contexts = [MentionSpan(s.text, s.start, s.end) for s in spans]
    queries = linker.queries_for([s.text for s in spans], document_text)
    linked = linker.link_in_context(contexts, document_text=document_text, k=k, queries=queries)
    return [Linking(list(q), one) for q, one in zip(queries, linked, strict=True)]


class _Counter:
    """How many requests of this process are linking right now (the prefetch waits for none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def __enter__(self) -> None:
        with self._lock:
            self.value += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.value -= 1


_REQUESTS_LINKING = _Counter()


def link_mention(active: ActiveLinker, mention: Mention, document_text: str, k: int) -> tuple[Linking, bool]:
    """One mention's ranking, and whether it was linked just now: from this process's cache when it was made by the
    linker served now, else linked now (and kept). After a fresh link the caller may set the
    document's other open mentions linking in the background (:func:`prefetch_document`), once its own answer is
    ready: the curator's next panel is most likely one of them."""
    linker = active.linker
    span = _Span(mention.pk, mention.text, mention.start, mention.end)
    key = _key(span, document_text, k)
    found = RANKINGS.get(linker, key)
    if found is not None:
        return found, False
    with _REQUESTS_LINKING:
        (linking,) = _link(linker, [span], document_text, k)
    RANKINGS.put(linker, key, linking)
    return linking, True


# --- the background thread ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    flight: tuple[int, int]  # (index version, document)
    linker: Linker
    spans: tuple[_Span, ...]
    document_text: str
    k: int


class _Prefetcher:
    """One daemon thread working through the latest few documents asked for.

    Only the most recent documents are kept waiting (a curator who skips through documents faster than they are
    linked has left the older ones); a daemon thread, because prefetching is spare work that must never hold up a
    process's exit."""

    def __init__(self, backlog: int = PREFETCH_BACKLOG) -> None:
        self.backlog = backlog
        self._jobs: deque[_Job] = deque()
        self._busy: tuple[int, int] | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job: _Job) -> bool:
        """Queue ``job`` unless its document is queued or being linked already; False then."""
        with self._cond:
            if self._busy == job.flight or any(j.flight == job.flight for j in self._jobs):
                return False
            self._jobs.append(job)
            while len(self._jobs) > self.backlog:
                self._jobs.popleft()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="panel-prefetch", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job = self._jobs.popleft()
                self._busy = job.flight
            try:
                _prefetch(job)
            finally:
                with self._cond:
                    self._busy = None
                    self._cond.notify_all()

    def wait(self, timeout: float) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: not self._jobs and self._busy is None, timeout):
                raise TimeoutError(f"panel prefetch still busy after {timeout} s")

    def forget(self) -> None:
        # A forked child (a Celery prefork worker, a gunicorn worker of a preloaded app) inherits the queue but not
        # the thread: it starts its own on its first prefetch.
        self._jobs.clear()
        self._busy = None
        self._cond = threading.Condition()
        self._thread = None


_PREFETCHER = _Prefetcher()
os.register_at_fork(after_in_child=_PREFETCHER.forget)


def prefetch_document(active: ActiveLinker, mention: Mention, document_text: str, k: int) -> bool:
    """With ``CURATION_PREFETCH`` on, link the open mentions of ``mention``'s document (of a long one, of the part it is
    in) that this process has no current ranking for, on the background thread, the ones after ``mention`` first (the order a curator goes in).
    Which mentions have a kept ranking is asked there, not here. False when no other mention is open,
    that document is being prefetched already, prefetching is off or it does not pay here now
    (:class:`PrefetchPayoff`)."""
    if not settings.CURATION_PREFETCH or not PAYOFF.allows():
        return False
    linker = active.linker
    # Of a long document, the part the curator sees (webapp.corpus.windows), not its 20,000 mentions.
    part = window_at(mention.document, mention.start)
    rows = (Mention.objects.filter(document_id=mention.document_id, status__in=OPEN_STATUSES).exclude(pk=mention.pk)
            .filter(start__gte=part.start, start__lt=part.end)
            .order_by("start", "end", "pk").values_list("pk", "text", "start", "end"))
    spans = [_Span(*row) for row in rows]
    spans = [s for s in spans if s.start >= mention.start] + [s for s in spans if s.start < mention.start]
    if not spans:
        return False
    return _PREFETCHER.submit(_Job((active.index_version_id, mention.document_id), linker, tuple(spans), document_text, k))


def _idle(patience: float = PREFETCH_PATIENCE) -> bool:
    """Wait (at most ``patience`` seconds) until no request of this process is linking: a request's own link comes
    first, and on a busy server the prefetch gives up rather than queue behind every panel."""
    deadline = time.monotonic() + patience
    while _REQUESTS_LINKING.value:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _prefetch(job: _Job) -> None:
    linker = job.linker
    for at in range(0, len(job.spans), PREFETCH_CHUNK):
        if not _idle():
            return
        chunk = [s for s in job.spans[at : at + PREFETCH_CHUNK] if not RANKINGS.has(linker, _key(s, job.document_text, job.k))]
        if not chunk:
            continue
        try:
            linked = _link(linker, chunk, job.document_text, job.k)
        except Exception:  # spare work: a failure here only means those panels link live
            log.exception("prefetching %d mention(s) failed; their panels will link them live", len(chunk))
            return
        # Kept for the linker they were made by: once the served names change, the registry serves another one and
        # these are read no more (counted as prefetched and unread: PrefetchPayoff).
        for span, linking in zip(chunk, linked, strict=True):
            RANKINGS.put(linker, _key(span, job.document_text, job.k), linking, prefetched=True)


def wait_for_prefetch(timeout: float = 60.0) -> None:
    """Block until the prefetches queued are done (tests and benchmarks that need a settled state)."""
    _PREFETCHER.wait(timeout)
