"""The one access rule per kind of row (issue 43, :func:`webapp.projects.access.scope`).

Every kind of row that belongs to a collection or a document has a rule: a new model with a foreign key to a
collection, document, mention or link fails here until :mod:`webapp.projects.access` is told how it is reached (or
the list below says why no reader needs one). Each rule runs, for each kind of user, and a kind without one is an
error rather than an unscoped list.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.projects import access
from webapp.projects.models import Member
from webapp.projects.services.membership import add_member, create_project
from webapp.vocab.models import Dictionary

pytestmark = pytest.mark.django_db

# Kinds only admins read (their pages and API are admin_required / IsAdmin), so no project rule narrows them.
ADMIN_ONLY = {
    "training.TrainingRun": "training runs: the training pages and /api/training-runs/ are the admins'",
    "training.PromotionGate": "the promotion gate: the learning loop's settings are the admins'",
    "training.RetrainPolicy": "the retrain policy: the learning loop's settings are the admins'",
}
CORPUS = (Collection, Document, Mention, Link)


def _kinds_of_the_corpus() -> set[str]:
    kinds = set()
    for model in apps.get_models():
        for field in model._meta.get_fields():
            relation = field.many_to_one or field.one_to_one or field.many_to_many
            if relation and field.concrete and field.related_model in CORPUS:
                kinds.add(model._meta.label)
    return kinds


def test_every_kind_of_row_of_the_corpus_has_an_access_rule() -> None:
    ruled = set(access.DOCUMENT_PATHS) | set(access.COLLECTION_PATHS) | set(access.OWN_RULES) | set(ADMIN_ONLY)
    missing = sorted(_kinds_of_the_corpus() - ruled)
    assert not missing, (f"kinds of rows of a collection or document with no rule in webapp.projects.access: {missing} "
                         "(add the path to its document to DOCUMENT_PATHS, or to its collection to COLLECTION_PATHS)")


def test_the_rules_name_real_kinds() -> None:
    known = {model._meta.label for model in apps.get_models()}
    named = set(access.DOCUMENT_PATHS) | set(access.COLLECTION_PATHS) | set(access.OWN_RULES) | set(ADMIN_ONLY)
    assert named <= known, f"rules for kinds that do not exist: {sorted(named - known)}"


def test_a_kind_without_a_rule_is_an_error_not_an_unscoped_list(alice: Any) -> None:
    with pytest.raises(LookupError, match="no rule for vocab.Dictionary"):
        access.scope(Dictionary.objects.all(), alice)


def test_each_rule_narrows_its_kind_to_what_the_user_may_read(alice: Any, bob: Any, charlie: Any) -> None:
    """A project over a whole collection: its member and the admin read its rows, a curator outside it and a user
    without a role read none of them; the collection no project holds stays every curator's."""
    from tests.integration.project_fixtures import make_user

    dictionary = Dictionary.objects.create(slug="d", title="D")
    private = Collection.objects.create(slug="private", title="Private", dictionary=dictionary)
    open_ = Collection.objects.create(slug="open", title="Open", dictionary=dictionary)
    for collection in (private, open_):
        document = Document.objects.create(collection=collection, external_id=collection.slug, text="Asthma.")
        Mention.objects.create(document=document, start=0, end=6, text="Asthma")
    project = create_project(by=alice, slug="p", title="P", collection=private)
    dave = make_user("dave")
    add_member(project, dave, Member.Role.ANNOTATOR, alice)

    def slugs(user: Any) -> dict[str, set[str]]:
        return {
            "collections": set(access.scope(Collection.objects.all(), user).values_list("slug", flat=True)),
            "documents": set(access.scope(Document.objects.all(), user).values_list("collection__slug", flat=True)),
            "mentions": set(access.scope(Mention.objects.all(), user).values_list("document__collection__slug", flat=True)),
            "projects": set(access.scope(project.__class__.objects.all(), user).values_list("slug", flat=True)),
        }

    both = {"private", "open"}
    assert slugs(alice) == slugs(dave) == {"collections": both, "documents": both, "mentions": both, "projects": {"p"}}
    assert slugs(bob) == {"collections": {"open"}, "documents": {"open"}, "mentions": {"open"}, "projects": set()}
    assert slugs(charlie) == {"collections": set(), "documents": set(), "mentions": set(), "projects": set()}
    for label in (*access.DOCUMENT_PATHS, *access.COLLECTION_PATHS, *access.OWN_RULES):  # every path is a real one
        model = apps.get_model(label)
        for user in (alice, dave, bob, charlie):
            list(access.scope(model.objects.all(), user)[:1])
