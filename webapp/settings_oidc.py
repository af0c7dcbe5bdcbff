"""The single sign-on settings (OpenID Connect: webapp.sso, mozilla-django-oidc; docs/sso.md), read from the
environment. ``webapp.settings`` takes every upper-case name of this module and its authentication backends from
:func:`authentication_backends`; kept apart so that the settings module stays one screenful per concern."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from webapp.env import envbool, envint, envlist, envstr

# Off by default. The provider's endpoints come from its discovery document (OIDC_OP_ISSUER +
# /.well-known/openid-configuration), read on the first sign-in rather than at start-up, so that a provider that is
# down never stops the workbench (nor local login) from starting; an endpoint set here is used as given.
OIDC_ENABLED = envbool("OIDC_ENABLED", False)
LOCAL_LOGIN_ENABLED = envbool("LOCAL_LOGIN_ENABLED", True)
OIDC_PROVIDER_NAME = envstr("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_RP_CLIENT_ID = envstr("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = envstr("OIDC_RP_CLIENT_SECRET")
OIDC_OP_ISSUER = envstr("OIDC_OP_ISSUER").rstrip("/")
OIDC_OP_AUTHORIZATION_ENDPOINT = envstr("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = envstr("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = envstr("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = envstr("OIDC_OP_JWKS_ENDPOINT")
OIDC_OP_LOGOUT_ENDPOINT = envstr("OIDC_OP_LOGOUT_ENDPOINT")  # the provider's end_session_endpoint
OIDC_RP_SIGN_ALGO = envstr("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = envstr("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = envbool("OIDC_USE_PKCE", True)
OIDC_VERIFY_SSL = envbool("OIDC_VERIFY_SSL", True)
OIDC_TIMEOUT = envint("OIDC_TIMEOUT_S", 10, 1)
OIDC_STORE_ID_TOKEN = True  # the logout hands it to the provider (id_token_hint)
OIDC_CREATE_USER = envbool("OIDC_CREATE_USER", True)
OIDC_USERNAME_CLAIM = envstr("OIDC_USERNAME_CLAIM", "preferred_username")  # then email, then sub
OIDC_LINK_EXISTING_USERS = envbool("OIDC_LINK_EXISTING_USERS", False)  # an account of the same username becomes theirs
OIDC_ALLOWED_EMAIL_DOMAINS = [d.lower() for d in envlist("OIDC_ALLOWED_EMAIL_DOMAINS", [])]
OIDC_ROLES_FROM_PROVIDER = envbool("OIDC_ROLES_FROM_PROVIDER", True)
OIDC_ROLES_CLAIM = envstr("OIDC_ROLES_CLAIM", "groups")
OIDC_ADMIN_VALUES = envlist("OIDC_ADMIN_VALUES", [])
OIDC_CURATOR_VALUES = envlist("OIDC_CURATOR_VALUES", [])
OIDC_VIEWER_VALUES = envlist("OIDC_VIEWER_VALUES", [])
OIDC_DEFAULT_ROLE = envstr("OIDC_DEFAULT_ROLE")  # for one whose claims map to no role; empty: such a sign-in is refused
OIDC_PROJECTS_CLAIM = envstr("OIDC_PROJECTS_CLAIM")  # values project:<slug>:<annotator|adjudicator|manager>


def authentication_backends(backends: list[str]) -> list[str]:
    """The backends with the provider's added when single sign-on is on, and without passwords when local login is
    off; a configuration nobody could sign in with stops start-up, naming what to set."""
    backends = list(backends)
    if OIDC_ENABLED:
        if not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
            raise ImproperlyConfigured("OIDC_ENABLED is on: set OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET (the client registered at the provider)")
        _endpoints = (OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT, OIDC_OP_JWKS_ENDPOINT)
        if not OIDC_OP_ISSUER and not all(_endpoints):
            raise ImproperlyConfigured(
                "OIDC_ENABLED is on: set OIDC_OP_ISSUER (the provider's issuer URL, whose /.well-known/openid-configuration "
                "names its endpoints) or all of OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT "
                "and OIDC_OP_JWKS_ENDPOINT"
            )
        if OIDC_DEFAULT_ROLE not in ("", "viewer", "curator", "admin"):
            raise ImproperlyConfigured(f"OIDC_DEFAULT_ROLE={OIDC_DEFAULT_ROLE!r} is not a role (viewer, curator, admin or empty)")
        backends.append("webapp.sso.backend.OIDCBackend")
    elif not LOCAL_LOGIN_ENABLED:
        raise ImproperlyConfigured("LOCAL_LOGIN_ENABLED is off and OIDC_ENABLED is not on: nobody could log in")
    if not LOCAL_LOGIN_ENABLED:
        # No password is checked anywhere (login page, POST /api/auth/token/, the admin site): the provider's sign-in only.
        backends.remove("django.contrib.auth.backends.ModelBackend")
    return backends
