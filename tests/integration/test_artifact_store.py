"""The artifact store on the real database: a folder published on one host is fetched, whole and verified, on another
(a different ARTIFACT_ROOT, nothing shared but PostgreSQL), in chunks; a damaged copy is refused; two processes
fetching at once fetch once; the collector keeps what rows name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from webapp.artifacts.blobs import ArtifactCorrupt
from webapp.artifacts.collect import collect_cache, collect_store
from webapp.artifacts.local import cache_root, ensure_local
from webapp.artifacts.manifests import HASH_CHUNK, is_available, publish
from webapp.artifacts.models import Blob, BlobChunk, Manifest

CHUNK = 64 * 1024
BOUND = 2 * HASH_CHUNK + 8 * CHUNK  # 2.5 MB, a quarter of the file of the round trip


@pytest.fixture
def host_a(settings, tmp_path: Path) -> Path:
    settings.ARTIFACT_ROOT = tmp_path / "host-a"
    settings.ARTIFACT_CHUNK_BYTES = CHUNK
    return settings.ARTIFACT_ROOT


def _folder(root: Path, big: int = 5 * CHUNK + 123) -> Path:
    folder = root / "models" / "7"
    (folder / "encoder").mkdir(parents=True)
    (folder / "config.json").write_text('{"names": 3}\n')
    (folder / "encoder" / "weights.bin").write_bytes(os.urandom(big))
    (folder / "empty.txt").write_bytes(b"")
    return folder


def _as_host_b(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """Another host: its own empty ARTIFACT_ROOT, and host A's disk out of reach (moved aside)."""
    (tmp_path / "host-a").rename(tmp_path / "unreachable-a")
    settings.ARTIFACT_ROOT = tmp_path / "host-b"
    return settings.ARTIFACT_ROOT


def _on_a(tmp_path: Path, path: Path) -> Path:
    """Where host A's file is now that it is out of reach."""
    return tmp_path / "unreachable-a" / path.relative_to(tmp_path / "host-a")


def _same_files(a: Path, b: Path) -> bool:
    def listing(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.name != ".complete"}
    return listing(a) == listing(b)


def test_a_folder_bigger_than_a_chunk_round_trips_to_another_host_in_bounded_memory(db, host_a, settings, tmp_path):
    folder = _folder(host_a, big=160 * CHUNK + 5)  # 10 MB
    tracemalloc.start()
    publish(folder)
    _, publish_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    weights = Blob.objects.get(size=160 * CHUNK + 5)
    assert BlobChunk.objects.filter(blob=weights).count() == 161
    assert publish_peak < BOUND, publish_peak  # never the whole file in memory: a chunk and a hashing buffer

    _as_host_b(settings, tmp_path)
    tracemalloc.start()
    local = ensure_local(folder)
    _, fetch_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert fetch_peak < BOUND, fetch_peak
    assert local.parent == cache_root() and local.name == Manifest.objects.get().digest
    assert _same_files(local, _on_a(tmp_path, folder))
    assert ensure_local(folder) == local  # fetched once, found after


def test_the_path_itself_is_returned_where_it_is_whole_and_anything_unpublished_as_it_is(db, host_a):
    folder = _folder(host_a)
    publish(folder)
    assert ensure_local(folder) == folder
    assert ensure_local(str(folder)) == folder
    assert ensure_local("/nowhere/a-base-model") == Path("/nowhere/a-base-model")
    assert not cache_root().exists()  # nothing was fetched


def test_publishing_again_is_idempotent_and_a_changed_folder_replaces_its_manifest(db, host_a):
    folder = _folder(host_a)
    first = publish(folder)
    blobs = Blob.objects.count()
    assert publish(folder).digest == first.digest and Blob.objects.count() == blobs
    (folder / "config.json").write_text('{"names": 4}\n')
    assert publish(folder).digest != first.digest
    assert Manifest.objects.count() == 1 and Blob.objects.count() == blobs + 1


