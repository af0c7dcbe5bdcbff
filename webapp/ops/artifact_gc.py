"""What the artifact store may forget: every path a row names is kept, the rest goes after the grace period.

The rows are found as backup finds them (:mod:`webapp.ops.references`: every ``artifact_path`` and ``base_model``
field), with the uploads an unfinished job still reads (each job kind's ``input_path``). The store itself
(:mod:`webapp.artifacts.collect`) removes the manifests outside that set, then the blobs no manifest lists, and this
host's cache of what no manifest lists or nothing used for two weeks, and its uploads no unfinished job reads.
"""

from __future__ import annotations

from django.conf import settings

from webapp.artifacts.collect import Collected, collect_cache, collect_store
from webapp.jobs.kinds import kinds
from webapp.jobs.models import Job
from webapp.jobs.sweep import remove_orphan_uploads
from webapp.ops.references import path_fields

CACHE_UNUSED_S = 14 * 24 * 3600  # a cached copy no process asked for in two weeks: fetched again if it is asked


def referenced_paths() -> set[str]:
    """Every logical path a row holds: artifact folders, base models, and unfinished jobs' uploads."""
    found: set[str] = set()
    for model, name in path_fields():
        found.update(model._base_manager.exclude(**{name: ""}).values_list(name, flat=True).distinct())
    for kind in kinds():
        for row in kind.model().objects.filter(state__in=Job.UNFINISHED_STATES):
            path = kind.input_path(row)
            if path:
                found.add(path)
    return found


def collect_artifacts(store: bool = True, cache: bool = True) -> Collected:
    """The store's garbage (when ``store``) and this host's cache (when ``cache``); what went, line by line."""
    grace_s = settings.ARTIFACT_GC_GRACE_HOURS * 3600
    done = collect_store(referenced_paths(), grace_s) if store else Collected()
    if cache:
        # This host's copies, and its uploads that a worker on another host has imported (no unfinished job names them).
        done.cache = collect_cache(max(CACHE_UNUSED_S, grace_s)) + remove_orphan_uploads()
    return done
