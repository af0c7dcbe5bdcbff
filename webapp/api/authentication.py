"""DRF's token authentication, refusing keys PostgreSQL cannot even compare (a NUL character) with 401."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if "\x00" in key:
            raise exceptions.AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)
