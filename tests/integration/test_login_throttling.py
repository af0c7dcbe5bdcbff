"""Guessing passwords is bounded: LOGIN_FAILURE_LIMIT (10) wrong passwords for one username from one address
lock that pair out for LOGIN_LOCKOUT_MINUTES (15), on the login page (which says so) and at the API's token
endpoint (429, throttled per address besides); a success resets the count; other users and addresses are
not affected. django-axes keeps the count in the database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from pytest_django.asserts import assertContains
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = 10
LOCKED = "Too many failed logins (10) for this username from your address: logging in is locked for 15 minutes."


@pytest.fixture(autouse=True)
def fast_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    # Dozens of password checks per test: PBKDF2's deliberate slowness is not what is tested here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def login(client: Client, username: str, password: str, address: str = "10.0.0.1"):  # type: ignore[no-untyped-def]
    return client.post("/accounts/login/", {"username": username, "password": password, "next": "/"}, REMOTE_ADDR=address)


def fail(client: Client, username: str, times: int, address: str = "10.0.0.1") -> None:
    for attempt in range(1, times + 1):
        response = login(client, username, "wrong", address)
        if attempt < LIMIT:
            assert response.status_code == 200, attempt
            assertContains(response, "Please enter a correct username and password")


def test_the_limits_are_the_documented_defaults() -> None:
    assert settings.LOGIN_FAILURE_LIMIT == settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["token"] == "30/min"


def test_ten_wrong_passwords_lock_the_login_page_with_a_clear_message(bob: User, client: Client) -> None:
    fail(client, "bob", LIMIT - 1)
    response = login(client, "bob", "wrong")  # the tenth
    assert response.status_code == 429
    assertContains(response, LOCKED, status_code=429)
    assertContains(response, 'role="alert"', status_code=429)
    assertContains(response, '<input type="hidden" name="next" value="/">', html=True, status_code=429)
    # Locked: the right password is refused too, and nobody is logged in.
    response = login(client, "bob", PASSWORD)
    assertContains(response, LOCKED, status_code=429)
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_per_username_and_address(bob: User, charlie: User, client: Client) -> None:
    fail(client, "bob", LIMIT)
    assert login(client, "bob", PASSWORD).status_code == 429
    # The same user from elsewhere, and another user from the same address, still log in.
    assert login(Client(), "bob", PASSWORD, address="10.0.0.2").status_code == 302
    assert login(Client(), "charlie", PASSWORD).status_code == 302


def test_a_success_resets_the_count(bob: User, client: Client) -> None:
    fail(client, "bob", LIMIT - 1)
    assert login(client, "bob", PASSWORD).status_code == 302
    client.post("/accounts/logout/")
    fail(client, "bob", LIMIT - 1)
    assert login(client, "bob", PASSWORD).status_code == 302


def test_the_lockout_ends_after_fifteen_minutes(bob: User, client: Client) -> None:
    fail(client, "bob", LIMIT)
    assert login(client, "bob", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert login(client, "bob", PASSWORD).status_code == 302


def test_the_token_endpoint_is_locked_out_too(bob: User) -> None:
    api = APIClient(REMOTE_ADDR="10.0.0.1")
    for _ in range(LIMIT - 1):
        response = api.post("/api/auth/token/", {"username": "bob", "password": "wrong"}, format="json")
        assert response.status_code == 400
    response = api.post("/api/auth/token/", {"username": "bob", "password": "wrong"}, format="json")
    assert response.status_code == 429
    assert response.json() == {"detail": LOCKED + " Try again later, or reset your password."}
    response = api.post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    assert response.status_code == 429
    assert "token" not in response.json()
    # The page and the API share the count: the login page is locked for the pair as well.
    assert login(Client(), "bob", PASSWORD).status_code == 429
    assert APIClient(REMOTE_ADDR="10.0.0.9").post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json").status_code == 200


def test_the_token_endpoint_is_throttled_per_address(bob: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {**ScopedRateThrottle.THROTTLE_RATES, "token": "3/min"})
    api = APIClient(REMOTE_ADDR="10.0.0.1")
    for _ in range(3):
        assert api.post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json").status_code == 200
    response = api.post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json")
    assert response.status_code == 429
    assert "throttled" in response.json()["detail"]
    assert APIClient(REMOTE_ADDR="10.0.0.2").post("/api/auth/token/", {"username": "bob", "password": PASSWORD}, format="json").status_code == 200
