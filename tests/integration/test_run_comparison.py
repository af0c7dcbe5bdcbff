"""Comparing index versions: evaluations keep one outcome per gold mention (queued ones and a run's own), the
comparison page's matrix (deltas to the active index, McNemar's test, per-type figures, refused and empty cells),
the changed-mentions list, and who may see and do what."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.comparison import changed_mentions, comparison_matrix
from webapp.training.evaluation import (
    evaluate_linker,
    evaluate_linker_outcomes,
    run_evaluation,
    start_evaluation,
)
from webapp.training.models import Evaluation, MentionOutcome, TrainingRun
from webapp.training.params import clean_params
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

CONCEPTS = {"MESH:D001249": "Asthma", "MESH:D006973": "Hypertension", "MESH:D003920": "Diabetes Mellitus",
            "MESH:D009369": "Neoplasms", "MESH:D001943": "Breast Neoplasms", "MESH:D008545": "Melanoma"}
# (external id, text, [(mention, concept id, type)])
DEV = [
    ("201", "Childhood asthma and hypertension were studied.",
     [("asthma", "MESH:D001249", "Disease"), ("hypertension", "MESH:D006973", "Disease")]),
    ("202", "Diabetes mellitus, melanoma and breast neoplasms.",
     [("Diabetes mellitus", "MESH:D003920", "Disease"), ("melanoma", "MESH:D008545", "Cancer"),
      ("breast neoplasms", "MESH:D001943", "Cancer")]),
    ("203", "Neoplasms grew.", [("Neoplasms", "MESH:D009369", "Cancer")]),
]
TRAIN = [("101", "Asthma worsened.", [("Asthma", "MESH:D001249", "Disease")])]


def _dictionary(slug: str = "mini") -> Dictionary:
    d = Dictionary.objects.create(slug=slug, title=slug.capitalize())
    v = DictionaryVersion.objects.create(dictionary=d, release="1", source_format="medic", checksum=slug[0] * 64)
    for cid, name in CONCEPTS.items():
        c = Concept.objects.create(version=v, concept_id=cid, preferred_name=name)
        Name.objects.create(concept=c, text=name, normalized=name.lower(), is_preferred=True)
    return d


def _gold(dictionary: Dictionary, slug: str, docs: list) -> Collection:  # type: ignore[type-arg]
    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=True)
    for pmid, text, mentions in docs:
        doc = Document.objects.create(collection=collection, external_id=pmid, text=text)
        for mention_text, cid, mention_type in mentions:
            start = text.index(mention_text)
            m = Mention.objects.create(document=doc, start=start, end=start + len(mention_text), text=mention_text,
                                       mention_type=mention_type)
            Link.objects.create(mention=m, concept=Concept.objects.get(version__dictionary=dictionary, concept_id=cid),
                                concept_ref=cid, origin=Link.Origin.GOLD)
    return collection


@pytest.fixture
def world() -> tuple[Dictionary, Collection, Collection]:
    d = _dictionary()
    return d, _gold(d, "dev", DEV), _gold(d, "train", TRAIN)


def _sparse_index(dictionary: Dictionary, settings, tmp_path: Path) -> IndexVersion:  # type: ignore[no-untyped-def]
    from webapp.training.services import build_index, create_index_version

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    return build_index(create_index_version(dictionary.latest_version(), None))


def _run_index(dictionary: Dictionary, trained_on: list[Collection], state: str = "ready") -> tuple[TrainingRun, IndexVersion]:
    """A succeeded BioSyn run and its index, as the worker records them (no training needed to compare them)."""
    now = timezone.now()
    run = TrainingRun.objects.create(dictionary=dictionary, params=clean_params({}), state="succeeded", device="cpu",
                                     started_at=now, finished_at=now)
    run.collections.set(trained_on)
    encoder = EncoderModel.objects.create(name=f"biosyn-run-{run.pk}", method="biosyn", base_model="base",
                                          artifact_path="/nowhere")
    index = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=dictionary.latest_version(),
                                        encoder=encoder, artifact_path="/nowhere", state=state)
    TrainingRun.objects.filter(pk=run.pk).update(encoder=encoder, index_version=index)
    run.refresh_from_db()
    return run, index


def _mentions(collection: Collection) -> dict[str, Mention]:
    return {m.text: m for m in Mention.objects.filter(document__collection=collection)}


def _evaluation(index: IndexVersion, collection: Collection, outcomes: dict[str, tuple[str, int | None]]) -> Evaluation:
    """A succeeded evaluation with the given outcome per mention text: (predicted top-1, rank)."""
    mentions = _mentions(collection)
    gold = {m.mention_id: m.concept_ref for m in Link.objects.filter(mention__document__collection=collection)}
    right = [r == 1 for _, r in outcomes.values()]
    metrics = {"acc@1": sum(right) / len(right), "acc@5": sum(1 for _, r in outcomes.values() if r and r <= 5) / len(right),
               "mrr": sum(1 / r for _, r in outcomes.values() if r) / len(right), "mentions": float(len(right)),
               "by_type": {}}
    by_type: dict[str, list[bool]] = {}
    for text, (_, rank) in outcomes.items():
        by_type.setdefault(mentions[text].mention_type, []).append(rank == 1)
    metrics["by_type"] = {t: {"acc@1": sum(v) / len(v), "acc@5": 1.0, "mentions": float(len(v))} for t, v in by_type.items()}
    evaluation = Evaluation.objects.create(index_version=index, collection=collection, state="succeeded", metrics=metrics,
                                           finished_at=timezone.now())
    MentionOutcome.objects.bulk_create([
        MentionOutcome(evaluation=evaluation, mention=mentions[text], mention_type=mentions[text].mention_type,
                       gold=gold[mentions[text].pk], predicted=predicted, rank=rank)
        for text, (predicted, rank) in outcomes.items()
    ])
    return evaluation


# --- evaluations keep their outcomes -------------------------------------------------------------------------


def test_run_evaluation_writes_one_outcome_per_gold_mention_with_the_contracts_metrics(world, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, _ = world
    index = _sparse_index(dictionary, settings, tmp_path)
    evaluation = start_evaluation(index, dev)
    assert run_evaluation(evaluation.pk) == "succeeded"
    evaluation.refresh_from_db()
    metrics = evaluation.metrics
    assert set(metrics) >= {"acc@1", "acc@5", "mrr", "mentions", "by_type"} and metrics["mentions"] == 6.0
    assert set(metrics["by_type"]) == {"Disease", "Cancer"}
    assert metrics["by_type"]["Disease"]["mentions"] == 3.0 and metrics["by_type"]["Cancer"]["mentions"] == 3.0
    assert not any("/" in key for key in metrics)  # per-type figures only under by_type

    outcomes = {o.mention.text: o for o in MentionOutcome.objects.filter(evaluation=evaluation).select_related("mention")}
    assert set(outcomes) == {m[0] for _, _, ms in DEV for m in ms}
    melanoma = outcomes["melanoma"]
    assert (melanoma.gold, melanoma.mention_type) == ("MESH:D008545", "Cancer")
    # Each outcome's rank agrees with its top-1 and the aggregate figures are what the outcomes count.
    for o in outcomes.values():
        assert o.correct == (o.predicted == o.gold)
    assert metrics["acc@1"] == pytest.approx(sum(o.correct for o in outcomes.values()) / 6)
    assert metrics["by_type"]["Cancer"]["acc@1"] == pytest.approx(
        sum(o.correct for o in outcomes.values() if o.mention_type == "Cancer") / 3)
    assert outcomes["asthma"].rank == 1 and outcomes["asthma"].predicted == "MESH:D001249"

    # A re-delivered task (the worker was lost after writing) runs it again without doubling the outcomes.
    Evaluation.objects.filter(pk=evaluation.pk).update(state="running")
    assert run_evaluation(evaluation.pk) == "succeeded"
    assert MentionOutcome.objects.filter(evaluation=evaluation).count() == 6


def test_evaluate_linker_keeps_its_contract_for_callers(world, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from webapp.linking.registry import load_linker

    dictionary, dev, _ = world
    linker = load_linker(_sparse_index(dictionary, settings, tmp_path))
    metrics = evaluate_linker(linker, dev.pk)
    result = evaluate_linker_outcomes(linker, dev.pk)
    assert metrics == result.metrics and len(result.outcomes) == 6
    assert {o.mention_id for o in result.outcomes} == set(Mention.objects.filter(document__collection=dev).values_list("pk", flat=True))
    empty = Collection.objects.create(slug="empty", title="empty", dictionary=dictionary, has_gold=True)
    assert evaluate_linker(linker, empty.pk) == {"mentions": 0.0, "by_type": {}}


def test_a_training_runs_own_evaluation_is_recorded_with_its_outcomes(world, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The run's evaluate callback computed the figures; _record keeps them as an Evaluation of the new index."""
    from webapp.linking.registry import load_linker
    from webapp.training.execution import _record

    dictionary, dev, train = world
    result = evaluate_linker_outcomes(load_linker(_sparse_index(dictionary, settings, tmp_path)), dev.pk)
    run = TrainingRun.objects.create(dictionary=dictionary, params=clean_params({}), state="running", device="cpu",
                                     eval_collection=dev, started_at=timezone.now())
    run.collections.set([train])
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"names": 6, "concepts": 6}))
    assert _record(run, folder, {"metrics": result.metrics}, result) == "succeeded"
    run.refresh_from_db()
    evaluation = Evaluation.objects.get(index_version=run.index_version)
    assert (evaluation.state, evaluation.collection, evaluation.metrics) == ("succeeded", dev, run.metrics)
    assert evaluation.outcomes.count() == 6


