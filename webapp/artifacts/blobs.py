"""Where the bytes live: blobs keyed by their sha256, written and read in chunks, never a whole file in memory.

Two backends with one interface (:class:`BlobStore`): the deployment's own PostgreSQL (the default: chunk rows of
``bytea``, so every ``pg_dump`` holds them) and an S3-compatible bucket (``ARTIFACT_STORE=s3``, boto3, which streams
multipart uploads and ranged downloads itself). :func:`blob_store` returns the configured one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction

from webapp.artifacts.models import Blob, BlobChunk


class ArtifactCorrupt(Exception):
    """Bytes that do not hash to what the manifest says: a changed file while publishing, a damaged blob."""


class BlobStore(Protocol):
    def has(self, sha256: str) -> bool: ...

    def put(self, sha256: str, path: Path) -> None:
        """Store the file's bytes under ``sha256`` (checked while streaming); nothing when it is there already."""

    def write_to(self, sha256: str, out: IO[bytes]) -> None:
        """Stream the blob's bytes into ``out`` (the caller verifies their hash)."""

    def stored(self) -> dict[str, float]:
        """Every blob's sha256 and when it was stored (a Unix time): what the collector may remove."""

    def delete(self, sha256: str) -> None: ...


def read_chunks(fh: IO[bytes], size: int) -> Any:
    while chunk := fh.read(size):
        yield chunk


class PostgresBlobs:
    """Blobs as a :class:`Blob` row and its :class:`BlobChunk` rows, ``ARTIFACT_CHUNK_BYTES`` each."""

    def has(self, sha256: str) -> bool:
        return Blob.objects.filter(sha256=sha256).exists()

    def put(self, sha256: str, path: Path) -> None:
        digest = hashlib.sha256()
        try:
            # One transaction: a blob row is never seen without all its chunks. Two processes storing the same
            # bytes: the second's insert waits on the first's key, then finds it taken and stores nothing.
            with transaction.atomic():
                Blob.objects.create(sha256=sha256, size=path.stat().st_size)
                with open(path, "rb") as fh:
                    for seq, chunk in enumerate(read_chunks(fh, settings.ARTIFACT_CHUNK_BYTES)):
                        digest.update(chunk)
                        BlobChunk.objects.create(blob_id=sha256, seq=seq, data=chunk)
                if digest.hexdigest() != sha256:
                    raise ArtifactCorrupt(f"{path} changed while it was being stored")
        except IntegrityError:
            if not self.has(sha256):
                raise

    def write_to(self, sha256: str, out: IO[bytes]) -> None:
        seq = 0
        while True:
            # One chunk per query: memory holds one chunk, whatever the file's size.
            data = BlobChunk.objects.filter(blob_id=sha256, seq=seq).values_list("data", flat=True).first()
            if data is None:
                if seq == 0 and not self.has(sha256):
                    raise FileNotFoundError(f"blob {sha256} is not in the store")
                return
            out.write(data)
            seq += 1

    def stored(self) -> dict[str, float]:
        return {sha: created.timestamp() for sha, created in Blob.objects.values_list("sha256", "created_at")}

    def delete(self, sha256: str) -> None:
        Blob.objects.filter(sha256=sha256).delete()


class S3Blobs:
    """Blobs as objects ``<ARTIFACT_S3_PREFIX><sha256>`` of ``ARTIFACT_S3_BUCKET``."""

    def __init__(self) -> None:
        import boto3  # the s3 extra: only a deployment that chose this backend needs it

        if not settings.ARTIFACT_S3_BUCKET:
            raise ImproperlyConfigured("ARTIFACT_STORE=s3 needs ARTIFACT_S3_BUCKET")
        self.client = boto3.client("s3", endpoint_url=settings.ARTIFACT_S3_ENDPOINT_URL)
        self.bucket = settings.ARTIFACT_S3_BUCKET
        self.prefix = settings.ARTIFACT_S3_PREFIX

    def has(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self.prefix + sha256)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def put(self, sha256: str, path: Path) -> None:
        if self.has(sha256):
            return
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in read_chunks(fh, settings.ARTIFACT_CHUNK_BYTES):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            raise ArtifactCorrupt(f"{path} changed since it was hashed")
        # upload_file streams from disk (multipart above 8 MB); the object appears whole or not at all.
        self.client.upload_file(str(path), self.bucket, self.prefix + sha256)

    def write_to(self, sha256: str, out: IO[bytes]) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.download_fileobj(self.bucket, self.prefix + sha256, out)
        except ClientError as exc:
            raise FileNotFoundError(f"blob {sha256} is not in bucket {self.bucket}: {exc}") from exc

    def stored(self) -> dict[str, float]:
        found = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
            for item in page.get("Contents", []):
                found[item["Key"][len(self.prefix):]] = item["LastModified"].timestamp()
        return found

    def delete(self, sha256: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + sha256)


def blob_store() -> BlobStore:
    """The configured backend (``ARTIFACT_STORE``)."""
    return S3Blobs() if settings.ARTIFACT_STORE == "s3" else PostgresBlobs()
