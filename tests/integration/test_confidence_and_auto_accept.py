"""The linker's top-1 confidence in the workbench: stored with the suggestions, shown in the panel, and a
collection's auto-accept above a threshold (issue #15, "Confidence")."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from linker.calibration import Calibration
from webapp.corpus.models import Collection, Link, Mention
from webapp.curation.models import Decision
from webapp.curation.services.auto_accept import LINKER_USERNAME
from webapp.curation.services.suggestions import suggest_for_collection
from webapp.curation.services.undo import undo
from webapp.linking.models import IndexVersion
from webapp.linking.registry import forget_all
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Dictionary, Name

pytestmark = pytest.mark.django_db

# P(right) = σ(5·exact_name − 1): 0.98 when the matched name is the mention itself, 0.27 otherwise.
EXACT_IS_SURE = Calibration(weights=(0.0, 0.0, 0.0, 0.0, 5.0), bias=-1.0, mean=(0.0,) * 5, scale=(1.0,) * 5,
                            nil_threshold=0.5, fitted_on={"examples": 100, "right": 60, "nil": 10})


@pytest.fixture
def demo(db, tmp_path, settings):  # type: ignore[no-untyped-def]
    from webapp.demo.load import load_demo

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    load_demo(tmp_path / "demo", log=lambda message: None)
    index = build_index(create_index_version(Dictionary.objects.get(slug="medic-demo").latest_version(), None))
    EXACT_IS_SURE.save(Path(index.artifact_path))  # as a training run's calibration step leaves it
    activate_index(index.pk)
    collection = Collection.objects.get(slug="demo")
    Link.objects.filter(mention__document__collection=collection, origin=Link.Origin.MODEL).delete()
    Mention.objects.filter(document__collection=collection).update(status=Mention.Status.PENDING)
    yield collection
    forget_all()


def _mention(text: str) -> Mention:
    return Mention.objects.filter(text=text).order_by("pk").first()  # type: ignore[return-value]


def test_each_parts_top1_suggestion_carries_the_calibrated_confidence(demo) -> None:  # type: ignore[no-untyped-def]
    suggest_for_collection(demo.pk)
    exact = _mention("hypertension")
    links = list(exact.links.filter(origin=Link.Origin.MODEL).order_by("part", "rank"))
    assert links[0].rank == 1 and links[0].confidence == pytest.approx(EXACT_IS_SURE.probability((0, 0, 0, 0, 1)))
    assert all(link.confidence is None for link in links[1:])  # only the top-1 is what the figure is about
    assert IndexVersion.objects.get(state="active").artifact_path  # and nothing else changed


def test_the_panel_shows_the_confidence_and_says_when_no_concept_is_likely(demo, bob) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(bob)
    sure = _mention("hypertension")
    page = client.get(f"/curate/mentions/{sure.pk}/panel/").content.decode()
    assert "top-1 98% likely" in page and "confidence-high" in page
    assert "Probably no concept fits" not in page
    unsure = Mention.objects.filter(document__collection=demo).exclude(text__iexact="hypertension").order_by("pk")
    shown = [client.get(f"/curate/mentions/{m.pk}/panel/").content.decode() for m in unsure]
    doubtful = [p for p in shown if "top-1 27% likely" in p]
    assert doubtful and all("Probably no concept fits" in p and "says NIL below 50%" in p for p in doubtful)


def test_a_collection_auto_accepts_above_its_threshold_as_the_linker_without_a_synonym(demo, alice) -> None:  # type: ignore[no-untyped-def]
    Collection.objects.filter(pk=demo.pk).update(auto_accept_threshold=0.9)
    synonyms_before = Name.objects.filter(source=Name.Source.CURATOR).count()
    suggest_for_collection(demo.pk)
    auto = list(Decision.objects.filter(via=Decision.Via.AUTO).select_related("user", "mention"))
    assert auto, "the exact names are at least 0.9 likely"
    assert {d.user.username for d in auto} == {LINKER_USERNAME} and not auto[0].user.is_active
    assert all(d.action == "accept" and d.synonym_id is None and d.rank == 1 for d in auto)
    assert all(d.mention.status == Mention.Status.ACCEPTED for d in auto)
    assert Name.objects.filter(source=Name.Source.CURATOR).count() == synonyms_before  # the linker taught itself nothing
    left = Mention.objects.filter(document__collection=demo, status=Mention.Status.SUGGESTED)
    assert left.exists()  # the doubtful ones wait for a curator
    assert all((m.links.get(origin="model", rank=1, part=0).confidence or 0) < 0.9 for m in left if
               m.links.filter(origin="model", rank=1).count() == 1)
    # An admin can take an automatic accept back, as any decision.
    undo(user=alice, decision_id=auto[0].pk)
    assert Mention.objects.get(pk=auto[0].mention_id).status == Mention.Status.SUGGESTED


def test_without_a_threshold_or_a_calibration_nothing_is_accepted(demo) -> None:  # type: ignore[no-untyped-def]
    suggest_for_collection(demo.pk)
    assert not Decision.objects.exists()


def test_auto_accepted_decisions_are_no_training_data(demo) -> None:  # type: ignore[no-untyped-def]
    from webapp.training.dataset import _curator_examples, dictionary_table
    from webapp.training.models import TrainingRun

    Collection.objects.filter(pk=demo.pk).update(auto_accept_threshold=0.9)
    suggest_for_collection(demo.pk)
    assert Decision.objects.filter(via=Decision.Via.AUTO).exists()
    run = TrainingRun.objects.create(dictionary=demo.dictionary, snapshot_at=Decision.objects.latest("created_at").created_at)
    table = dictionary_table(run)
    from linker.text import Preprocessor

    assert _curator_examples(run, table, Preprocessor(table.cfg)) == []


def test_an_admin_sets_the_threshold_on_the_dashboard_and_a_curator_cannot(demo, alice, bob) -> None:  # type: ignore[no-untyped-def]
    admin, curator = Client(), Client()
    admin.force_login(alice)
    curator.force_login(bob)
    url = f"/curate/{demo.slug}/auto-accept/"
    assert curator.post(url, {"threshold": "0.9"}).status_code == 403
    page = admin.get(f"/curate/{demo.slug}/").content.decode()
    assert "Off: every mention waits for a curator." in page
    response = admin.post(url, {"threshold": "95%"}, follow=True)
    assert "Auto-accept at 95%" in response.content.decode()
    assert Collection.objects.get(pk=demo.pk).auto_accept_threshold == pytest.approx(0.95)
    for bad, said in (("0.3", "between 0.5 and 1"), ("lots", "is not a number"), ("150", "between 0.5 and 1")):
        body = admin.post(url, {"threshold": bad}, follow=True).content.decode()
        assert "Auto-accept not changed" in body and said in body
    assert Collection.objects.get(pk=demo.pk).auto_accept_threshold == pytest.approx(0.95)  # nothing lost
    admin.post(url, {"off": "1"})
    assert Collection.objects.get(pk=demo.pk).auto_accept_threshold is None
