"""Backup and restore (issue #44): a workbench with decisions, a training run and an active index is backed up
with `manage.py backup`, restored by `manage.py restore` into a new empty database on the same server and a new
ARTIFACT_ROOT, and read back by another process: decisions, runs, models, index versions and the panel's
candidates are the same (the old artifact folder is moved away first, so the restored server serves its own copy)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from tests.integration.backup_snapshot import snapshot
from tests.integration.conftest import PROJECT_ROOT, database_url
from tests.integration.project_fixtures import make_user
from webapp.corpus.models import Mention
from webapp.curation import services
from webapp.linking.models import IndexVersion
from webapp.ops.pgtools import ToolError, candidates, choose
from webapp.ops.references import path_fields
from webapp.training.models import TrainingRun
from webapp.vocab.models import Concept

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def restore_database() -> Iterator[dict[str, Any]]:
    """A new empty database beside the test database, dropped at the end."""
    settings_dict = dict(connection.settings_dict)
    name = f"{settings_dict['NAME']}_restore"
    admin = {**settings_dict, "NAME": "postgres"}
    with psycopg.connect(database_url(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield {**settings_dict, "NAME": name}
    with psycopg.connect(database_url(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=300)


def _curate(collection: Any) -> None:
    curator = make_user("carol")
    mentions = list(Mention.objects.filter(document__collection=collection).order_by("pk")[:3])
    services.decide(user=curator, mention_id=mentions[0].pk, action="accept", seen_updated_at=mentions[0].updated_at,
                    part=None)
    concept = Concept.objects.filter(version__dictionary=collection.dictionary).order_by("pk").first()
    services.decide(user=curator, mention_id=mentions[1].pk, action="relink", concept=concept,
                    seen_updated_at=mentions[1].updated_at)
    services.decide(user=curator, mention_id=mentions[2].pk, action="nil", seen_updated_at=mentions[2].updated_at,
                    part=None)


def test_the_fields_that_hold_artifact_folders() -> None:
    # A new kind of artifact is backed up when its folder is in a field of these names; this list says which exist.
    assert [f"{m._meta.label}.{name}" for m, name in path_fields()] == [
        "linking.DetectorVersion.artifact_path", "linking.EncoderModel.artifact_path", "linking.EncoderModel.base_model",
        "linking.IndexVersion.artifact_path", "training.TrainingRun.base_model", "training.WordVectorModel.artifact_path",
    ]


def test_pg_dump_is_chosen_by_the_server_version() -> None:
    found = candidates("pg_dump")
    assert found, "no pg_dump at all: neither the pgserver wheel's nor one on PATH"
    newest = max(t.major for t in found)
    assert choose("pg_dump", newest, newest).major == newest
    # A server newer than every pg_dump here: refused, naming what was found and what to install.
    with pytest.raises(ToolError, match=rf"pg_dump {newest + 1} or newer is needed .* postgresql-client-{newest + 1}"):
        choose("pg_dump", newest + 1, newest + 1)


def test_backup_then_restore_into_an_empty_server(demo, settings, tmp_path, restore_database) -> None:  # type: ignore[no-untyped-def]
    _curate(demo)
    index = IndexVersion.objects.get(state=IndexVersion.State.ACTIVE)
    TrainingRun.objects.create(dictionary=demo.dictionary, method="biosyn", params={"epochs": 1},
                               state=TrainingRun.State.SUCCEEDED, index_version=index, metrics={"acc@1": 0.5})
    before = snapshot()
    assert len(before["decisions"]) >= 3 and before["runs"] and before["indexes"] and any(before["panel"].values())
    assert before["manifests"] and not before["manifests"][0][0].startswith("..")  # the index, under ARTIFACT_ROOT

    archive = tmp_path / "backup" / "workbench.tar"
    call_command("backup", out=str(archive))
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        names = tar.getnames()
    assert names[0] == "database.dump" and names[-1] == "manifest.json"
    assert os.path.relpath(index.artifact_path, settings.ARTIFACT_ROOT) in manifest["folders"]
    assert {a["path"] for a in manifest["artifacts"]} == {n for n in names if n.startswith("artifacts/")}
    assert manifest["migrations"]["curation"] and manifest["database"]["sha256"]

    # The restored server must serve its own copy of the artifacts, not the old folder.
    Path(settings.ARTIFACT_ROOT).rename(tmp_path / "old-artifacts")
    new_root = tmp_path / "new-server" / "artifacts"
    env = {"DATABASE_URL": database_url(restore_database), "ARTIFACT_ROOT": str(new_root), "DB_CONN_MAX_AGE": "0"}
    restored = _manage(env, "manage.py", "restore", str(archive))
    assert restored.returncode == 0, restored.stdout + restored.stderr

    after = _manage(env, "tests/integration/backup_snapshot.py")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout.strip().splitlines()[-1]) == before
    index_path = IndexVersion.objects.get(pk=index.pk).artifact_path
    assert (new_root / os.path.relpath(index_path, tmp_path / "artifacts") / "config.json").is_file()

    again = _manage(env, "manage.py", "restore", str(archive))
    assert again.returncode != 0 and "is not empty" in again.stderr, again.stderr


def test_a_damaged_archive_is_refused_before_the_database_is_touched(demo, settings, tmp_path, restore_database) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "workbench.tar"
    call_command("backup", out=str(archive))
    damaged = tmp_path / "damaged.tar"
    with tarfile.open(archive) as source, tarfile.open(damaged, "w") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read()  # type: ignore[union-attr]  # a small test archive
            if member.name.startswith("artifacts/") and member.name.endswith("config.json"):
                data = data.replace(b"{", b"{ ", 1)
                member.size = len(data)
            target.addfile(member, io.BytesIO(data))
    env = {"DATABASE_URL": database_url(restore_database), "ARTIFACT_ROOT": str(tmp_path / "elsewhere")}
    result = _manage(env, "manage.py", "restore", str(damaged))
    assert result.returncode != 0 and "does not match its manifest" in result.stderr, result.stderr
    with psycopg.connect(database_url(restore_database)) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
