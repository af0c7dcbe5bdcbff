"""Single sign-on in a browser against a real OpenID provider (django-oauth-toolkit's, started by the test in its own
process): the login page's button, the provider's login and consent, a new workbench user with the role its groups
claim maps to, and a logout that ends the provider's session too."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group, User

from tests.oidc_provider.launch import Provider, running_provider
from webapp.audit.models import AuditEvent
from webapp.core.roles import ROLES
from webapp.sso import provider as sso_provider
from webapp.sso.models import Identity

PROVIDER_PASSWORD = "provider-password-8431"


@pytest.fixture
def provider(live_server, tmp_path) -> Iterator[Provider]:  # type: ignore[no-untyped-def]
    with running_provider(
        tmp_path / "provider",
        redirect_uri=f"{live_server.url}/oidc/callback/",
        post_logout_redirect_uri=f"{live_server.url}/accounts/login/",
        users=[{"username": "grace", "password": PROVIDER_PASSWORD, "email": "grace@example.org",
                "first_name": "Grace", "last_name": "Hopper", "groups": ["staff", "wb-admins"]},
               {"username": "mallory", "password": PROVIDER_PASSWORD, "email": "mallory@example.org", "groups": ["staff"]}],
    ) as running:
        yield running


@pytest.fixture
def sso_on(settings, provider, transactional_db) -> Provider:  # type: ignore[no-untyped-def]
    from django.db import connections

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    for role in ROLES:  # a transactional test flushes the groups the migrations made
        Group.objects.get_or_create(name=role)
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Test Provider"
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_OP_ISSUER = provider.issuer
    settings.OIDC_ROLES_CLAIM = "groups"
    settings.OIDC_ADMIN_VALUES = ["wb-admins"]
    settings.OIDC_CURATOR_VALUES = ["wb-curators"]
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "webapp.sso.backend.OIDCBackend"]
    sso_provider.forget()
    return provider


def test_sign_in_through_the_provider_as_a_new_admin_and_log_out_of_both(live_server, browser, sso_on, screenshots) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.screenshot(path=str(screenshots / "sso-login.png"))
    page.click("text=Sign in with Test Provider")

    # The provider's own login page, then its consent page for the workbench's client.
    page.wait_for_url(re.compile(re.escape(sso_on.issuer.removesuffix("/o")) + r"/accounts/login/"))
    page.fill("input[name=username]", "grace")
    page.fill("input[name=password]", PROVIDER_PASSWORD)
    page.click("#provider-login")
    page.wait_for_selector("input[name=allow]")
    page.click("input[name=allow]")

    page.wait_for_url(f"{live_server.url}/", timeout=20_000)
    assert page.locator("nav.mainnav >> text=Admin").count() == 1, sso_on.log.read_text()[-2000:]
    assert page.text_content(".account .role") == "admin"
    page.screenshot(path=str(screenshots / "sso-signed-in.png"))
    grace = User.objects.get(username="grace")
    assert (grace.email, grace.first_name, grace.last_name) == ("grace@example.org", "Grace", "Hopper")
    assert set(grace.groups.values_list("name", flat=True)) == {"admin"}
    assert not grace.has_usable_password()
    assert Identity.objects.get(user=grace).issuer == sso_on.issuer
    assert AuditEvent.objects.filter(action="user.created", object_id=str(grace.pk)).count() == 1

    # Logging out of the workbench passes through the provider's end_session_endpoint and comes back to our login.
    page.click("text=Log out")
    page.wait_for_url(f"{live_server.url}/accounts/login/", timeout=20_000)
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url  # the workbench's session is gone

    # ...and so is the provider's: signing in again asks for the password at the provider.
    page.click("text=Sign in with Test Provider")
    page.wait_for_url(re.compile(re.escape(sso_on.issuer.removesuffix("/o")) + r"/accounts/login/"))
    assert page.locator("#provider-login").count() == 1
    context.close()


def test_someone_whose_groups_map_to_no_role_is_refused_with_the_reason(live_server, browser, sso_on) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.click("text=Sign in with Test Provider")
    page.fill("input[name=username]", "mallory")
    page.fill("input[name=password]", PROVIDER_PASSWORD)
    page.click("#provider-login")
    page.click("input[name=allow]")
    page.wait_for_url(f"{live_server.url}/accounts/login/", timeout=20_000)
    assert "Sign-in with Test Provider failed: your account has no workbench role: its 'groups' claim (staff)" \
        in page.inner_text(".messages")
    assert not User.objects.filter(username="mallory").exists()
    context.close()
