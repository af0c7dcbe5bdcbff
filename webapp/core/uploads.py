"""Files uploaded for a worker to read: one folder each under ``ARTIFACT_ROOT/uploads/`` (the shared artifact
volume: the worker may be on another machine), removed once the job that reads the file has ended, or at once
when the request that stored it fails before its job is queued.

Only such a folder is ever removed: an import job may also name a file of the server's own (``POST
/api/imports/`` with a path), and that file is the admin's, never the workbench's to delete.
"""

from __future__ import annotations

import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

FOLDER_NAME = re.compile(r"[0-9a-f]{32}")  # uuid4().hex


def uploads_root() -> Path:
    return Path(settings.ARTIFACT_ROOT) / "uploads"


def new_upload_folder(kind: str = "") -> Path:
    """An empty folder of its own for one upload (``kind``: a sub-folder, "word-vectors")."""
    folder = uploads_root() / kind / uuid.uuid4().hex if kind else uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    return folder


def upload_folder(path: str | Path) -> Path | None:
    """The upload folder holding ``path`` when it is a stored upload (``uploads/<hex>/FILE`` or
    ``uploads/<kind>/<hex>/FILE``), else None."""
    try:
        resolved = Path(path).resolve()
        relative = resolved.relative_to(uploads_root().resolve())
    except (OSError, ValueError):
        return None
    if len(relative.parts) not in (2, 3):
        return None
    folder = resolved.parent
    return folder if FOLDER_NAME.fullmatch(folder.name) else None


def discard_upload(path: str | Path) -> bool:
    """Remove the upload folder holding ``path``; False (nothing removed) when ``path`` is not a stored upload."""
    folder = upload_folder(path)
    if folder is None:
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def upload_folders(older_than_s: float) -> Iterator[Path]:
    """The upload folders last changed more than ``older_than_s`` seconds ago."""
    root = uploads_root()
    if not root.is_dir():
        return
    cutoff = time.time() - older_than_s
    for parent in (root, *(p for p in root.iterdir() if p.is_dir() and not FOLDER_NAME.fullmatch(p.name))):
        for folder in parent.iterdir():
            try:
                if folder.is_dir() and FOLDER_NAME.fullmatch(folder.name) and folder.stat().st_mtime < cutoff:
                    yield folder
            except OSError:
                continue  # removed meanwhile
