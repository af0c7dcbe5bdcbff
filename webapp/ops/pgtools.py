"""Which pg_dump / pg_restore to run against this server, and how to point them at Django's database.

The embedded PostgreSQL (the ``pgserver`` wheel) ships its own client binaries; a team server may run another
major version and the machine's PATH yet another. A dump made by pg_dump N can only be read by pg_restore >= N,
and pg_dump refuses a server newer than itself, so the binaries are chosen by major version, never by PATH alone.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ToolError(RuntimeError):
    """No usable pg_dump / pg_restore, or one of them failed."""


@dataclass(frozen=True)
class Tool:
    path: Path
    major: int


def _bin_folders() -> list[Path]:
    """Where client binaries may be: the pgserver wheel's (found without importing it: its import starts
    nothing, but reads the runtime folder), then Debian's versioned folders; PATH is asked separately."""
    folders = []
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "pginstall" / "bin")
    folders += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"))]
    return folders


def _major(path: Path) -> int | None:
    try:
        text = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return None
    found = re.search(r"\(PostgreSQL\)\s+(\d+)", text)
    return int(found.group(1)) if found else None


def candidates(name: str) -> list[Tool]:
    """Every ``name`` binary found, with its major version (first found first, no duplicates)."""
    paths: list[Path] = [folder / name for folder in _bin_folders() if (folder / name).is_file()]
    on_path = shutil.which(name)
    if on_path:
        paths.append(Path(on_path))
    tools, seen = [], set()
    for path in paths:
        real = path.resolve()
        major = _major(path) if real not in seen else None
        seen.add(real)
        if major is not None:
            tools.append(Tool(path, major))
    return tools


def choose(name: str, at_least: int, server: int) -> Tool:
    """The binary of the server's own major version if there is one, else the oldest one that is new enough
    (``at_least``: the server's version for pg_dump, the dump's for pg_restore)."""
    found = candidates(name)
    exact = [t for t in found if t.major == server and t.major >= at_least]
    if exact:
        return exact[0]
    newer = sorted((t for t in found if t.major >= at_least), key=lambda t: t.major)
    if newer:
        return newer[0]
    have = ", ".join(f"{t.path} ({t.major})" for t in found) or "none"
    raise ToolError(
        f"{name} {at_least} or newer is needed (the server is PostgreSQL {server}), found: {have}. "
        f"Install the PostgreSQL {server} client (Debian: postgresql-client-{server}) or put its bin folder on PATH."
    )


def server_major(cursor: Any) -> int:
    cursor.execute("SHOW server_version_num")
    return int(cursor.fetchone()[0]) // 10000


def client_env(settings_dict: dict[str, Any]) -> dict[str, str]:
    """libpq's variables for Django's connection settings: the password goes through the environment, never argv."""
    env = dict(os.environ)
    for variable, key in (("PGHOST", "HOST"), ("PGPORT", "PORT"), ("PGUSER", "USER"), ("PGPASSWORD", "PASSWORD"),
                          ("PGDATABASE", "NAME")):
        value = settings_dict.get(key)
        if value:
            env[variable] = str(value)
        else:
            env.pop(variable, None)
    return env


def run(tool: Tool, args: list[str], env: dict[str, str]) -> None:
    result = subprocess.run([str(tool.path), *args], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolError(f"{tool.path.name} ({tool.path}) failed with exit status {result.returncode}: "
                        f"{(result.stderr or result.stdout).strip()[-2000:]}")