# --- the matrix and the changed mentions -----------------------------------------------------------------------


@pytest.fixture
def compared(world):  # type: ignore[no-untyped-def]
    """An active index and two run indexes (an older retired one, a newer candidate), evaluations on dev."""
    dictionary, dev, train = world
    _, active = _run_index(dictionary, [train], state="active")
    _, older = _run_index(dictionary, [train], state="retired")
    run, candidate = _run_index(dictionary, [train])
    # The active index: right on the first three mentions, wrong on the last three.
    _evaluation(active, dev, {"asthma": ("MESH:D001249", 1), "hypertension": ("MESH:D006973", 1),
                              "Diabetes mellitus": ("MESH:D003920", 1), "melanoma": ("MESH:D009369", 2),
                              "breast neoplasms": ("MESH:D009369", 3), "Neoplasms": ("MESH:D001943", None)})
    # The candidate fixes melanoma and breast neoplasms, breaks Diabetes mellitus, changes Neoplasms' wrong top-1.
    _evaluation(candidate, dev, {"asthma": ("MESH:D001249", 1), "hypertension": ("MESH:D006973", 1),
                                 "Diabetes mellitus": ("MESH:D006973", 2), "melanoma": ("MESH:D008545", 1),
                                 "breast neoplasms": ("MESH:D001943", 1), "Neoplasms": ("MESH:D008545", 4)})
    return dictionary, dev, train, active, older, run, candidate


