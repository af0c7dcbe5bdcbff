"""The login page, the API's token trade and the logout with single sign-on configured: the provider's button, local
password login switched off (LOCAL_LOGIN_ENABLED), the logout through the provider's end_session_endpoint, a refused
or failed sign-in said on the login page, and settings that cannot work refused at start-up."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory

from tests.conftest import PASSWORD
from webapp.audit.models import AuditEvent
from webapp.sso import provider

pytestmark = pytest.mark.django_db

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
OIDC_BACKEND = "webapp.sso.backend.OIDCBackend"


@pytest.fixture
def sso(settings):  # type: ignore[no-untyped-def]
    """SSO on with explicit endpoints (nothing here reaches a provider; the browser test has a real one)."""
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Lab ID"
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "workbench", "s3cret"
    settings.OIDC_OP_ISSUER = ""
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "https://id.example.org/auth"
    settings.OIDC_OP_TOKEN_ENDPOINT = "https://id.example.org/token"
    settings.OIDC_OP_USER_ENDPOINT = "https://id.example.org/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = "https://id.example.org/jwks"
    settings.OIDC_OP_LOGOUT_ENDPOINT = "https://id.example.org/logout"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, OIDC_BACKEND]
    provider.forget()
    return settings


@pytest.fixture
def sso_only(sso):  # type: ignore[no-untyped-def]
    sso.LOCAL_LOGIN_ENABLED = False
    sso.AUTHENTICATION_BACKENDS = [b for b in sso.AUTHENTICATION_BACKENDS if b != MODEL_BACKEND]
    return sso


def test_the_login_page_offers_the_provider_beside_the_password_form(client: Client, sso) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/accounts/login/?next=/curate/").content.decode()
    assert 'href="/oidc/authenticate/?next=/curate/"' in page and "Sign in with Lab ID" in page
    assert 'name="password"' in page


def test_without_sso_the_login_page_has_no_provider_button(client: Client) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page


def test_with_local_login_off_only_the_provider_button_is_shown_and_a_password_is_refused(client: Client, alice, sso_only) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Lab ID" in page and 'name="password"' not in page and "Forgot your password" not in page
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}, follow=True)
    assert "Password login is switched off here: sign in with Lab ID." in response.content.decode()
    assert not response.context["user"].is_authenticated
    # No backend checks a password.
    assert authenticate(RequestFactory().post("/accounts/login/"), username="alice", password=PASSWORD) is None


def test_with_local_login_off_the_api_does_not_trade_a_password_for_a_token(client: Client, alice, sso_only) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/api/auth/token/", {"username": "alice", "password": PASSWORD}, content_type="application/json")
    assert response.status_code == 403
    assert "Password login is switched off here (LOCAL_LOGIN_ENABLED)" in response.json()["detail"]


def test_the_button_sends_the_browser_to_the_provider_with_state_nonce_and_pkce(client: Client, sso) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/oidc/authenticate/?next=/curate/")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    query = parse_qs(target.query)
    assert f"{target.scheme}://{target.netloc}{target.path}" == "https://id.example.org/auth"
    assert query["client_id"] == ["workbench"] and query["response_type"] == ["code"]
    assert query["redirect_uri"] == ["http://testserver/oidc/callback/"]
    assert query["code_challenge_method"] == ["S256"] and query["nonce"] and query["state"]


def test_a_provider_that_cannot_be_reached_is_said_on_the_login_page(client: Client, sso) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sso.OIDC_OP_ISSUER = f"http://127.0.0.1:{port}/realms/lab"
    sso.OIDC_OP_AUTHORIZATION_ENDPOINT = ""
    response = client.get("/oidc/authenticate/", follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/login/"
    assert "could not read the identity provider&#x27;s discovery document at " \
           f"http://127.0.0.1:{port}/realms/lab/.well-known/openid-configuration" in response.content.decode()


def test_the_providers_refusal_is_said_on_the_login_page(client: Client, sso) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/oidc/callback/?error=access_denied&error_description=The+user+declined", follow=True)
    (failed,) = AuditEvent.objects.filter(action="login.failed")  # the audit log has it as a failed login
    assert failed.after == {"via": "sso", "reason": "The user declined"} and failed.actor_name == ""
    assert "Sign-in with Lab ID failed: The user declined." in response.content.decode()
    assert not response.context["user"].is_authenticated


def test_logout_of_an_sso_session_goes_through_the_providers_end_session_endpoint(client: Client, alice, sso) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice, backend=OIDC_BACKEND)
    session = client.session
    session["oidc_id_token"] = "the.id.token"
    session.save()
    response = client.post("/accounts/logout/")
    target = urlsplit(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == "https://id.example.org/logout"
    assert parse_qs(target.query) == {"id_token_hint": ["the.id.token"], "client_id": ["workbench"],
                                      "post_logout_redirect_uri": ["http://testserver/accounts/login/"]}
    assert "_auth_user_id" not in client.session


def test_logout_of_a_password_session_stays_here(client: Client, alice, sso) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    assert client.post("/accounts/logout/")["Location"] == "/accounts/login/"
    client.force_login(alice)
    assert client.get("/accounts/logout/").status_code == 405  # a link elsewhere cannot log anyone out


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"OIDC_ENABLED": "1"}, "set OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET"),
        ({"OIDC_ENABLED": "1", "OIDC_RP_CLIENT_ID": "a", "OIDC_RP_CLIENT_SECRET": "b"}, "set OIDC_OP_ISSUER"),
        ({"LOCAL_LOGIN_ENABLED": "0"}, "nobody could log in"),
        ({"OIDC_ENABLED": "1", "OIDC_RP_CLIENT_ID": "a", "OIDC_RP_CLIENT_SECRET": "b", "OIDC_OP_ISSUER": "https://x",
          "OIDC_DEFAULT_ROLE": "owner"}, "OIDC_DEFAULT_ROLE='owner' is not a role"),
    ],
)
def test_settings_that_cannot_work_stop_the_start(environment: dict[str, str], message: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OIDC_", "LOCAL_LOGIN"))}
    result = subprocess.run([sys.executable, "-c", "import webapp.settings"], env={**env, **environment},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and message in result.stderr
