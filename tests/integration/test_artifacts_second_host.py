"""A second host that shares nothing with the first but PostgreSQL: the index version host A built is loaded on host B
through the real load path (webapp.linking.registry.load_linker, as the candidate panel loads it), fetched from the
artifact store into B's own ARTIFACT_ROOT, and ranks every mention as on A; the collector keeps what rows name; a
worker host imports the file a web host stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.artifacts.local import cache_root
from webapp.artifacts.models import Manifest
from webapp.corpus.models import Mention
from webapp.curation.services.suggestions import panel_ranking
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all, load_linker
from webapp.ops.artifact_gc import collect_artifacts


def _panel() -> dict[int, list[tuple[str, float]]]:
    rankings = {}
    for mention in Mention.objects.select_related("document__collection__dictionary").order_by("pk")[:8]:
        ranking = panel_ranking(mention)
        assert ranking is not None
        rankings[mention.pk] = [(c.concept_id, round(c.score, 5)) for c in ranking.candidates]
    return rankings


def test_host_b_serves_the_index_host_a_built_with_the_same_candidates(demo, settings, tmp_path):
    index = IndexVersion.objects.get(state=IndexVersion.State.ACTIVE)
    assert Manifest.objects.filter(logical_path=index.artifact_path).exists()  # the build published it
    on_a = _panel()
    assert any(on_a.values())

    Path(settings.ARTIFACT_ROOT).rename(tmp_path / "host-a-unreachable")
    settings.ARTIFACT_ROOT = tmp_path / "host-b"
    forget_all()
    assert not Path(index.artifact_path).exists()
    assert _panel() == on_a
    served = load_linker(index)
    assert served is load_linker(index)  # loaded once per process, as before
    assert [p.name for p in cache_root().iterdir() if not p.name.startswith(".")] == [
        Manifest.objects.get(logical_path=index.artifact_path).digest]


def test_the_collector_keeps_every_manifest_a_row_names(demo, settings):
    index = IndexVersion.objects.get(state=IndexVersion.State.ACTIVE)
    settings.ARTIFACT_GC_GRACE_HOURS = 0
    orphan = Path(settings.ARTIFACT_ROOT) / "indexes" / "999"
    orphan.mkdir(parents=True)
    (orphan / "config.json").write_text("{}\n")
    from webapp.artifacts.manifests import publish

    publish(orphan)
    done = collect_artifacts()
    assert done.manifests == [str(orphan)]
    assert list(Manifest.objects.values_list("logical_path", flat=True)) == [index.artifact_path]
    forget_all()
    assert load_linker(index) is not None


TINY_MEDIC = "Asthma\tMESH:D001249\t\tA bronchial disorder.\t\t\t\tBronchial asthma\t\n"


@pytest.mark.django_db(transaction=True)
def test_a_worker_on_another_host_imports_the_file_a_web_host_stored(settings, tmp_path):
    """The web host stores the upload (and publishes it); the worker, with its own empty ARTIFACT_ROOT, reads it
    through the store (the import task's real path: tasks.imports)."""
    from tasks.imports import _run_leased
    from webapp.imports.models import ImportJob
    from webapp.imports.queueing import stored_upload
    from webapp.vocab.models import Dictionary

    settings.ARTIFACT_ROOT = tmp_path / "web-host"
    with stored_upload([TINY_MEDIC.encode()], "medic.tsv") as path:
        job = ImportJob.objects.create(import_kind=ImportJob.Kind.DICTIONARY, path=str(path),
                                       params={"dictionary_slug": "medic-tiny"})
    (tmp_path / "web-host").rename(tmp_path / "web-host-unreachable")
    settings.ARTIFACT_ROOT = tmp_path / "worker-host"
    assert _run_leased(job.pk) == ImportJob.State.SUCCEEDED, ImportJob.objects.get(pk=job.pk).error
    assert Dictionary.objects.get(slug="medic-tiny").latest_version().concepts.count() == 1
    assert [p.name for p in cache_root().iterdir() if not p.name.startswith(".")]  # read from its own cache


@pytest.mark.slow
def test_host_b_serves_the_model_a_training_run_on_host_a_made(db, settings, tmp_path):
    """A GPU worker's run (inline here, one epoch of the tiny BioSyn run) on host A; host B loads its index through
    load_linker and ranks as A does."""
    from io import StringIO

    from django.core.management import call_command

    from tests.integration.test_training_runs import _collection, _dictionary
    from webapp.training.models import TrainingRun

    settings.ARTIFACT_ROOT = tmp_path / "gpu-host"
    _collection(_dictionary())
    call_command("train_run", "--dictionary", "mini", "--collection", "gold", "--epochs", "1", "--max-queries", "3",
                 "--skip-pretrain", "--params", '{"topk": 4, "train_scope": "head"}', "--inline", stdout=StringIO())
    run = TrainingRun.objects.get()
    assert run.state == TrainingRun.State.SUCCEEDED, run.error
    mentions = ["bronchial asthma", "high blood pressure", "asthma"]
    forget_all()
    on_a = [[(c.concept_id, round(c.score, 5)) for c in cands] for cands in load_linker(run.index_version).link_mentions(mentions)]

    (tmp_path / "gpu-host").rename(tmp_path / "gpu-host-unreachable")
    settings.ARTIFACT_ROOT = tmp_path / "web-host"
    forget_all()
    on_b = [[(c.concept_id, round(c.score, 5)) for c in cands] for cands in load_linker(run.index_version).link_mentions(mentions)]
    assert on_b == on_a and on_a[0]
    assert Manifest.objects.get(logical_path=run.index_version.artifact_path).digest in {p.name for p in cache_root().iterdir()}
    forget_all()
