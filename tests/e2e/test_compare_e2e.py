"""The comparison page in a browser: a curator reads the matrix (the active index first, deltas, McNemar's line, the
per-type figures), opens a cell's changed mentions and from there a mention on the curation screen; an admin
queues an evaluation of an empty cell and the cell fills in once a worker has run it. Screenshots: compare-*.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from tests.integration.test_run_comparison import DEV, TRAIN, _dictionary, _evaluation, _gold, _run_index
from webapp.corpus.models import Mention
from webapp.linking.models import IndexVersion
from webapp.training.models import Evaluation, TrainingRun


@pytest.fixture
def world(transactional_db, alice, bob, settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A dictionary with a real active sparse index, a candidate index from a run and an older one (a real sparse
    index too, so that it can be evaluated), and evaluations of the first two on the dev collection."""
    from django.db import connections

    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index, build_index, create_index_version

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    forget_all()
    dictionary = _dictionary()
    dev, train = _gold(dictionary, "dev", DEV), _gold(dictionary, "train", TRAIN)
    active = activate_index(build_index(create_index_version(dictionary.latest_version(), None)).pk)
    older = build_index(create_index_version(dictionary.latest_version(), None))
    older_run, _ = _run_index(dictionary, [train])
    TrainingRun.objects.filter(pk=older_run.pk).update(index_version=older)
    IndexVersion.objects.filter(pk=older.pk).update(created_at=older.created_at.replace(year=2020))
    run, candidate = _run_index(dictionary, [train])
    _evaluation(active, dev, {"asthma": ("MESH:D001249", 1), "hypertension": ("MESH:D006973", 1),
                              "Diabetes mellitus": ("MESH:D003920", 1), "melanoma": ("MESH:D009369", 2),
                              "breast neoplasms": ("MESH:D009369", 3), "Neoplasms": ("MESH:D001943", None)})
    _evaluation(candidate, dev, {"asthma": ("MESH:D001249", 1), "hypertension": ("MESH:D006973", 1),
                                 "Diabetes mellitus": ("MESH:D006973", 2), "melanoma": ("MESH:D008545", 1),
                                 "breast neoplasms": ("MESH:D001943", 1), "Neoplasms": ("MESH:D008545", 4)})
    yield active, candidate, older, run
    forget_all()


def test_a_curator_reads_the_matrix_and_follows_a_changed_mention_to_the_curation_screen(live_server, browser, world, screenshots) -> None:  # type: ignore[no-untyped-def]
    active, candidate, older, run = world
    page = login(browser, live_server.url, "bob", PASSWORD)
    page.goto(f"{live_server.url}/training/compare/?dictionary=mini")
    rows = page.locator("#compare-matrix > tbody > tr")
    assert [rows.nth(i).get_attribute("data-index") for i in range(3)] == [str(active.pk), str(candidate.pk), str(older.pk)]
    assert "active" in rows.nth(0).inner_text()
    cell = page.locator(f"#cell-{candidate.pk}-{Mention.objects.get(text='melanoma').document.collection_id}")
    assert "+0.167" in cell.inner_text() and "McNemar p = 1.000" in cell.inner_text()
    assert cell.locator(".delta.up").count() >= 1
    cell.locator("summary").click()  # the per-type breakdown
    assert cell.locator(".by-type table").is_visible() and "Cancer" in cell.locator(".by-type").inner_text()
    assert "training data of index" in rows.nth(1).inner_text()  # the train column is refused, with the reason
    page.screenshot(path=str(screenshots / "compare-matrix.png"), full_page=True)

    cell.locator("a.changes-link").click()
    page.wait_for_url(re.compile(r"/changes/$"))
    assert page.locator("#changes-fixed tbody tr").count() == 2
    assert page.locator("#changes-broken tbody tr").count() == 1 and page.locator("#changes-still-wrong tbody tr").count() == 1
    assert "Diabetes Mellitus" in page.inner_text("#changes-broken") and "Hypertension" in page.inner_text("#changes-broken")
    page.screenshot(path=str(screenshots / "compare-changes.png"), full_page=True)

    melanoma = Mention.objects.get(text="melanoma")
    page.locator("#changes-fixed a.mention-link", has_text="melanoma").click()
    page.wait_for_url(re.compile(rf"/curate/dev/documents/{melanoma.document_id}/\?m={melanoma.pk}$"))
    selected = page.locator("#document-text mark.selected")
    selected.first.wait_for()
    assert selected.first.inner_text() == "melanoma"
    # The candidate panel opens on it, from the active index.
    page.wait_for_function("!document.querySelector('#panel').innerText.includes('Select a mention')")
    assert "melanoma" in page.inner_text("#panel").lower()
    page.screenshot(path=str(screenshots / "compare-to-curation.png"), full_page=True)


def test_an_admin_queues_an_evaluation_and_the_cell_fills_in(live_server, browser, world, screenshots) -> None:  # type: ignore[no-untyped-def]
    from webapp.training.evaluation import run_evaluation

    active, candidate, older, run = world
    dev_id = Mention.objects.get(text="melanoma").document.collection_id
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/")
    page.click("#compare-link")
    page.wait_for_url(re.compile(r"/training/compare/"))
    cell = page.locator(f"#cell-{older.pk}-{dev_id}")
    cell.locator("button", has_text="Evaluate").click()
    page.locator(f"#cell-{older.pk}-{dev_id}[data-state=pending]").wait_for()
    assert "Queued for a worker" in page.inner_text(f"#cell-{older.pk}-{dev_id}")
    evaluation = Evaluation.objects.get(index_version=older, collection_id=dev_id)
    assert run_evaluation(evaluation.pk) == "succeeded"  # what the worker does with the queued task
    done = page.locator(f"#cell-{older.pk}-{dev_id}[data-state=done]")
    done.wait_for(timeout=10_000)
    assert "McNemar p" in done.inner_text()
    page.screenshot(path=str(screenshots / "compare-evaluated.png"), full_page=True)
