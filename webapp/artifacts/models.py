"""The store's rows: a manifest per published folder (or file), its files, and the blobs of the PostgreSQL backend.

A manifest is keyed by the *logical path*, the very string a row's ``artifact_path`` (or an import job's ``path``)
holds, whatever host wrote it. Blobs are content-addressed: one per distinct sha256, shared by every manifest that
lists a file with those bytes.
"""

from __future__ import annotations

from django.db import models


class Manifest(models.Model):
    """What one published folder (``kind`` folder) or file (``kind`` file) holds, under the path rows name it by."""

    class Kind(models.TextChoices):
        FOLDER = "folder"
        FILE = "file"

    logical_path = models.CharField(max_length=1000, unique=True, help_text="The path rows hold, as they hold it.")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.FOLDER)
    digest = models.CharField(max_length=64, help_text="sha256 of the sorted (name, sha256, size) list: the "
                                                       "cache folder's name on every host.")
    total_bytes = models.BigIntegerField(default=0)
    published_at = models.DateTimeField(auto_now=True, help_text="Last published (the collector's grace counts "
                                                                 "from here).")

    def __str__(self) -> str:
        return f"{self.logical_path} ({self.digest[:12]})"


class ManifestFile(models.Model):
    manifest = models.ForeignKey(Manifest, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=1000, help_text="Relative to the folder, '/'-separated; the file's own name "
                                                       "for a file manifest.")
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["manifest", "name"], name="artifacts_file_once")]


class Blob(models.Model):
    """One stored content of the PostgreSQL backend; its bytes are its chunks, in order. A row is only ever seen
    complete: it is written with its chunks in one transaction."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)


class BlobChunk(models.Model):
    blob = models.ForeignKey(Blob, on_delete=models.CASCADE, related_name="chunks")
    seq = models.IntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["blob", "seq"], name="artifacts_chunk_once")]
