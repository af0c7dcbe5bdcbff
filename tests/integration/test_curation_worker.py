"""The admin's "suggest links" control runs on a real Celery worker and stores top-k suggestions."""

from __future__ import annotations

import pytest

from webapp.corpus.models import Collection, Link, Mention
from webapp.linking.registry import forget_all
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Dictionary

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_worker_links_every_open_mention_of_a_collection(celery_worker_process, tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from tasks.curation import suggest_links_task
    from webapp.demo.load import load_demo

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"  # the index folder path is stored whole: the worker finds it
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    activate_index(build_index(create_index_version(Dictionary.objects.get(slug="medic-demo").latest_version(), None)).pk)
    collection = Collection.objects.get(slug="demo")

    result = suggest_links_task.apply_async((collection.pk,), queue=celery_worker_process.queue)
    assert result.get(timeout=120) == 40

    assert not Mention.objects.filter(document__collection=collection, status="pending").exists()
    ranks = list(Link.objects.filter(mention__text="Type 2 diabetes", origin="model").order_by("rank").values_list("rank", "concept_ref")[:2])
    assert ranks == [(1, "MESH:D003924"), (2, "MESH:D003922")]
