"""Checks every importer makes on what it is given besides the file's content: the path and the labels.

Both would otherwise fail late and badly: ``Path.is_file()`` raises ``OSError`` (not ``False``) for a file
name longer than the file system allows, and PostgreSQL refuses a NUL character or a too-long title with a
``DataError`` about some SQL statement. Both raise ``ValueError`` here, which every caller (API, commands,
import jobs) already turns into a 400, a ``CommandError`` or a failed job.
"""

from __future__ import annotations

from pathlib import Path

from webapp.core import limits


def input_path(path: str | Path, *, folder: bool = False) -> Path:
    """``path`` once it names a file (or, with ``folder``, a file or a folder); ``FileNotFoundError`` if it
    names nothing, ``ValueError`` if the system refuses to look (a name too long, a folder it may not read),
    or if it is over a size limit (a path longer than IMPORT_MAX_PATH_CHARS, a ``.gz`` file that inflates past
    IMPORT_MAX_DECOMPRESSED_BYTES: see :mod:`webapp.core.limits`)."""
    limits.check_path(path)
    path = Path(path)
    try:
        found = path.is_file() or (folder and path.is_dir())
    except OSError as exc:
        raise ValueError(f"{path}: cannot open the file ({exc.strerror or exc})") from None
    if not found:
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".gz" and path.is_file():  # the readers inflate .gz files as they go (linker.textfiles.open_text)
        limits.check_gzip(path)
    return path


def check_label(value: str | None, what: str, max_length: int | None = None) -> None:
    """A title or release label given with an import: no NUL character, at most ``max_length`` characters."""
    if value is None:
        return
    if "\x00" in value:
        raise ValueError(f"the {what} contains a NUL character")
    if max_length is not None and len(value) > max_length:
        raise ValueError(f"the {what} is longer than {max_length} characters ({value[:40]!r}...)")
