"""The authentication backend of the provider's sign-in: mozilla-django-oidc's code flow (state, nonce, PKCE, the
token exchange, the ID token's signature against the provider's keys), with the endpoints resolved on use
(webapp.sso.provider), the ID token's audience and issuer checked, and users found and updated by webapp.sso.sync.

It never checks a password: with LOCAL_LOGIN_ENABLED off it is the only way in.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from webapp.sso import provider, sync
from webapp.sso.claims import ClaimsRefused, Mapping

log = logging.getLogger(__name__)

# Where the callback view finds why a sign-in was refused, to say so on the login page.
REFUSAL_ATTRIBUTE = "sso_refusal"


class OIDCBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django makes a backend for every authenticate() call, a password login's too: nothing here may reach the
        # provider, so the endpoints are looked up (and discovered) only when a code is exchanged.
        ModelBackend.__init__(self, *args, **kwargs)
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # noqa: N802 (the library's attribute names)
        return provider.setting("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:  # noqa: N802
        return provider.setting("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:  # noqa: N802
        return provider.setting("OIDC_OP_JWKS_ENDPOINT")

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        if attr in provider.ENDPOINTS:
            return provider.setting(attr)
        return import_from_settings(attr, *args)

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        # Only the provider's callback (it passes the nonce it kept); a username and password are never ours.
        if request is None or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except provider.ProviderUnavailable as exc:
            log.warning("single sign-on: %s", exc)
            setattr(request, REFUSAL_ATTRIBUTE, f"the identity provider could not be reached ({exc})")
        except ClaimsRefused as exc:
            log.info("single sign-on refused: %s", exc)
            setattr(request, REFUSAL_ATTRIBUTE, str(exc))
        except (SuspiciousOperation, OSError, ValueError) as exc:  # requests' errors are OSErrors
            log.warning("single sign-on failed: %s", exc)
            setattr(request, REFUSAL_ATTRIBUTE, f"the identity provider's answer was not accepted ({exc})")
        return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload = super().verify_token(token, **kwargs)
        if "nonce" in kwargs:  # the ID token (a signed userinfo answer comes without one)
            audience = payload.get("aud")
            audiences = audience if isinstance(audience, list) else [audience]
            if self.OIDC_RP_CLIENT_ID not in audiences:
                raise SuspiciousOperation(f"the ID token is for {audience!r}, not this client ({self.OIDC_RP_CLIENT_ID})")
            issuer = provider.issuer()
            if issuer and not provider.same_issuer(str(payload.get("iss", "")), issuer):
                raise SuspiciousOperation(f"the ID token was issued by {payload.get('iss')!r}, not {issuer!r}")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        info = self.get_userinfo(access_token, id_token, payload)
        if info.get("sub") != payload.get("sub"):
            # OpenID Connect Core 5.3.2: a userinfo answer for another subject must not be used.
            raise SuspiciousOperation("the userinfo answer is for another subject than the ID token")
        return sync.sign_in(
            str(payload.get("iss") or provider.issuer()), {**payload, **info}, Mapping.from_settings(),
            create=settings.OIDC_CREATE_USER, link_existing=settings.OIDC_LINK_EXISTING_USERS,
            roles_from_provider=settings.OIDC_ROLES_FROM_PROVIDER,
        )

    def get_user(self, user_id: Any) -> Any:
        return ModelBackend.get_user(self, user_id)
