"""``Authorization: Token <key>`` with named tokens (webapp.people.tokens).

- an unknown, revoked or expired key, or one whose user is deactivated: 401, saying which;
- a read-only token on POST, PUT, PATCH or DELETE: 403;
- a project-scoped token: the token is ``request.auth``, and the API's lists and lookups keep to its project
  (webapp.api.scope), so anything outside it is a 404.

Keys of DRF's former one-token-per-user were moved into named tokens (webapp/people/migrations/0002), so they keep
working. Models are imported inside the methods: DRF imports this module while its own views are still loading.
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

READ_ONLY_REFUSAL = "This token is read-only: it may GET, but not POST, PUT, PATCH or DELETE."


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        found = super().authenticate(request)
        if found is not None and found[1].read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied(READ_ONLY_REFUSAL)
        return found

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        from webapp.people.tokens import TokenRefused, authenticate_key

        # PostgreSQL cannot even compare a key with a NUL character in it; it is no key of ours either.
        if "\x00" in key:
            raise exceptions.AuthenticationFailed("Invalid token.")
        try:
            token = authenticate_key(key)
        except TokenRefused as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return token.user, token
