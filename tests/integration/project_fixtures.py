"""A team on the demo collection: the project, its members, and helpers to annotate a copy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import PASSWORD
from webapp.corpus.models import Collection, Link, Mention
from webapp.curation import services
from webapp.linking.registry import forget_all
from webapp.projects.models import Assignment, Member, Project
from webapp.projects.services.membership import add_member, create_project
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary


def make_user(username: str, group: str | None = "curator") -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.org")
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def demo_collection(tmp_path, settings):  # type: ignore[no-untyped-def]
    """The demo collection (6 abstracts, MEDIC slice) with a sparse index and stored suggestions."""
    from django.contrib.auth.models import Group

    from webapp.core.roles import ROLES
    from webapp.demo.load import load_demo

    for role in ROLES:
        Group.objects.get_or_create(name=role)
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    dictionary = Dictionary.objects.get(slug="medic-demo")
    activate_index(build_index(create_index_version(dictionary.latest_version(), None)).pk)
    collection = Collection.objects.get(slug="demo")
    services.suggest_for_collection(collection.pk)
    yield collection
    forget_all()


@pytest.fixture
def team(demo_collection, alice):  # type: ignore[no-untyped-def]
    """Project "duo" over the demo collection: alice (admin) manages, bob and dave annotate, erin adjudicates;
    frank is a curator outside the project."""
    bob, dave, erin, frank = (make_user(name) for name in ("bob", "dave", "erin", "frank"))
    project = create_project(by=alice, slug="duo", title="Duo", collection=demo_collection, annotators_per_document=2)
    for user, role in ((bob, Member.Role.ANNOTATOR), (dave, Member.Role.ANNOTATOR), (erin, Member.Role.ADJUDICATOR)):
        add_member(project, user, role, alice)
    return {"project": project, "alice": alice, "bob": bob, "dave": dave, "erin": erin, "frank": frank, "collection": demo_collection}


def copy_of(project: Project, external_id: str, annotator: Any) -> Assignment:
    return Assignment.objects.select_related("copy__collection").get(project=project, document__external_id=external_id, annotator=annotator)


def annotate(assignment: Assignment, user: Any, overrides: dict[str, str] | None = None) -> None:
    """Decide every mention of the copy: the top suggestion, or NIL without one; ``overrides`` maps a mention
    text to a concept id (relink), "NIL" or "REJECT"."""
    overrides = overrides or {}
    for mention in Mention.objects.filter(document=assignment.copy).order_by("start"):
        mention.refresh_from_db()
        wanted = overrides.get(mention.text)
        if wanted == "REJECT":
            services.decide(user=user, mention_id=mention.pk, action="reject", seen_updated_at=mention.updated_at)
        elif wanted == "NIL":
            services.decide(user=user, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at, part=None)
        elif wanted:
            concept = Concept.objects.get(concept_id=wanted)
            services.decide(user=user, mention_id=mention.pk, action="relink", concept=concept, seen_updated_at=mention.updated_at)
        elif Link.objects.filter(mention=mention, origin=Link.Origin.MODEL).exists():
            services.decide(user=user, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at, part=None)
        else:
            services.decide(user=user, mention_id=mention.pk, action="nil", seen_updated_at=mention.updated_at, part=None)
