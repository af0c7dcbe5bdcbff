"""Publishing: a finished folder (or file) recorded under the path its row holds, its bytes in the blob store.

:func:`publish` is called where an artifact is finished (a training run's folder, an index build, saved word
vectors, an upload), before or with the row that names it. It is idempotent: publishing the same bytes again
stores nothing, and a changed folder replaces its manifest.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Q

from webapp.artifacts.blobs import blob_store, read_chunks
from webapp.artifacts.models import Manifest, ManifestFile

HASH_CHUNK = 1024 * 1024
STORE_LOCK = 0x4152_5446  # "ARTF": the advisory lock key of publish against the blob collector


@dataclass(frozen=True)
class Entry:
    name: str  # relative, '/'-separated
    sha256: str
    size: int


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in read_chunks(fh, HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[tuple[str, Path]]:
    """(relative '/'-name, path) of every regular file under ``folder``, sorted; links are followed as the loaders
    would follow them."""
    found = []
    for directory, _, names in os.walk(folder):
        for name in names:
            path = Path(directory) / name
            if path.is_file():
                found.append((path.relative_to(folder).as_posix(), path))
    return sorted(found)


def manifest_digest(entries: list[Entry]) -> str:
    """One name for these exact contents: the cache folder every host fetches them into."""
    digest = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.name):
        digest.update(f"{e.name}\0{e.sha256}\0{e.size}\n".encode())
    return digest.hexdigest()


def publish(path: str | Path) -> Manifest:
    """Record ``path`` (a folder, or one file) under ``str(path)``, the string its row stores, and upload the blobs the
    store lacks. Raises FileNotFoundError when there is nothing there."""
    path = Path(path)
    if path.is_dir():
        kind, files = Manifest.Kind.FOLDER, folder_files(path)
    elif path.is_file():
        kind, files = Manifest.Kind.FILE, [(path.name, path)]
    else:
        raise FileNotFoundError(f"cannot publish {path}: no such file or folder")
    entries = [Entry(name, file_sha256(file), file.stat().st_size) for name, file in files]
    store = blob_store()
    with store_lock(shared=True):
        for entry, (_, file) in zip(entries, files, strict=True):
            if not store.has(entry.sha256):
                store.put(entry.sha256, file)
        return _record(str(path), kind, entries)


@contextmanager
def store_lock(shared: bool) -> Iterator[None]:
    """A PostgreSQL advisory lock (session level: it spans transactions) that publishes share and the blob
    collector takes alone (:func:`webapp.artifacts.collect.collect_store`)."""
    suffix = "_shared" if shared else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_lock{suffix}(%s)", [STORE_LOCK])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_unlock{suffix}(%s)", [STORE_LOCK])


@transaction.atomic
def _record(logical_path: str, kind: str, entries: list[Entry]) -> Manifest:
    digest = manifest_digest(entries)
    manifest, created = Manifest.objects.select_for_update().get_or_create(
        logical_path=logical_path, defaults={"kind": kind, "digest": digest})
    if not created and manifest.digest == digest and manifest.kind == kind:
        manifest.save(update_fields=["published_at"])  # published again: its grace starts again
        return manifest
    manifest.kind, manifest.digest = kind, digest
    manifest.total_bytes = sum(e.size for e in entries)
    manifest.save()
    manifest.files.all().delete()
    ManifestFile.objects.bulk_create(
        ManifestFile(manifest=manifest, name=e.name, sha256=e.sha256, size=e.size) for e in entries)
    return manifest


def manifest_of(path: str | Path) -> Manifest | None:
    return Manifest.objects.filter(logical_path=str(path)).first()


def is_available(path: str | Path, relative: str = "") -> bool:
    """Whether this host can load ``path`` (or the file or folder ``relative`` inside it): it is here, or it was
    published. A page or a check that a folder written by a worker on another host is whole asks this: it fetches
    nothing."""
    if (Path(path) / relative if relative else Path(path)).exists():
        return True
    files = ManifestFile.objects.filter(manifest__logical_path=str(path))
    if relative:
        inside = relative.strip("/")
        files = files.filter(Q(name=inside) | Q(name__startswith=inside + "/"))
    return files.exists() or (not relative and Manifest.objects.filter(logical_path=str(path)).exists())


def entries_of(manifest: Manifest) -> list[Entry]:
    return [Entry(n, s, z) for n, s, z in manifest.files.order_by("name").values_list("name", "sha256", "size")]


def move_root(old_roots: list[str], new_root: Path) -> int:
    """Re-key the manifests under an old artifact root to ``new_root`` (a restore, as the rows' paths are moved:
    webapp.ops.references.rewrite); returns the manifests moved."""
    moved = 0
    new = str(new_root).rstrip("/")
    for old in (o.rstrip("/") for o in old_roots):
        if old == new:
            continue
        for manifest in Manifest.objects.filter(Q(logical_path=old) | Q(logical_path__startswith=old + "/")):
            manifest.logical_path = new + manifest.logical_path[len(old):]
            manifest.save(update_fields=["logical_path"])
            moved += 1
    return moved
