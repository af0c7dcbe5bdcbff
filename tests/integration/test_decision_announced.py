"""A curator's decision is announced to the apps above curation (webapp.curation.signals.decision_committed) once it
commits, with its dictionary; a listener that fails is logged and never fails the decision already made."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.decisions import decide
from webapp.curation.signals import decision_committed
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name


def _mention(django_user_model: Any) -> tuple[Any, Mention, Dictionary]:
    """A curator and one suggested mention of a one-concept dictionary."""
    from django.contrib.auth.models import Group

    curator = django_user_model.objects.create_user("carol", password="pw")
    curator.groups.add(Group.objects.get_or_create(name="curator")[0])
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    asthma = Concept.objects.create(version=version, concept_id="MESH:D001249", preferred_name="Asthma")
    Name.objects.create(concept=asthma, text="Asthma", normalized="asthma", is_preferred=True)
    collection = Collection.objects.create(slug="work", title="Work", dictionary=dictionary)
    document = Document.objects.create(collection=collection, external_id="d1", text="asthma")
    mention = Mention.objects.create(document=document, start=0, end=6, text="asthma", status=Mention.Status.SUGGESTED)
    Link.objects.create(mention=mention, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=1,
                        score=9.0, model_version="mini@1/sparse/index-1")
    return curator, mention, dictionary


@pytest.mark.django_db
def test_a_decision_is_announced_with_its_dictionary_once_committed(django_user_model, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    curator, mention, dictionary = _mention(django_user_model)
    heard: list[int | None] = []

    def listener(sender: Any, *, dictionary_id: int | None, **kwargs: Any) -> None:
        heard.append(dictionary_id)

    decision_committed.connect(listener, dispatch_uid="test-listener")
    try:
        with django_capture_on_commit_callbacks(execute=False) as pending:
            decide(user=curator, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at)
        assert heard == []  # not before the decision commits
        for callback in pending:
            callback()
    finally:
        decision_committed.disconnect(dispatch_uid="test-listener")
    assert heard == [dictionary.pk]


@pytest.mark.django_db
def test_a_failing_listener_is_logged_and_the_decision_stands(  # type: ignore[no-untyped-def]
    django_user_model, django_capture_on_commit_callbacks, caplog
) -> None:
    curator, mention, _ = _mention(django_user_model)

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("listener down")

    decision_committed.connect(broken, dispatch_uid="test-broken")
    try:
        with caplog.at_level(logging.ERROR, logger="webapp.curation.signals"), \
                django_capture_on_commit_callbacks(execute=True):
            outcome = decide(user=curator, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at)
    finally:
        decision_committed.disconnect(dispatch_uid="test-broken")
    assert Decision.objects.filter(pk=outcome.decision.pk, action="accept").exists()
    assert any("listener down" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
