"""A published artifact as a folder on this host: :func:`ensure_local`, which every load site calls.

The path a row holds is returned as it is when it is here and holds what its manifest says (sizes compared: cheap),
or when nothing was published under it (a base model the admin put on every host, an artifact older than the
store). Otherwise its files are fetched into ``ARTIFACT_ROOT/cache/store/<digest>/``: streamed from the blob store
into a temporary folder, each checked against its sha256, then renamed into place in one step, under a file lock,
so that two processes fetching at once fetch once and neither sees a half-written folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from webapp.artifacts.blobs import ArtifactCorrupt, blob_store
from webapp.artifacts.manifests import Entry, entries_of, file_sha256, manifest_of
from webapp.artifacts.models import Manifest

COMPLETE = ".complete"  # written last into a fetched folder; its mtime says when it was last used


def cache_root() -> Path:
    return Path(settings.ARTIFACT_ROOT) / "cache" / "store"


def ensure_local(path: str | Path, verify: bool = False) -> Path:
    """The folder (or file) ``path`` names, on this host: itself when it is here and whole, else a fetched copy.

    ``verify`` hashes every file of a local or cached copy too (sizes only otherwise): a copy that fails is fetched
    again. Raises :class:`ArtifactCorrupt` when the store's bytes do not match their manifest, FileNotFoundError
    when a blob is missing."""
    manifest = manifest_of(path)
    if manifest is None:
        return Path(path)
    entries = entries_of(manifest)
    here = Path(path)
    if _holds(here, manifest.kind, entries, verify):
        return here
    folder = cache_root() / manifest.digest
    with _fetch_lock(manifest.digest):
        if not ((folder / COMPLETE).is_file() and _holds(folder, Manifest.Kind.FOLDER, entries, verify)):
            _fetch(folder, entries)
    (folder / COMPLETE).touch()  # last used: what the cache trimming keeps
    return folder / entries[0].name if manifest.kind == Manifest.Kind.FILE else folder


def _holds(path: Path, kind: str, entries: list[Entry], verify: bool) -> bool:
    """Whether ``path`` holds every file of the manifest at its size (and hash when ``verify``); extra files are
    allowed (a loader's own cache beside the weights)."""
    if kind == Manifest.Kind.FILE:
        files = [(path, entries[0])] if entries else []
    else:
        files = [(path / e.name, e) for e in entries]
    try:
        for file, entry in files:
            if file.stat().st_size != entry.size or (verify and file_sha256(file) != entry.sha256):
                return False
    except OSError:
        return False
    return path.exists()


@contextmanager
def _fetch_lock(digest: str) -> Iterator[None]:
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / f".{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process fetching the same digest: wait for it, then use its copy
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fetch(folder: Path, entries: list[Entry]) -> None:
    """Fetch ``entries`` into ``folder``: a temporary sibling first, each file checked, then renamed into place."""
    tmp = folder.with_name(f".tmp-{folder.name}-{uuid.uuid4().hex}")
    store = blob_store()
    try:
        for entry in entries:
            target = tmp / entry.name
            if not target.resolve().is_relative_to(tmp.resolve()):
                raise ArtifactCorrupt(f"manifest file name {entry.name!r} leaves its folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                hashing = _Hashing(out, entry)
                store.write_to(entry.sha256, hashing)  # type: ignore[arg-type]
            hashing.check()
        (tmp / COMPLETE).touch()
        if folder.exists():  # a damaged or partial copy: moved aside, then removed
            stale = folder.with_name(f".stale-{folder.name}-{uuid.uuid4().hex}")
            folder.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Hashing:
    """A file object that hashes what is written, to be checked at the end (boto3 and the chunk loop write here)."""

    def __init__(self, out: object, entry: Entry) -> None:
        self.out, self.entry = out, entry
        self.digest, self.size = hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        self.out.write(data)  # type: ignore[attr-defined]
        return len(data)

    def check(self) -> None:
        if self.size != self.entry.size or self.digest.hexdigest() != self.entry.sha256:
            raise ArtifactCorrupt(f"{self.entry.name}: the stored bytes hash to {self.digest.hexdigest()}, "
                                  f"not {self.entry.sha256}")


def trim_cache(keep_digests: set[str], unused_for_s: float) -> list[str]:
    """Remove cached folders whose contents no manifest lists any more, or that no process used for ``unused_for_s``
    seconds, and leftovers of fetches that died; one line per folder removed. A folder in use by a loaded linker is
    safe to remove on Linux (its open files stay readable); the next :func:`ensure_local` fetches it again."""
    root = cache_root()
    if not root.is_dir():
        return []
    removed = []
    now = time.time()
    for folder in sorted(root.iterdir()):
        try:
            if folder.name.startswith((".tmp-", ".stale-")) and now - folder.stat().st_mtime > 3600:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(f"{folder.name}: a fetch that did not finish")
                continue
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            marker = folder / COMPLETE
            used = marker.stat().st_mtime if marker.exists() else folder.stat().st_mtime
            if folder.name not in keep_digests or now - used > unused_for_s:
                with _fetch_lock(folder.name):  # not while another process fetches it
                    shutil.rmtree(folder, ignore_errors=True)
                removed.append(f"cache {folder.name}: " + ("no manifest lists it" if folder.name not in keep_digests
                                                         else "unused"))
        except OSError:
            continue  # removed meanwhile
    return removed


def local_base(value: str) -> str | None:
    """A run's ``base_model`` as the training recipe takes it: None for the default base model, a local folder for a
    published one (an earlier run's model), else the value as given (a folder on every host, a hub id)."""
    return str(ensure_local(value)) if value else None
