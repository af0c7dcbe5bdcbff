"""Restore an archive made by :mod:`webapp.ops.backup` into an empty database and the configured ARTIFACT_ROOT.

Every member is checked against the manifest's sha256 before the database is touched: the artifacts are written
under the root (each through a ``.part`` name, renamed once its hash matches) and the dump to a temporary file;
then pg_restore loads the dump, and the stored artifact paths are pointed at this server's ARTIFACT_ROOT.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection, transaction

from webapp.artifacts.manifests import move_root
from webapp.ops import pgtools, references
from webapp.ops.backup import ARTIFACTS, DUMP, FORMAT, MANIFEST

CHUNK = 1 << 20


class RestoreError(RuntimeError):
    """The archive or the target is not fit for a restore; the message says which and why."""


def read_manifest(tar: tarfile.TarFile, archive: Path) -> dict[str, Any]:
    try:
        raw = tar.extractfile(MANIFEST)
    except KeyError:
        raise RestoreError(f"{archive} has no {MANIFEST}: it is not a workbench backup (or it was cut short)") from None
    assert raw is not None
    manifest = json.load(raw)
    if manifest.get("format") != FORMAT:
        raise RestoreError(f"{archive} is a backup of format {manifest.get('format')!r}; this version reads {FORMAT}")
    return manifest


def tables_with_rows() -> tuple[list[str], list[str]]:
    """(every table of the target database, those that hold at least one row), outside the system schemas."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables "
                       "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1")
        tables = [row[0] for row in cursor.fetchall()]
        full = []
        for table in tables:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
            if cursor.fetchone()[0]:
                full.append(table)
    return tables, full


def copy_checked(source: IO[bytes], target: Path, expected: dict[str, Any]) -> None:
    """Stream one member to ``target`` through ``<target>.part``; a hash or size that differs removes it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    digest, size = hashlib.sha256(), 0
    with open(part, "wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if digest.hexdigest() != expected["sha256"] or size != expected["size"]:
        part.unlink()
        raise RestoreError(f"{expected['path']} in the archive does not match its manifest (sha256 "
                           f"{digest.hexdigest()} of {size} bytes, the manifest says {expected['sha256']} of "
                           f"{expected['size']}): the archive is damaged; nothing was restored into the database")
    os.replace(part, target)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def target_of(root: Path, name: str) -> Path:
    """Where an ``artifacts/...`` member goes; a name that would leave the root is refused."""
    relative = name[len(ARTIFACTS) + 1:]
    target = (root / relative).resolve()
    if os.path.isabs(relative) or not target.is_relative_to(root.resolve()):
        raise RestoreError(f"the archive's member {name!r} would be written outside ARTIFACT_ROOT; refused")
    return target


def unpack(tar: tarfile.TarFile, manifest: dict[str, Any], root: Path, dump: Path) -> int:
    """Write the dump and the artifacts, each checked against the manifest; returns the files written."""
    expected = {a["path"]: a for a in manifest["artifacts"]}
    expected[DUMP] = {**manifest["database"], "path": DUMP}
    seen: set[str] = set()
    written = 0
    for member in tar:
        if member.name == MANIFEST:
            continue
        if member.name not in expected or not member.isfile():
            raise RestoreError(f"the archive holds {member.name!r}, which its manifest does not list; refused")
        target = dump if member.name == DUMP else target_of(root, member.name)
        if member.name != DUMP and target.exists():
            # A file already there is kept only when it is the very same bytes.
            if file_sha256(target) != expected[member.name]["sha256"]:
                raise RestoreError(f"{target} already exists with other contents; restore into an empty "
                                   f"ARTIFACT_ROOT (or move that file away)")
        else:
            source = tar.extractfile(member)
            assert source is not None
            copy_checked(source, target, expected[member.name])
            written += 1
        seen.add(member.name)
    if missing := sorted(set(expected) - seen):
        raise RestoreError(f"the archive lacks {len(missing)} files its manifest lists, first {missing[0]}: it was cut short")
    return written


def check_empty() -> list[str]:
    tables, full = tables_with_rows()
    if full:
        raise RestoreError(
            f"the database {connection.settings_dict['NAME']!r} is not empty: {len(full)} tables hold rows "
            f"({', '.join(full[:5])}{', ...' if len(full) > 5 else ''}). Restore into a new, empty database "
            f"(createdb, then point DATABASE_URL at it)")
    return tables


def restore(archive: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    started = time.monotonic()
    root = Path(settings.ARTIFACT_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:") as tar:
        manifest = read_manifest(tar, archive)
        tables = check_empty()
        with connection.cursor() as cursor:
            server = pgtools.server_major(cursor)
        tool = pgtools.choose("pg_restore", manifest["database"]["pg_dump_major"], server)
        with tempfile.TemporaryDirectory(prefix=".restore-", dir=root) as work:
            dump = Path(work) / DUMP
            written = unpack(tar, manifest, root, dump)
            log(f"{written} files checked and written under {root} in {time.monotonic() - started:.1f} s")
            # Tables without rows (a schema made by hand, or a restore that failed midway) are replaced.
            clean = ["--clean", "--if-exists"] if tables else []
            connection.close()  # pg_restore takes its own connection; ours holds nothing it must wait for
            pgtools.run(tool, ["--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction", *clean,
                               "--dbname", connection.settings_dict["NAME"], str(dump)],
                        pgtools.client_env(connection.settings_dict))
    with transaction.atomic():
        changed = references.rewrite(manifest["artifact_root"], root)
        # The artifact store's manifests are keyed by those paths: they move with them (webapp.artifacts).
        move_root(manifest["artifact_root"], root)
    log(f"database restored with {tool.path} (PostgreSQL {server}); {changed} artifact paths now under {root}; "
        f"{time.monotonic() - started:.1f} s in all")
    if manifest["outside_artifact_root"]:
        log(f"these folders were not in the archive and must exist at the same path here: "
            f"{', '.join(manifest['outside_artifact_root'])}")
    return manifest
