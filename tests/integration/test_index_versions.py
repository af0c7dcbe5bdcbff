"""Index versions: built from the database, at most one active per dictionary, activation is atomic."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all, get_active_linker
from webapp.training.services import ActivationError, activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name


def _dictionary() -> DictionaryVersion:
    d = Dictionary.objects.create(slug="mini", title="Mini")
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum="a" * 64)
    for cid, names in {
        "MESH:D001249": ["Asthma", "Bronchial asthma"],
        "MESH:D006973": ["Hypertension", "High blood pressure"],
        "MESH:D009203": ["Myocardial Infarction", "Heart attack"],
    }.items():
        c = Concept.objects.create(version=v, concept_id=cid, preferred_name=names[0])
        for i, n in enumerate(names):
            Name.objects.create(concept=c, text=n, normalized=n.lower(), is_preferred=i == 0)
    return v


@pytest.fixture(autouse=True)
def _artifacts(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()


@pytest.mark.django_db
def test_a_sparse_index_built_from_the_database_links_curator_synonyms(bob) -> None:  # type: ignore[no-untyped-def]
    version = _dictionary()
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    Name.objects.create(concept=asthma, text="wheezy chest disease", normalized="wheezy chest disease", source="curator", created_by=bob)
    index = build_index(create_index_version(version, None))
    assert index.state == IndexVersion.State.READY
    assert index.name_count == 7
    activate_index(index.pk)

    active = get_active_linker("mini")
    assert active is not None and active.index_version_id == index.pk
    assert active.label == f"mini@1/sparse/index-{index.pk}"
    top = active.linker.link_mentions(["high blood pressure", "wheezy chest disease"], k=1)
    assert [c[0].concept_id for c in top] == ["MESH:D006973", "MESH:D001249"]


@pytest.mark.django_db
def test_activation_retires_the_previous_index() -> None:
    version = _dictionary()
    first = build_index(create_index_version(version, None))
    second = build_index(create_index_version(version, None))
    activate_index(first.pk)
    activate_index(second.pk)
    states = dict(IndexVersion.objects.values_list("pk", "state"))
    assert states == {first.pk: "retired", second.pk: "active"}


@pytest.mark.django_db
def test_a_building_index_cannot_be_activated() -> None:
    index = create_index_version(_dictionary(), None)
    with pytest.raises(ActivationError, match="only a ready or retired index"):
        activate_index(index.pk)


@pytest.mark.django_db
def test_the_database_refuses_two_active_indexes_for_one_dictionary() -> None:
    version = _dictionary()
    a = create_index_version(version, None)
    b = create_index_version(version, None)
    IndexVersion.objects.filter(pk=a.pk).update(state="active")
    with pytest.raises(IntegrityError), transaction.atomic():
        IndexVersion.objects.filter(pk=b.pk).update(state="active")


@pytest.mark.django_db(transaction=True)
def test_two_promotions_at_once_leave_exactly_one_active_index() -> None:
    version = _dictionary()
    indexes = [build_index(create_index_version(version, None)) for _ in range(4)]
    barrier = threading.Barrier(len(indexes))
    errors: list[BaseException] = []

    def promote(pk: int) -> None:
        try:
            barrier.wait()
            activate_index(pk)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=promote, args=(i.pk,)) for i in indexes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert IndexVersion.objects.filter(dictionary__slug="mini", state="active").count() == 1
    assert IndexVersion.objects.filter(dictionary__slug="mini", state="retired").count() == 3


@pytest.mark.django_db(transaction=True)
def test_promotion_relinks_open_mentions_of_the_dictionary(celery_worker_process, settings) -> None:  # type: ignore[no-untyped-def]
    """After a promotion, open mentions get the new index's suggestions (on a worker); decided ones keep theirs."""
    import time

    from webapp.corpus.models import Collection, Document, Link, Mention
    from webapp.training.services import promote_index

    version = _dictionary()
    collection = Collection.objects.create(slug="c", title="C", dictionary=version.dictionary)
    doc = Document.objects.create(collection=collection, external_id="1", text="High blood pressure and asthma.")
    open_mention = Mention.objects.create(document=doc, start=0, end=19, text="High blood pressure")
    decided = Mention.objects.create(document=doc, start=24, end=30, text="asthma", status=Mention.Status.NIL)
    index = build_index(create_index_version(version, None))
    # Route the re-link task to this test's private worker (a developer's worker may share the broker).
    settings.TASK_QUEUE_OVERRIDE = celery_worker_process.queue
    promote_index(index.pk)
    deadline = time.monotonic() + 60
    while not Link.objects.filter(mention=open_mention, origin="model").exists():
        assert time.monotonic() < deadline, "open mention was not re-linked after the promotion"
        time.sleep(0.2)
    top = Link.objects.filter(mention=open_mention, origin="model").order_by("rank").first()
    assert top is not None and top.concept_ref == "MESH:D006973" and top.model_version == index.label
    assert not Link.objects.filter(mention=decided, origin="model").exists()
