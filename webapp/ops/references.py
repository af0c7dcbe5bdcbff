"""Which rows of the database name a folder on disk, and what the artifact folders are.

Every trained thing (encoders, index versions, detectors, word vectors) is a folder whose absolute path a row
holds in a field named ``artifact_path``; an encoder and a training run name the folder they started from in
``base_model``. The fields are found by name on every installed model, so that a new kind of artifact is backed
up without a change here (tests/integration/test_backup_restore.py checks the list is what it was written for).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.apps import apps
from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Concat, Substr

PATH_FIELDS = ("artifact_path", "base_model")


def path_fields() -> list[tuple[type[models.Model], str]]:
    """(model, field name) for each concrete field that holds an artifact folder, in a stable order."""
    found = []
    for model in apps.get_models():
        for f in model._meta.get_fields():
            if f.name in PATH_FIELDS and getattr(f, "concrete", False) and f.model is model:
                found.append((model, f.name))
    return sorted(found, key=lambda pair: (pair[0]._meta.label, pair[1]))


@dataclass
class References:
    """The folders the database names: those under the artifact root (backed up, as paths relative to it),
    those outside it (named in the manifest: they must exist at the same place on the new server) and those
    that are gone."""

    inside: set[str] = field(default_factory=set)
    outside: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)


def roots(root: Path) -> list[str]:
    """The artifact root as written and as resolved (rows hold what settings said when they were made)."""
    return sorted({str(root), str(root.resolve())}, key=len, reverse=True)


def relative_to_root(value: str, root: Path) -> str | None:
    for prefix in roots(root):
        if value == prefix:
            return "."
        if value.startswith(prefix.rstrip("/") + "/"):
            return value[len(prefix.rstrip("/")) + 1:]
    return None


def referenced(root: Path) -> References:
    """Read every path field's distinct values (in the caller's transaction: the backup's snapshot)."""
    refs = References()
    for model, name in path_fields():
        for value in model._base_manager.exclude(**{name: ""}).values_list(name, flat=True).distinct():
            relative = relative_to_root(value, root)
            if relative is not None:
                (refs.inside if (root / relative).exists() else refs.missing).add(relative)
            elif os.path.isabs(value):
                # A base model named by its hub id ("dmis-lab/biobert-v1.1") is not a folder and is left out.
                (refs.outside if Path(value).exists() else refs.missing).add(value)
    return refs


def files_under(root: Path, relatives: set[str]) -> Iterator[tuple[str, Path]]:
    """(path relative to the root, file) for every regular file of the referenced folders, once each, sorted;
    folders nested in one another (an index inside its model's folder) are walked once."""
    seen: set[str] = set()
    for relative in sorted(relatives):
        start = root / relative
        if start.is_file():
            candidates = [start]
        else:
            candidates = sorted(Path(d) / name for d, _, names in os.walk(start) for name in names)
        for path in candidates:
            key = os.path.relpath(path, root)
            if key not in seen and path.is_file():
                seen.add(key)
                yield key, path


def rewrite(old_roots: list[str], new_root: Path) -> int:
    """Point every stored path under an old artifact root at the new root; returns the rows changed."""
    changed = 0
    new = str(new_root).rstrip("/")
    for model, name in path_fields():
        for old in old_roots:
            old = old.rstrip("/")
            if old == new:
                continue
            rows = model._base_manager.filter(**{f"{name}__startswith": old + "/"})
            # Substr is 1-based: from the slash after the old root onwards.
            changed += rows.update(**{name: Concat(Value(new), Substr(F(name), len(old) + 1))})
            changed += model._base_manager.filter(**{name: old}).update(**{name: new})
    return changed