def test_the_matrix_puts_the_active_index_first_with_deltas_and_mcnemar_on_shared_mentions(compared, bob) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, train, active, older, run, candidate = compared
    matrix = comparison_matrix(dictionary, bob)
    assert [r.index.pk for r in matrix.rows] == [active.pk, candidate.pk, older.pk]
    assert [c.slug for c in matrix.collections] == ["dev", "train"]
    assert matrix.rows[0].active and matrix.rows[1].run == run and matrix.rows[1].method == "BioSyn"

    reference, cell = matrix.rows[0].cells[0], matrix.rows[1].cells[0]
    assert reference.is_reference and reference.mcnemar is None and all(f.delta is None for f in reference.figures)
    acc1, acc5, mrr = cell.figures
    assert acc1.value == pytest.approx(4 / 6) and acc1.delta == pytest.approx(4 / 6 - 3 / 6)
    assert acc1.direction == "up" and acc1.delta_text == "+0.167"
    assert mrr.delta == pytest.approx((4 + 0.5 + 0.25) / 6 - (3 + 0.5 + 1 / 3) / 6)
    # Discordant: 2 fixed (c), 1 broken (b); exact test: 2 * P(X <= 1 | n=3) = 2 * 4/8 = 1.
    assert (cell.mcnemar.shared, cell.mcnemar.fixed, cell.mcnemar.broken) == (6, 2, 1)
    assert cell.mcnemar.p == 1.0 and not cell.mcnemar.significant
    types = {t.mention_type: t for t in cell.types}
    assert types["Cancer"].acc1.delta == pytest.approx(2 / 3) and types["Disease"].acc1.delta == pytest.approx(-1 / 3)
    assert types["Disease"].acc1.direction == "down"

    # Nothing measured on train: every index was trained on it, so each such cell says why it is refused.
    for row in matrix.rows:
        train_cell = row.cells[1]
        assert train_cell.evaluation is None and "train is training data of index" in train_cell.refused
    # The older index has no figures on dev and may be evaluated there.
    assert matrix.rows[2].cells[0].evaluation is None and matrix.rows[2].cells[0].refused == ""