def test_a_single_file_is_published_and_fetched_as_a_file(db, host_a, settings, tmp_path):
    upload = host_a / "uploads" / ("a" * 32) / "names.tsv"
    upload.parent.mkdir(parents=True)
    upload.write_text("C1\taspirin\n")
    publish(upload)
    _as_host_b(settings, tmp_path)
    assert is_available(upload) and not upload.with_name("other.tsv").exists()
    local = ensure_local(upload)
    assert local.name == "names.tsv" and local.read_text() == "C1\taspirin\n"


def test_a_damaged_cached_copy_is_fetched_again_and_damaged_stored_bytes_are_refused(db, host_a, settings, tmp_path):
    folder = _folder(host_a)
    publish(folder)
    _as_host_b(settings, tmp_path)
    local = ensure_local(folder)
    weights = local / "encoder" / "weights.bin"
    good = weights.read_bytes()
    weights.write_bytes(b"x" * len(good))  # same size: only the hash tells
    assert ensure_local(folder) == local and weights.read_bytes() != good  # sizes only, as a load site asks
    assert ensure_local(folder, verify=True) == local and weights.read_bytes() == good
    weights.write_bytes(good[:10])  # a truncated file: the size tells
    assert ensure_local(folder) == local and weights.read_bytes() == good

    chunk = BlobChunk.objects.filter(blob__size=len(good)).order_by("seq").first()
    chunk.data = b"y" * len(bytes(chunk.data))
    chunk.save()
    shutil.rmtree(local)
    with pytest.raises(ArtifactCorrupt):
        ensure_local(folder)
    assert not local.exists() and not [p for p in cache_root().iterdir() if p.name.startswith(".tmp-")]


FETCH = """
import os, sys, time, django
from pathlib import Path
os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
django.setup()
from django.conf import settings
settings.ARTIFACT_ROOT = sys.argv[1]
from webapp.artifacts.local import ensure_local
Path(sys.argv[3], "ready-" + str(os.getpid())).touch()
while not Path(sys.argv[3], "go").exists():  # all start fetching at the same moment
    time.sleep(0.01)
print(ensure_local(sys.argv[2]))
"""


@pytest.mark.django_db(transaction=True)
def test_processes_fetching_at_once_all_get_the_one_whole_copy(host_a, settings, tmp_path):
    from django.db import connection

    from tests.integration.conftest import database_url

    folder = _folder(host_a, big=60 * CHUNK)
    publish(folder)
    host_b = _as_host_b(settings, tmp_path)
    env = os.environ | {"DATABASE_URL": database_url(connection.settings_dict), "ARTIFACT_CHUNK_BYTES": str(CHUNK)}
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", FETCH, str(host_b), str(folder), str(barrier)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    deadline = time.monotonic() + 120
    while len(list(barrier.glob("ready-*"))) < 2 and time.monotonic() < deadline and all(p.poll() is None for p in procs):
        time.sleep(0.05)
    (barrier / "go").touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    paths = {out.strip() for out, _ in outs}
    assert len(paths) == 1
    assert _same_files(Path(paths.pop()), _on_a(tmp_path, folder))
    assert [p.name for p in (host_b / "cache" / "store").iterdir() if not p.name.startswith(".")] == [
        Manifest.objects.get().digest]


def test_the_collector_keeps_what_is_referenced_and_removes_the_rest(db, host_a, settings, tmp_path):
    kept, dropped = _folder(host_a), host_a / "indexes" / "9"
    shutil.copytree(kept, dropped)
    (dropped / "only-here.bin").write_bytes(b"z" * 1000)
    publish(kept)
    publish(dropped)
    assert not collect_store({str(kept)}, grace_s=3600).manifests  # within the grace: nothing goes
    done = collect_store({str(kept)}, grace_s=0)
    assert done.manifests == [str(dropped)] and done.blobs == 1
    assert list(Manifest.objects.values_list("logical_path", flat=True)) == [str(kept)]
    assert not Blob.objects.filter(size=1000).exists()

    _as_host_b(settings, tmp_path)
    local = ensure_local(kept)
    assert collect_cache(unused_for_s=3600) == []  # in use, listed
    Manifest.objects.all().delete()
    assert collect_cache(unused_for_s=3600) and not local.exists()
