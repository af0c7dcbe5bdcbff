"""A second host that shares nothing with the first but PostgreSQL: the index version host A built is loaded on host B
through the real load path (webapp.linking.registry.load_linker, as the candidate panel loads it), fetched from the
artifact store into B's own ARTIFACT_ROOT, and ranks every mention as on A; the collector keeps what rows name."""

from __future__ import annotations

from pathlib import Path

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