def test_changed_mentions_are_grouped_fixed_broken_and_still_wrong(compared) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, train, active, older, run, candidate = compared
    changes = changed_mentions(Evaluation.objects.get(index_version=candidate), Evaluation.objects.get(index_version=active))
    assert changes.shared == 6
    assert [c.mention.text for c in changes.fixed] == ["melanoma", "breast neoplasms"]
    assert [c.mention.text for c in changes.broken] == ["Diabetes mellitus"]
    assert [c.mention.text for c in changes.still_wrong] == ["Neoplasms"]
    broken = changes.broken[0]
    assert broken.gold.names == [("MESH:D003920", "Diabetes Mellitus")]
    assert broken.old.names == [("MESH:D003920", "Diabetes Mellitus")] and broken.new.names == [("MESH:D006973", "Hypertension")]
    assert (broken.old_rank, broken.new_rank) == (1, 2)
    elsewhere = _evaluation(candidate, train, {"Asthma": ("MESH:D001249", 1)})
    with pytest.raises(ValueError, match="only evaluations on one collection compare"):
        changed_mentions(elsewhere, Evaluation.objects.get(index_version=active))


def test_the_page_shows_the_matrix_and_the_changed_list_links_into_the_curation_screen(bob_client: Client, compared) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, train, active, older, run, candidate = compared
    page = bob_client.get("/training/compare/?dictionary=mini")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="compare-matrix"' in html and "+0.167" in html and "McNemar p = 1.000" in html
    assert html.index(f'data-index="{active.pk}"') < html.index(f'data-index="{candidate.pk}"') < html.index(f'data-index="{older.pk}"')
    assert "train is training data of index" in html
    assert ">Evaluate</button>" not in html and "an admin can queue it" in html  # a curator reads, does not queue
    changes_url = f"/training/compare/indexes/{candidate.pk}/collections/dev/changes/"
    assert changes_url in html

    listing = bob_client.get(changes_url)
    assert listing.status_code == 200
    text = listing.content.decode()
    melanoma = Mention.objects.get(text="melanoma")
    assert f'href="/curate/dev/documents/{melanoma.document_id}/?m={melanoma.pk}"' in text
    assert text.index('id="changes-fixed"') < text.index("melanoma") < text.index('id="changes-broken"')
    assert "Diabetes Mellitus" in text and "Hypertension" in text
    # The same list against the older index: it has no figures on dev, so the page says to evaluate it first.
    against = bob_client.get(changes_url + f"?against={older.pk}")
    assert against.status_code == 200 and b"has not been evaluated on dev yet" in against.content


