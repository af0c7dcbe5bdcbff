"""The S3 backend against a real S3-compatible server process (moto's `moto_server`, started here on a free port):
a folder bigger than a chunk is published, fetched on another host verified, and collected once no row names it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from webapp.artifacts.blobs import S3Blobs, blob_store
from webapp.artifacts.collect import collect_store
from webapp.artifacts.local import cache_root, ensure_local
from webapp.artifacts.manifests import publish
from webapp.artifacts.models import Blob

boto3 = pytest.importorskip("boto3", reason="the s3 extra (boto3) is not installed")
CHUNK = 64 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    command = shutil.which("moto_server")
    if command is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]')")
    port = _free_port()
    process = subprocess.Popen([command, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("moto_server did not start")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def s3_store(s3_server, settings, monkeypatch, tmp_path) -> Path:  # type: ignore[no-untyped-def]
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    bucket = f"artifacts-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    settings.ARTIFACT_STORE, settings.ARTIFACT_S3_BUCKET, settings.ARTIFACT_S3_ENDPOINT_URL = "s3", bucket, s3_server
    settings.ARTIFACT_CHUNK_BYTES, settings.ARTIFACT_ROOT = CHUNK, tmp_path / "host-a"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=bucket)
    return Path(settings.ARTIFACT_ROOT)


def test_a_folder_goes_through_the_bucket_to_another_host_and_is_collected(db, s3_store, settings, tmp_path):
    folder = s3_store / "models" / "3"
    (folder / "encoder").mkdir(parents=True)
    (folder / "config.json").write_text("{}\n")
    (folder / "encoder" / "weights.bin").write_bytes(os.urandom(20 * CHUNK + 7))
    publish(folder)
    store = blob_store()
    assert isinstance(store, S3Blobs) and len(store.stored()) == 2
    assert not Blob.objects.exists()  # no bytes in the database

    (tmp_path / "host-a").rename(tmp_path / "unreachable-a")
    settings.ARTIFACT_ROOT = tmp_path / "host-b"
    local = ensure_local(folder)
    assert local.parent == cache_root()
    moved = tmp_path / "unreachable-a" / "models" / "3"
    assert (local / "encoder" / "weights.bin").read_bytes() == (moved / "encoder" / "weights.bin").read_bytes()

    done = collect_store(set(), grace_s=0)
    assert done.manifests == [str(folder)] and done.blobs == 2 and store.stored() == {}
