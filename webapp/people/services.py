"""Accounts and roles, as an admin changes them from the users page: create or invite a user, set the role,
deactivate and reactivate. Each write records its audit event in its own transaction.

A deactivated user cannot log in, their open sessions no longer authenticate (Django's ModelBackend refuses an
inactive user's session) and their API tokens get 401 (webapp.people.tokens.authenticate_key).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Count, Max, Q, QuerySet
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.roles import ADMIN, ROLES, role_of


class PeopleError(ValueError):
    """A change to an account that was refused, with the reason in words."""


@dataclass(frozen=True)
class UserRow:
    user: Any
    role: str
    decisions: int
    last_decision: datetime | None


def user_rows(query: str = "") -> list[UserRow]:
    """Every account with its role, state, last login and curation activity, by username."""
    users: QuerySet[Any] = (get_user_model().objects.prefetch_related("groups")
                            .annotate(decision_count=Count("curation_decisions"),
                                      last_decision=Max("curation_decisions__created_at"))
                            .order_by("username"))
    if query:
        users = users.filter(Q(username__icontains=query) | Q(email__icontains=query))
    rows = []
    for user in users:
        user._workbench_groups = frozenset(g.name for g in user.groups.all())  # what roles.py would query again
        rows.append(UserRow(user, role_of(user), user.decision_count, user.last_decision))
    return rows


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise PeopleError(f"unknown role {role!r}; a role is one of {', '.join(ROLES)}")


def _give_role(user: Any, role: str) -> None:
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    user.__dict__.pop("_workbench_groups", None)


def _account(user: Any) -> dict[str, Any]:
    return {"username": user.get_username(), "email": user.email, "role": role_of(user), "active": user.is_active}


@transaction.atomic
def create_user(*, username: str, email: str, role: str, by: Any, request: Any = None) -> Any:
    """A new account with the role and no password yet: it is set through the invitation link
    (:func:`invite`)."""
    _check_role(role)
    username, email = username.strip(), email.strip()
    if not username:
        raise PeopleError("a user needs a username")
    model = get_user_model()
    if model.objects.filter(username__iexact=username).exists():
        raise PeopleError(f"a user called {username!r} exists already")
    if email and model.objects.filter(email__iexact=email).exists():
        raise PeopleError(f"{email} is the e-mail address of another user already")
    user = model.objects.create_user(username=username, email=email)  # no password: unusable until set
    _give_role(user, role)
    record(actions.USER_CREATED, actor=by, obj=user, label=username, after=_account(user), request=request)
    return user


def invite(user: Any, *, by: Any, request: Any) -> str:
    """Mail the user a link to set their password (Django's password-reset link, valid for
    settings.PASSWORD_RESET_TIMEOUT); the address it went to."""
    if not user.email:
        raise PeopleError(f"{user.get_username()} has no e-mail address to send the invitation to")
    if not user.is_active:
        raise PeopleError(f"{user.get_username()}'s account is deactivated; reactivate it first")
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})
    link = request.build_absolute_uri(path)
    with transaction.atomic():
        record(actions.USER_INVITED, actor=by, obj=user, label=user.get_username(), after={"email": user.email}, request=request)
        send_mail(
            "Your EL Workbench account",
            f"{by.get_username()} made you an account on the EL Workbench, user name {user.get_username()} "
            f"({role_of(user) or 'no role yet'}).\n\nSet your password here (the link works once and expires):\n{link}\n",
            None, [user.email],
        )
    return user.email


def _active_admins() -> QuerySet[Any]:
    return get_user_model().objects.filter(Q(groups__name=ADMIN) | Q(is_superuser=True), is_active=True).distinct()


@transaction.atomic
def set_role(user: Any, role: str, *, by: Any, request: Any = None) -> Any:
    _check_role(role)
    before = role_of(user)
    if before == role:
        return user
    if user.is_superuser:
        raise PeopleError(f"{user.get_username()} is a Django superuser, an admin whatever the role; "
                          "take the superuser flag away in the admin site first")
    if before == ADMIN and not _active_admins().exclude(pk=user.pk).exists():
        raise PeopleError(f"{user.get_username()} is the last active admin; make another admin first")
    _give_role(user, role)
    record(actions.USER_ROLE_CHANGED, actor=by, obj=user, label=user.get_username(), before={"role": before},
           after={"role": role}, request=request)
    return user


@transaction.atomic
def set_active(user: Any, active: bool, *, by: Any, request: Any = None) -> Any:
    """Deactivate (no login, no session, no token) or reactivate an account."""
    if user.is_active == active:
        return user
    if not active and user.pk == by.pk:
        raise PeopleError("you cannot deactivate your own account; another admin can")
    if not active and role_of(user) == ADMIN and not _active_admins().exclude(pk=user.pk).exists():
        raise PeopleError(f"{user.get_username()} is the last active admin; make another admin first")
    user.is_active = active
    user.save(update_fields=["is_active"])
    record(actions.USER_REACTIVATED if active else actions.USER_DEACTIVATED, actor=by, obj=user, label=user.get_username(),
           before={"active": not active}, after={"active": active}, request=request)
    return user
