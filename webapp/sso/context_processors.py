"""What the login page (and the lockout page, which django-axes renders from the same template) shows."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest


def sso(request: HttpRequest) -> dict[str, Any]:
    return {
        "sso_enabled": settings.OIDC_ENABLED,
        "sso_provider_name": settings.OIDC_PROVIDER_NAME,
        "local_login_enabled": settings.LOCAL_LOGIN_ENABLED,
    }
