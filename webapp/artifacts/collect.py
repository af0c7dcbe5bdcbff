"""Garbage collection of the store: manifests no row names any more, blobs no manifest lists, this host's cache.

The store knows no rows: the caller (``webapp.ops.artifact_gc``, which reads every path field and every unfinished
job's input) says which logical paths are referenced. Whatever was published, or stored, within the grace period
stays: a folder is published just before the row that names it is written, a blob just before its manifest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from webapp.artifacts.blobs import blob_store
from webapp.artifacts.local import trim_cache
from webapp.artifacts.manifests import store_lock
from webapp.artifacts.models import Manifest, ManifestFile


@dataclass
class Collected:
    manifests: list[str] = field(default_factory=list)
    blobs: int = 0
    cache: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return ([f"manifest removed: {path} (no row names it)" for path in self.manifests]
                + ([f"{self.blobs} blobs removed: no manifest lists them"]
                   if self.blobs else []) + self.cache)


def collect_store(referenced: set[str], grace_s: float) -> Collected:
    """Remove the manifests whose path is not in ``referenced`` and the blobs no manifest lists, both older than
    ``grace_s`` seconds."""
    done = Collected()
    cutoff = timezone.now() - timedelta(seconds=grace_s)
    with transaction.atomic():
        stale = Manifest.objects.select_for_update(skip_locked=True).filter(published_at__lt=cutoff).exclude(
            logical_path__in=referenced)
        done.manifests = sorted(stale.values_list("logical_path", flat=True))
        Manifest.objects.filter(logical_path__in=done.manifests).delete()
    store = blob_store()
    # Exclusive against every publish (which holds the lock shared from "is it stored?" to its manifest's commit): a
    # blob found stored, and so not uploaded again, cannot be removed before the manifest listing it is written.
    with store_lock(shared=False):
        listed = set(ManifestFile.objects.values_list("sha256", flat=True).distinct())
        oldest = time.time() - grace_s
        for sha, when in store.stored().items():
            if sha not in listed and when < oldest:
                store.delete(sha)
                done.blobs += 1
    return done


def collect_cache(unused_for_s: float) -> list[str]:
    """Trim this host's cache: folders of contents no manifest lists, and folders unused for ``unused_for_s``."""
    return trim_cache(set(Manifest.objects.values_list("digest", flat=True)), unused_for_s)
