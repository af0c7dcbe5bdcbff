"""``POST /api/auth/token/``: pipelines trade a username and password for a token.

Apart from webapp.api.authentication, which DRF imports while its own views module is still loading.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework import exceptions, serializers
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer as DRFAuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from webapp.core.lockout import LOCKED_OUT_STATUS, lockout_message


class AuthTokenSerializer(DRFAuthTokenSerializer):  # DRF's name, so the schema's components keep theirs
    # No longer than a username can be: the lockout records the username of each failure (django-axes,
    # a 255-character column), and a longer one was a 500 there instead of a 400 here.
    username = serializers.CharField(
        label="Username", write_only=True, max_length=get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD).max_length
    )


class ObtainTokenView(ObtainAuthToken):
    """Trade a username and password for a token (send it as ``Authorization: Token <key>``). Requests are
    throttled per client address; after too many wrong passwords for one username from one address, that
    pair is locked out for a while (429, even with the right password), as on the login page."""

    # DRF's view has no throttle at all; the lockout comes from django-axes through ``authenticate``.
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "token"
    serializer_class = AuthTokenSerializer

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # The axes backend marks the request it was handed (this DRF request) when the pair is locked out.
            if getattr(request, "axes_locked_out", False):
                return Response({"detail": lockout_message()}, status=LOCKED_OUT_STATUS)
            raise exceptions.ValidationError(serializer.errors)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})
