"""Password reset works without a login; HTTPS settings (HSTS, the SSL redirect) come from the environment,
off for the embedded local run; a production SECRET_KEY must have 50 characters."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from pytest_django.asserts import assertContains

ROOT = Path(__file__).resolve().parents[2]
LONG_KEY = "k3y-Z" * 12  # 60 characters, 5 different ones


def run_django(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh Python with the project's settings and ``env`` over this environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY") and not k.startswith("SECURE_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "webapp.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- password reset ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_password_reset_works_end_to_end_without_a_login(bob: User, client: Client) -> None:
    login_page = client.get("/accounts/login/")
    assertContains(login_page, 'href="/accounts/password_reset/"')
    assert client.get("/accounts/password_reset/").status_code == 200
    response = client.post("/accounts/password_reset/", {"email": "bob@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert client.get("/accounts/password_reset/done/").status_code == 200
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/accounts/reset/\S+/)", message.body).group(1)  # type: ignore[union-attr]
    form = client.get(link, follow=True)  # Django swaps the token for a session key, then shows the form
    assert form.status_code == 200
    assertContains(form, 'name="new_password1"')
    new = "a-new-long-password-42"
    done = client.post(form.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert client.get("/accounts/reset/done/").status_code == 200
    bob.refresh_from_db()
    assert bob.check_password(new)


@pytest.mark.django_db
def test_changing_a_password_still_needs_a_login(client: Client) -> None:
    response = client.get("/accounts/password_change/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


# --- HTTPS ------------------------------------------------------------------------------------------------


def test_https_settings_are_off_by_default() -> None:
    from django.conf import settings

    if not any(k.startswith("SECURE_") for k in os.environ):
        assert settings.SECURE_SSL_REDIRECT is False
        assert settings.SECURE_HSTS_SECONDS == 0


@pytest.mark.django_db
def test_hsts_and_the_ssl_redirect_follow_the_settings(client: Client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/accounts/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/accounts/login/"
    response = client.get("/accounts/login/", secure=True)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000"
    # Load balancers probe /healthz over plain HTTP.
    assert client.get("/healthz").status_code in (200, 503)


@pytest.mark.slow
def test_check_deploy_has_no_https_or_secret_key_warning_when_configured() -> None:
    configured = run_django(
        "import django, sys; django.setup(); from django.core.management import call_command; "
        "call_command('check', deploy=True, tags=['security'])",
        SECRET_KEY=LONG_KEY, SECURE_COOKIES="true", SECURE_SSL_REDIRECT="true", SECURE_HSTS_SECONDS="31536000",
    )
    output = configured.stdout + configured.stderr
    assert configured.returncode == 0, output
    for warning in ("W004", "W008", "W009", "W012", "W016"):
        assert f"security.{warning}" not in output, output
    # Off by default (the embedded local run is plain HTTP), and so reported.
    default = run_django(
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check', deploy=True, tags=['security'])",
        SECRET_KEY=LONG_KEY,
    )
    assert "security.W004" in default.stderr and "security.W008" in default.stderr, default.stderr


# --- the secret key -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["x" * 40 + "abcde", "abcd" * 20])
def test_a_short_or_repetitive_secret_key_is_refused_when_debug_is_off(key: str) -> None:
    result = run_django("import django; django.setup()", SECRET_KEY=key)
    assert result.returncode != 0
    assert (
        f"SECRET_KEY must be at least 50 characters long, with at least 5 different characters when DEBUG is off (it has {len(key)})"
        in result.stderr
    )
    assert "secrets.token_urlsafe(50)" in result.stderr


def test_a_long_secret_key_or_debug_on_is_accepted() -> None:
    assert run_django("import django; django.setup()", SECRET_KEY=LONG_KEY).returncode == 0
    developer = run_django("import django; django.setup()", SECRET_KEY="d" * 30 + "ev-key", DEBUG="true")
    assert developer.returncode == 0, developer.stderr
