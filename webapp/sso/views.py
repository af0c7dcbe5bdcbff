"""The login page (the provider's button beside or instead of the password form), the provider's sign-in start and
callback (mozilla-django-oidc's views, with the endpoints resolved on use), and the logout that ends the provider's
session too."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.views.decorators.http import require_POST
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from webapp.audit import actions
from webapp.audit.events import record
from webapp.sso import provider
from webapp.sso.backend import REFUSAL_ATTRIBUTE

LOCAL_LOGIN_OFF = "Password login is switched off here: sign in with {provider}."


def local_login_refusal() -> str:
    """What a password login is answered when LOCAL_LOGIN_ENABLED is off."""
    return LOCAL_LOGIN_OFF.format(provider=settings.OIDC_PROVIDER_NAME)


class LoginView(auth_views.LoginView):
    """Django's login page; the template shows the provider's button when SSO is on and no password form when local
    login is off (webapp.sso.context_processors). A password posted anyway is refused with a message, never checked."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.LOCAL_LOGIN_ENABLED:
            messages.error(request, local_login_refusal())
            return HttpResponseRedirect(request.path)
        return super().post(request, *args, **kwargs)


class AuthenticateView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's authorization endpoint (discovered on first use)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            messages.error(request, "Single sign-on is not switched on here (OIDC_ENABLED).")
            return HttpResponseRedirect(resolve_url(settings.LOGIN_URL))
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider.setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except provider.ProviderUnavailable as exc:
            messages.error(request, f"Sign-in with {settings.OIDC_PROVIDER_NAME} failed: {exc}.")
            return HttpResponseRedirect(resolve_url(settings.LOGIN_URL))
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here; a refused sign-in says why on the login page."""

    @property
    def failure_url(self) -> str:
        return resolve_url(settings.LOGIN_URL)

    def login_failure(self) -> HttpResponse:
        if self.request.GET.get("error"):
            # The provider's own answer: the person declined consent, or the provider refused the client.
            reason = self.request.GET.get("error_description") or self.request.GET["error"]
        else:
            reason = getattr(self.request, REFUSAL_ATTRIBUTE, "") or "the sign-in could not be completed; try again"
        messages.error(self.request, f"Sign-in with {settings.OIDC_PROVIDER_NAME} failed: {reason}.")
        # A refused sign-in is a failed login for the audit log too (Django's user_login_failed is not sent for it).
        record(actions.LOGIN_FAILED, object_type="user", label=f"sign-in with {settings.OIDC_PROVIDER_NAME}",
               after={"via": "sso", "reason": str(reason)[:500]}, request=self.request, actor=None)
        return super().login_failure()


def end_session_url(request: HttpRequest) -> str:
    """Where the browser goes after the workbench's logout: the provider's end_session_endpoint when this session
    came from it (the provider ends its own session, then sends the browser back to our login page), else our
    login page."""
    back = resolve_url(settings.LOGOUT_REDIRECT_URL)
    id_token = request.session.get("oidc_id_token")
    if not (settings.OIDC_ENABLED and id_token):
        return back
    try:
        endpoint = provider.setting("OIDC_OP_LOGOUT_ENDPOINT")
    except provider.ProviderUnavailable:
        return back
    if not endpoint:
        return back  # a provider without RP-initiated logout (Google): only our session ends
    query = urlencode({
        "id_token_hint": id_token,
        "post_logout_redirect_uri": request.build_absolute_uri(back),
        "client_id": settings.OIDC_RP_CLIENT_ID,
    })
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """POST only, as Django's own logout: a link on another site cannot log anyone out."""
    target = end_session_url(request)  # read before the session, and the ID token in it, is flushed
    auth.logout(request)
    return HttpResponseRedirect(target)
