"""One archive of a workbench: the database (pg_dump's custom format) and every artifact file it references.

The archive is a plain tar: ``database.dump`` first, then ``artifacts/<path under ARTIFACT_ROOT>`` for each file,
then ``manifest.json`` with each member's sha256 and size, the app's version and the applied migrations. The dump
and the list of referenced folders are read from one exported snapshot, so they agree even while curators work.
Files are streamed into the tar and hashed on the way; nothing is held whole in memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader

from webapp.ops import pgtools, references

FORMAT = 1
DUMP = "database.dump"
MANIFEST = "manifest.json"
ARTIFACTS = "artifacts"


class HashingReader:
    """A file read once: what tarfile copies into the archive is hashed on the way."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n)
        self.sha256.update(chunk)
        self.size += len(chunk)
        return chunk


def add_file(tar: tarfile.TarFile, name: str, path: Path) -> dict[str, Any]:
    info = tar.gettarinfo(str(path), arcname=name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    with open(path, "rb") as raw:
        reader = HashingReader(raw)
        tar.addfile(info, reader)  # type: ignore[arg-type]  # tarfile reads .read(n) only
    if reader.size != info.size:
        raise pgtools.ToolError(f"{path} changed size while it was archived ({info.size} -> {reader.size} bytes)")
    return {"path": name, "sha256": reader.sha256.hexdigest(), "size": reader.size}


def app_version() -> dict[str, str]:
    try:
        version = metadata.version("el-workbench")
    except metadata.PackageNotFoundError:
        version = ""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=settings.BASE_DIR, capture_output=True, text=True,
                                timeout=10).stdout.strip()
    except OSError:
        commit = ""
    return {"version": version, "commit": commit}


def applied_migrations() -> dict[str, list[str]]:
    """Per app, the applied migrations that no other applied one follows: the schema the dump is at."""
    loader = MigrationLoader(connection)
    applied = set(loader.applied_migrations)
    heads: dict[str, list[str]] = {}
    for app, name in sorted(applied):
        node = (app, name)
        if node in loader.graph.nodes and not (loader.graph.node_map[node].children & applied):
            heads.setdefault(app, []).append(name)
    return heads


def dump_in_snapshot(target: Path) -> dict[str, Any]:
    """pg_dump in a snapshot this transaction exports, and what the rows in that same snapshot reference."""
    root = Path(settings.ARTIFACT_ROOT)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cursor.execute("SELECT pg_export_snapshot()")
        snapshot = cursor.fetchone()[0]
        server = pgtools.server_major(cursor)
        refs = references.referenced(root)
        heads = applied_migrations()
        tool = pgtools.choose("pg_dump", server, server)
        # The exporting transaction stays open while pg_dump runs: the snapshot lives only as long as it does.
        pgtools.run(tool, ["--format=custom", f"--snapshot={snapshot}", "--file", str(target)],
                    pgtools.client_env(connection.settings_dict))
    return {"refs": refs, "migrations": heads, "server_major": server, "pg_dump": tool}


def backup(out: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Write the archive to ``out`` (through a temporary name in its folder, renamed once complete)."""
    started = time.monotonic()
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    root = Path(settings.ARTIFACT_ROOT)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".backup-") as work:
        dumped = dump_in_snapshot(Path(work) / DUMP)
        refs: references.References = dumped["refs"]
        log(f"database dumped with {dumped['pg_dump'].path} (PostgreSQL {dumped['server_major']}) "
            f"in {time.monotonic() - started:.1f} s")
        partial = Path(work) / "archive.tar"
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            database = add_file(tar, DUMP, Path(work) / DUMP)
            artifacts, vanished = [], []
            for relative, path in references.files_under(root, refs.inside):
                try:
                    artifacts.append(add_file(tar, f"{ARTIFACTS}/{relative}", path))
                except FileNotFoundError:
                    # An index still building may remove its scratch files; its row says it is not ready.
                    vanished.append(relative)
            manifest = {
                "format": FORMAT,
                "created_at": datetime.now(UTC).isoformat(),
                "app": app_version(),
                "database": {**database, "name": connection.settings_dict["NAME"],
                             "server_major": dumped["server_major"], "pg_dump_major": dumped["pg_dump"].major},
                "migrations": dumped["migrations"],
                "artifact_root": references.roots(root),
                "folders": sorted(refs.inside),
                "artifacts": artifacts,
                "outside_artifact_root": sorted(refs.outside),
                "missing": sorted(refs.missing),
                "vanished_while_archived": vanished,
            }
            data = json.dumps(manifest, indent=2).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))  # the manifest is small; only the files are streamed
        os.replace(partial, out)
    size = sum(a["size"] for a in artifacts)
    log(f"{out}: the database ({database['size']:,} bytes) and {len(artifacts)} artifact files ({size:,} bytes) "
        f"of {len(refs.inside)} folders in {time.monotonic() - started:.1f} s")
    if refs.outside:
        log(f"not in the archive, outside ARTIFACT_ROOT (must exist at the same path where it is restored): "
            f"{', '.join(sorted(refs.outside))}")
    if refs.missing:
        log(f"named by the database but gone from disk: {', '.join(sorted(refs.missing))}")
    return manifest
