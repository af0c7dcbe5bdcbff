"""``POST /api/auth/token/``: pipelines trade a username and password for a named token.

Each call issues a new token (its key is in the answer and nowhere else): named ``name`` when given, else
"POST /api/auth/token/"; it expires after settings.API_TOKEN_DAYS like any new token. Users see and revoke them on
the API tokens page (/people/tokens/).

Apart from webapp.api.authentication, which DRF imports while its own views module is still loading.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer as DRFAuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from webapp.core.lockout import LOCKED_OUT_STATUS, lockout_message
from webapp.people.tokens import TokenError, issue_token

DEFAULT_NAME = "POST /api/auth/token/"


class AuthTokenSerializer(DRFAuthTokenSerializer):  # DRF's name, so the schema's components keep theirs
    # No longer than a username can be: the lockout records the username of each failure (django-axes,
    # a 255-character column), and a longer one was a 500 there instead of a 400 here.
    username = serializers.CharField(
        label="Username", write_only=True, max_length=get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD).max_length
    )
    name = serializers.CharField(label="Token name", write_only=True, required=False, max_length=100,
                                 help_text=f"What the token is for, shown on the API tokens page (default {DEFAULT_NAME!r}).")


ISSUED = inline_serializer("IssuedToken", fields={
    "token": serializers.CharField(help_text="The key: send it as 'Authorization: Token <key>'. Shown only once."),
    "name": serializers.CharField(),
    "expires_at": serializers.DateTimeField(allow_null=True),
})


class ObtainTokenView(ObtainAuthToken):
    """Trade a username and password for a new named token (send it as ``Authorization: Token <key>``). Requests
    are throttled per client address; after too many wrong passwords for one username from one address, that
    pair is locked out for a while (429, even with the right password), as on the login page."""

    # DRF's view has no throttle at all; the lockout comes from django-axes through ``authenticate``.
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "token"
    serializer_class = AuthTokenSerializer

    @extend_schema(request=AuthTokenSerializer, responses={200: ISSUED})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not settings.LOCAL_LOGIN_ENABLED:
            # Single sign-on only: no password is checked here (the SSO user makes a token on the web instead).
            return Response(
                {"detail": "Password login is switched off here (LOCAL_LOGIN_ENABLED), so a password cannot be traded "
                 f"for a token; sign in with {settings.OIDC_PROVIDER_NAME} in the browser and create an API token there."},
                status=403,
            )
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # The axes backend marks the request it was handed (this DRF request) when the pair is locked out.
            if getattr(request, "axes_locked_out", False):
                return Response({"detail": lockout_message()}, status=LOCKED_OUT_STATUS)
            raise exceptions.ValidationError(serializer.errors)
        data = serializer.validated_data
        try:
            issued = issue_token(data["user"], data.get("name") or DEFAULT_NAME, request=request)
        except TokenError as exc:
            raise exceptions.ValidationError({"detail": str(exc)}) from exc
        expires = issued.token.expires_at
        return Response({"token": issued.key, "name": issued.token.name, "expires_at": expires.isoformat() if expires else None})
