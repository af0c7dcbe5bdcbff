"""What a sign-in through the provider writes: the user (found by the provider's account, created on first sign-in),
the workbench role and the project memberships the claims give. Each change records its audit event."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from webapp.audit.events import record
from webapp.core.roles import ADMIN
from webapp.projects.models import Member, Project
from webapp.projects.services import ProjectError
from webapp.projects.services.membership import add_member, remove_member
from webapp.sso import claims as claims_
from webapp.sso.claims import ClaimsRefused, Mapping
from webapp.sso.models import Identity

log = logging.getLogger(__name__)


def _current_role(user: Any) -> str:
    names = set(user.groups.filter(name__in=claims_.ROLE_ORDER).values_list("name", flat=True))
    return next((name for name in claims_.ROLE_ORDER if name in names), "")


def set_role(user: Any, role: str) -> None:
    """Make ``role`` the user's only workbench role ("" for none); an admin also reaches the Django admin site."""
    before = _current_role(user)
    if before == role:
        return
    user.groups.remove(*Group.objects.filter(name__in=claims_.ROLE_ORDER))
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    if user.is_staff != (role == ADMIN) and not user.is_superuser:
        user.is_staff = role == ADMIN
        user.save(update_fields=["is_staff"])
    user.__dict__.pop("_workbench_groups", None)  # the roles module caches a user's groups on the object
    record("user.role_changed", actor=None, obj=user, before={"role": before}, after={"role": role, "by": "sso"})


def set_projects(user: Any, wanted: set[tuple[str, str]]) -> None:
    """The user's project memberships become the claimed ones, through the projects' own services (their checks and
    audit events): those missing are added, the others removed. What a service refuses (a project the workbench does
    not have, a viewer made a member, an annotator leaving with documents not done) is logged and left as it is."""
    projects = {p.slug: p for p in Project.objects.filter(slug__in={slug for slug, _ in wanted})}
    held = {(m.project.slug, m.role): m for m in Member.objects.filter(user=user).select_related("project", "user")}
    for slug, role in sorted(wanted - set(held)):
        if slug not in projects:
            log.warning("single sign-on: %s's claims name the project %r, which does not exist here", user.username, slug)
            continue
        try:
            add_member(projects[slug], user, role, by=None)
        except ProjectError as exc:
            log.warning("single sign-on: %s not made %s of %s: %s", user.username, role, slug, exc)
    for key, member in sorted(held.items()):
        if key not in wanted:
            try:
                remove_member(member, by=None)
            except ProjectError as exc:
                log.warning("single sign-on: %s", exc)


def _find_user(issuer: str, info: dict[str, Any], mapping: Mapping, *, create: bool, link_existing: bool) -> tuple[Any, bool]:
    """The user and whether they were created now."""
    subject = str(info.get("sub") or "")
    if not subject:
        raise ClaimsRefused("the identity provider sent no subject (sub) claim")
    identity = Identity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is not None:
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["last_login_at"])
        return identity.user, False
    username = claims_.username(info, mapping)
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    created = user is None
    if user is not None:
        if not link_existing:
            # A provider's account never takes over a local account silently: the name may be someone else's there.
            raise ClaimsRefused(f"a workbench account named {username!r} exists already and is not linked to this "
                                "provider account; an admin can allow linking (OIDC_LINK_EXISTING_USERS)")
    elif not create:
        raise ClaimsRefused(f"there is no workbench account for {username!r} and accounts are not created on sign-in")
    else:
        user = User.objects.create_user(username, email=str(info.get("email") or ""))
        user.set_unusable_password()  # the provider is how they sign in
        user.save(update_fields=["password"])
        record("user.created", actor=None, obj=user, after={"username": username, "by": "sso", "issuer": issuer})
    Identity.objects.create(user=user, issuer=issuer, subject=subject, last_login_at=timezone.now())
    return user, created


def _profile(user: Any, info: dict[str, Any]) -> None:
    fields = {"email": info.get("email"), "first_name": info.get("given_name"), "last_name": info.get("family_name")}
    changed = [name for name, value in fields.items() if isinstance(value, str) and value and getattr(user, name) != value]
    for name in changed:
        setattr(user, name, fields[name][: user._meta.get_field(name).max_length])
    if changed:
        user.save(update_fields=changed)


@transaction.atomic
def sign_in(issuer: str, info: dict[str, Any], mapping: Mapping, *, create: bool, link_existing: bool,
            roles_from_provider: bool) -> Any:
    """The user these claims (the userinfo answer) sign in as, with the role and memberships they give when the
    provider is the source of truth for roles; :class:`ClaimsRefused` when they do not let the person in."""
    claims_.check_email_domain(info, mapping)
    role = claims_.role(info, mapping)
    if roles_from_provider and not role:
        name = mapping.roles_claim
        raise ClaimsRefused(f"your account has no workbench role: its {name!r} claim "
                            f"({', '.join(claims_.claim_values(info, name)) or 'empty'}) names none that is mapped to one")
    user, created = _find_user(issuer, info, mapping, create=create, link_existing=link_existing)
    if not user.is_active:
        raise ClaimsRefused(f"the workbench account {user.username!r} is deactivated")
    _profile(user, info)
    if roles_from_provider:
        set_role(user, role)
        if mapping.projects_claim:
            set_projects(user, claims_.project_roles(info, mapping))
    elif role and created:
        set_role(user, role)  # a new user starts with what the claims (or the default) give; admins change it after
    return user
