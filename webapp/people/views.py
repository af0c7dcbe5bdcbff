"""The users page (admins: accounts and roles; project managers: adding members to their projects) and the API
tokens page (everyone: their own tokens; admins: everyone's). Views parse a form, call one service and redirect
with a message saying what happened, or why nothing did."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.core.decorators import admin_required
from webapp.core.roles import ROLES, is_admin
from webapp.people import services
from webapp.people.forms import MemberAddForm, RoleForm, TokenForm, UserCreateForm
from webapp.people.models import ApiToken
from webapp.people.tokens import TokenError, issue_token, revoke_token, tokens_for
from webapp.projects.access import visible_projects
from webapp.projects.models import Member, Project
from webapp.projects.services import ProjectError
from webapp.projects.services.membership import add_member


def _managed_projects(user: Any) -> QuerySet[Project]:
    """The projects whose members the user may add: all for an admin, else those they manage."""
    if is_admin(user):
        return Project.objects.order_by("slug")
    return Project.objects.filter(members__user=user, members__role=Member.Role.MANAGER).distinct().order_by("slug")


def _errors(form: Any) -> str:
    return "; ".join(e for errors in form.errors.values() for e in errors)


@require_GET
def users(request: HttpRequest) -> HttpResponse:
    projects = _managed_projects(request.user)
    admin = is_admin(request.user)
    if not admin and not projects.exists():
        raise PermissionDenied("This page needs the admin role, or the manager role in a project.")
    query = request.GET.get("q", "").strip()[:150]
    context = {
        "rows": services.user_rows(query) if admin else [],
        "query": query,
        "create_form": UserCreateForm(),
        "member_form": MemberAddForm(projects=projects),
        "projects": projects,
        "usernames": get_user_model().objects.filter(is_active=True).order_by("username")
                     .values_list("username", flat=True),
        "roles": ROLES,
    }
    return render(request, "people/users.html", context)


def _user(pk: int) -> Any:
    return get_object_or_404(get_user_model().objects.prefetch_related("groups"), pk=pk)


@require_POST
@admin_required
def user_create(request: HttpRequest) -> HttpResponse:
    form = UserCreateForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"User not created: {_errors(form)}.")
        return redirect("people:users")
    d = form.cleaned_data
    try:
        user = services.create_user(username=d["username"], email=d["email"], role=d["role"], by=request.user,
                                    request=request)
    except services.PeopleError as exc:
        messages.error(request, f"User not created: {exc}.")
        return redirect("people:users")
    said = f"User {user.username} created with the {d['role']} role."
    if d["invite"]:
        said += f" An invitation to set a password went to {services.invite(user, by=request.user, request=request)}."
    else:
        said += " They have no password yet: send the invitation when you are ready."
    messages.success(request, said)
    return redirect(f"{_users_url()}#user-{user.pk}")


def _users_url() -> str:
    return reverse("people:users")


@require_POST
@admin_required
def user_invite(request: HttpRequest, pk: int) -> HttpResponse:
    user = _user(pk)
    try:
        address = services.invite(user, by=request.user, request=request)
    except services.PeopleError as exc:
        messages.error(request, f"No invitation sent: {exc}.")
    else:
        messages.success(request, f"An invitation to set a password went to {address}.")
    return redirect(f"{_users_url()}#user-{user.pk}")


@require_POST
@admin_required
def user_role(request: HttpRequest, pk: int) -> HttpResponse:
    user = _user(pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Role not changed: {_errors(form)}.")
        return redirect("people:users")
    try:
        services.set_role(user, form.cleaned_data["role"], by=request.user, request=request)
    except services.PeopleError as exc:
        messages.error(request, f"Role not changed: {exc}.")
    else:
        messages.success(request, f"{user.username} is now {form.cleaned_data['role']}.")
    return redirect(f"{_users_url()}#user-{user.pk}")


@require_POST
@admin_required
def user_active(request: HttpRequest, pk: int) -> HttpResponse:
    user = _user(pk)
    active = request.POST.get("active") == "1"
    try:
        services.set_active(user, active, by=request.user, request=request)
    except services.PeopleError as exc:
        messages.error(request, f"Nothing changed: {exc}.")
    else:
        messages.success(request, f"{user.username} {'may log in again' if active else 'is deactivated: no login, no session, no API token works'}.")
    return redirect(f"{_users_url()}#user-{user.pk}")


@require_POST
def member_add(request: HttpRequest) -> HttpResponse:
    projects = _managed_projects(request.user)
    if not projects.exists():
        raise PermissionDenied("Adding members needs the admin role, or the manager role in a project.")
    form = MemberAddForm(request.POST, projects=projects)
    if not form.is_valid():
        messages.error(request, f"Member not added: {_errors(form)}.")
        return redirect("people:users")
    d = form.cleaned_data
    try:
        member = add_member(d["project"], d["username"], d["role"], request.user)
    except ProjectError as exc:
        messages.error(request, f"Member not added: {exc}.")
    else:
        messages.success(request, f"{member.user.username} is now {member.get_role_display().lower()} of “{member.project}”.")
    return redirect("people:users")


# --- API tokens --------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """List the tokens; a POST issues one and shows its key on this answer only."""
    projects = visible_projects(request.user).order_by("slug")
    form = TokenForm(request.POST or None, projects=projects)
    issued = None
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        expiry = form.expiry()
        extra = {} if expiry is ... else {"expires_at": expiry}
        try:
            issued = issue_token(request.user, d["name"], read_only=d["read_only"], project=d["project"],
                                 request=request, **extra)
        except TokenError as exc:
            form.add_error(None, str(exc))
        else:
            form = TokenForm(projects=projects)
    context = {"tokens": tokens_for(request.user)[:500], "form": form, "issued": issued, "all_users": is_admin(request.user)}
    response = render(request, "people/tokens.html", context, status=400 if form.errors else 200)
    response["Cache-Control"] = "no-store"  # the one answer with the key in it is kept by no cache
    return response


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.select_related("user"), pk=pk)
    if token.user_id != request.user.pk and not is_admin(request.user):
        raise PermissionDenied("Only the token's owner or an admin may revoke it.")
    try:
        revoke_token(token, by=request.user, request=request)
    except TokenError as exc:
        messages.error(request, f"Nothing changed: {exc}.")
    else:
        messages.success(request, f"Token “{token.name}” ({token.prefix}…) revoked: it no longer works.")
    return redirect("people:tokens")