def test_only_admins_queue_an_evaluation_and_the_cell_polls_until_done(alice_client: Client, compared, charlie, bob) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, train, active, older, run, candidate = compared
    cell_url = f"/training/compare/indexes/{older.pk}/collections/dev/"
    client = Client()
    client.force_login(charlie)
    assert client.get("/training/compare/?dictionary=mini").status_code == 403
    client.force_login(bob)
    assert client.post(cell_url + "evaluate/").status_code == 403
    assert not Evaluation.objects.filter(index_version=older).exists()

    page = alice_client.get("/training/compare/?dictionary=mini").content.decode()
    assert f'hx-post="{cell_url}evaluate/"' in page
    response = alice_client.post(cell_url + "evaluate/", headers={"HX-Request": "true"})
    evaluation = Evaluation.objects.get(index_version=older)
    assert response.status_code == 200 and evaluation.state == "queued" and evaluation.created_by.username == "alice"
    assert f'hx-get="{cell_url}"' in response.content.decode() and "Queued for a worker" in response.content.decode()
    assert alice_client.get(cell_url, headers={"HX-Request": "true"}).status_code == 200  # still polling
    Evaluation.objects.filter(pk=evaluation.pk).update(state="succeeded", metrics={"acc@1": 0.5, "acc@5": 1.0, "mrr": 0.7,
                                                                                    "mentions": 6.0, "by_type": {}})
    done = alice_client.get(cell_url, headers={"HX-Request": "true"})
    assert done.status_code == 286 and "hx-get" not in done.content.decode() and "0.500" in done.content.decode()

    # Refused: the index was trained on train; the reason comes back in the cell.
    refused = alice_client.post(f"/training/compare/indexes/{older.pk}/collections/train/evaluate/", headers={"HX-Request": "true"})
    assert refused.status_code == 200 and "train is training data of index" in refused.content.decode()
    assert not Evaluation.objects.filter(index_version=older, collection=train).exists()


def test_bad_addresses_say_what_is_wrong(bob_client: Client, compared) -> None:  # type: ignore[no-untyped-def]
    dictionary, dev, train, active, older, run, candidate = compared
    missing = bob_client.get("/training/compare/?dictionary=nope")
    assert missing.status_code == 404 and b"There is no dictionary &#x27;nope&#x27;." in missing.content
    assert bob_client.get("/training/compare/").status_code == 200  # the one dictionary is shown at once
    other = _dictionary("other")
    _gold(other, "elsewhere", [])
    assert bob_client.get(f"/training/compare/indexes/{candidate.pk}/collections/elsewhere/").status_code == 404
    assert bob_client.get(f"/training/compare/indexes/{candidate.pk}/collections/dev/changes/?against=x").status_code == 404


@pytest.mark.slow
def test_a_trained_run_leaves_an_evaluation_of_its_index_with_outcomes(settings, tmp_path, alice) -> None:  # type: ignore[no-untyped-def]
    """Through the real training path (train_run --inline): the figures on the run and on its index's evaluation are
    the one computation the run's evaluate callback made."""
    from io import StringIO

    from django.core.management import call_command

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = _dictionary()
    _gold(dictionary, "train", TRAIN + [("102", "Hypertension and melanoma.", [("Hypertension", "MESH:D006973", "Disease"),
                                                                               ("melanoma", "MESH:D008545", "Cancer")])])
    dev = _gold(dictionary, "dev", DEV)
    call_command("train_run", "--dictionary", "mini", "--collection", "train", "--eval-collection", "dev", "--epochs", "1",
                 "--skip-pretrain", "--params", '{"topk": 4, "train_scope": "head"}', "--inline", stdout=StringIO())
    run = TrainingRun.objects.get()
    assert run.state == "succeeded", run.error
    evaluation = Evaluation.objects.get(index_version=run.index_version)
    assert (evaluation.state, evaluation.collection) == ("succeeded", dev)
    assert evaluation.metrics == run.metrics and set(run.metrics["by_type"]) == {"Disease", "Cancer"}
    outcomes = list(evaluation.outcomes.all())
    assert len(outcomes) == 6 and sum(o.correct for o in outcomes) / 6 == pytest.approx(run.metrics["acc@1"])
    # The comparison page shows it at once (no active index: no deltas).
    row = comparison_matrix(dictionary, alice).rows[0]
    assert row.run == run and row.cells[0].evaluation == evaluation and row.cells[0].figures[0].delta is None
