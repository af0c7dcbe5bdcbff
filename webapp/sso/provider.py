"""The identity provider's endpoints: those set in the settings, the rest from its discovery document.

The discovery document (``OIDC_OP_ISSUER`` + ``/.well-known/openid-configuration``) is read on the first sign-in of
a process and kept for the process's life; a failed read is not kept, so the next sign-in tries again.
"""

from __future__ import annotations

import threading
from typing import Any

import requests
from django.conf import settings

# Our setting -> the discovery document's key (OpenID Connect Discovery 1.0, section 3).
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}

_lock = threading.Lock()
_discovered: dict[tuple[str, str], dict[str, Any]] = {}


class ProviderUnavailable(Exception):
    """The discovery document could not be read; the message names the URL and why."""


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def _discovery() -> dict[str, Any]:
    issuer = settings.OIDC_OP_ISSUER
    if not issuer:
        return {}
    key = (issuer, settings.OIDC_RP_CLIENT_ID)  # a test that changes the settings gets its own document
    with _lock:
        if key in _discovered:
            return _discovered[key]
    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"could not read the identity provider's discovery document at {url}: {exc}") from exc
    if not isinstance(document, dict) or document.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
        # The ID token's iss is checked against the issuer, so a document that names another one is a misconfiguration.
        found = document.get("issuer") if isinstance(document, dict) else None
        raise ProviderUnavailable(f"the discovery document at {url} names the issuer {found!r}, not OIDC_OP_ISSUER={issuer!r}")
    with _lock:
        _discovered[key] = document
    return document


def setting(name: str) -> str:
    """An endpoint setting (a key of :data:`ENDPOINTS`): as set, else the provider's discovered one ("" when it has
    none, as a provider without RP-initiated logout has no end_session_endpoint)."""
    value = getattr(settings, name, "")
    if value:
        return value
    return str(_discovery().get(ENDPOINTS[name]) or "")


def issuer() -> str:
    return settings.OIDC_OP_ISSUER or str(_discovery().get("issuer") or "")


def same_issuer(claimed: str, expected: str) -> bool:
    """Whether an ID token's ``iss`` names the expected issuer. Google's tokens may say ``accounts.google.com``
    without the scheme, as its documentation allows; any other difference is another issuer."""
    claimed, expected = claimed.rstrip("/"), expected.rstrip("/")
    return claimed == expected or (expected == "https://accounts.google.com" and claimed == "accounts.google.com")


def forget() -> None:
    """Read the discovery document again on the next sign-in (tests; a provider that moved its endpoints)."""
    with _lock:
        _discovered.clear()
