"""Upgrades (issue #44): a database made by an earlier version, with a team's work in it, migrates to this one with
nothing lost. The earlier version is commit 97b95cc (before the one job model and the apps' moves of issue #42):
its tree is taken from git history, its own `migrate` makes the schema and its own commands and services the data
(tests/integration/upgrade_old_data.py); then this checkout's `migrate` runs on that database and today's models
read everything back (tests/integration/upgrade_read_back.py). docs/upgrades.md says how to upgrade a server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.integration.conftest import PROJECT_ROOT, database_url

pytestmark = pytest.mark.slow

PREVIOUS = "97b95cc"  # the schema before issue #42's job model: its migrations rewrite ids (docs/upgrades.md)
HERE = Path(__file__).resolve().parent


def _previous_tree(into: Path) -> None:
    """The earlier commit's files, or a skip that says why there are none (no git, a shallow clone)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the earlier version's migrations come from the history")
    found = subprocess.run(["git", "cat-file", "-e", f"{PREVIOUS}^{{commit}}"], cwd=PROJECT_ROOT, capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"commit {PREVIOUS} is not in this clone's history (a shallow clone? `git fetch --unshallow`)")
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", PREVIOUS], cwd=PROJECT_ROOT, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    assert archive.wait() == 0


@pytest.fixture
def upgrade_database() -> Iterator[dict[str, Any]]:
    """A new empty database on the test's server, dropped at the end."""
    settings_dict = dict(connection.settings_dict)
    name = f"{settings_dict['NAME']}_upgrade"
    admin = {**settings_dict, "NAME": "postgres"}
    with psycopg.connect(database_url(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield {**settings_dict, "NAME": name}
    with psycopg.connect(database_url(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    started = time.monotonic()
    result = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    print(f"{' '.join(args)} in {cwd.name}: {time.monotonic() - started:.1f} s")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_a_database_of_the_previous_schema_migrates_with_nothing_lost(tmp_path, upgrade_database) -> None:  # type: ignore[no-untyped-def]
    old = tmp_path / "previous"
    _previous_tree(old)
    shutil.copy(HERE / "upgrade_old_data.py", old / "upgrade_old_data.py")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(DATABASE_URL=database_url(upgrade_database), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               ARTIFACT_ROOT=str(tmp_path / "artifacts"), EMBEDDED_DATA_DIR=str(tmp_path / "var"), DB_CONN_MAX_AGE="0")

    before = json.loads(_run(["upgrade_old_data.py"], old, env).strip().splitlines()[-1])
    assert before["decisions"] and before["runs"] and before["import_jobs"] and before["members"]
    _run(["manage.py", "migrate", "--noinput", "-v", "0"], PROJECT_ROOT, env)
    after = json.loads(_run([str(HERE / "upgrade_read_back.py")], PROJECT_ROOT, env).strip().splitlines()[-1])

    assert after == before
