"""Settings helpers refuse malformed values loudly, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import envbool, envint, envlist

ROOT = Path(__file__).resolve().parents[2]


def test_envbool_accepts_the_usual_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in [("1", True), ("true", True), ("On", True), ("0", False), ("no", False), ("", False)]:
        monkeypatch.setenv("FLAG", raw)
        assert envbool("FLAG", not expected) is expected


def test_envbool_names_the_variable_on_a_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe'"):
        envbool("DEBUG", False)


def test_envint_checks_type_and_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("N", "abc")
    with pytest.raises(ImproperlyConfigured, match="N='abc' is not an integer"):
        envint("N", 1)
    monkeypatch.setenv("N", "-3")
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        envint("N", 1, minimum=0)
    monkeypatch.delenv("N")
    assert envint("N", 7) == 7


def test_envlist_splits_on_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert envlist("HOSTS", []) == ["a.example", "b.example"]


def _settings_error(**env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    return result.stderr


def test_settings_refuse_a_non_postgres_database() -> None:
    assert "DATABASE_URL must be a PostgreSQL URL" in _settings_error(DATABASE_URL="sqlite:///db.sqlite3")


def test_settings_refuse_a_short_secret_key() -> None:
    assert "SECRET_KEY must be at least 50 characters" in _settings_error(SECRET_KEY="short")


def test_debug_is_off_by_default() -> None:
    from django.conf import settings

    if "DEBUG" not in os.environ:
        assert settings.DEBUG is False
