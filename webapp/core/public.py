"""What a job's message may tell its reader: the file at fault by its name, never a folder of the server.

An import, an index build, a training run or an evaluation fails with a message that often quotes a path: the
upload the worker read (``.../var/artifacts/uploads/<hex>/medic.tsv:5: ...``), a temporary folder, an artifact
of the volume. The reader (an admin on the Imports page, a client of the API, a curator on a run's page) knows
the file by its name; the folders are the server's. :func:`public_message` is the one rule, and
:class:`PublicMessageField` applies it to every message as it is stored, so no writer of a message can forget it.
"""

from __future__ import annotations

import re
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models

# A path segment: anything but a separator, a blank or a quote (a message quotes paths with '...' or "...").
_SEGMENT = r"[^\s/'\"]+"
# Not inside a longer path: "/tmp" of "/var/tmp/x" is no folder of ours.
_START = r"(?<![\w/.~-])"


def _server_folders() -> tuple[str, ...]:
    """The folders of the server (read each time: a test or a deployment may move the artifact volume)."""
    folders: set[str] = set()
    for folder in (settings.ARTIFACT_ROOT, settings.BASE_DIR, tempfile.gettempdir(), sys.prefix, Path.home()):
        for form in (Path(folder), Path(folder).resolve()):
            if len(form.parts) > 1:  # never "/" itself
                folders.add(str(form).rstrip("/"))
    return tuple(sorted(folders, key=len, reverse=True))  # longest first


@lru_cache(maxsize=8)
def _patterns(folders: tuple[str, ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """For each folder: one pattern for a path under it (its folders are dropped, the file's name kept) and one
    for the folder itself (its name kept)."""
    patterns = []
    for folder in folders:
        escaped = _START + re.escape(folder)
        patterns.append((re.compile(escaped + rf"(?:/{_SEGMENT})*/(?={_SEGMENT})"), ""))
        patterns.append((re.compile(escaped + r"(?![\w/.-])"), Path(folder).name))
    return tuple(patterns)


def public_message(text: str) -> str:
    """``text`` with every path under a folder of the server (the artifact volume with its uploads, the project,
    the temporary folder, the Python environment, the home folder) reduced to the file's name."""
    if "/" not in text:
        return text
    for pattern, replacement in _patterns(_server_folders()):
        text = pattern.sub(replacement, text)
    return text


def public_data(value: Any) -> Any:
    """:func:`public_message` applied to every text of a JSON value (an import's report: its message, its
    warnings)."""
    if isinstance(value, str):
        return public_message(value)
    if isinstance(value, dict):
        return {key: public_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [public_data(item) for item in value]
    return value


class PublicMessageField(models.TextField):  # type: ignore[type-arg]
    """A job's message or error, stored as :func:`public_message` makes it, whether written by ``save()``,
    ``create()`` or ``update()``."""

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = super().pre_save(model_instance, add)
        if isinstance(value, str):
            value = public_message(value)
            setattr(model_instance, self.attname, value)  # the instance reads as stored
        return value

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return public_message(value) if isinstance(value, str) else value

    def deconstruct(self) -> Any:
        # The column is a text column like any other: migrations see a TextField, so none is needed.
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs
