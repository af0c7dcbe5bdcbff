"""The word-vector methods in a browser: the start form shows only the chosen method's fields (and hides
fastText's settings once BNE starts from word vectors), and an upload refused on the models page shows the
file and its fault next to the form, leaving nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.e2e.conftest import login
from webapp.training.models import WordVectorModel

GOOD = "3 4\nasthma 0.1 0.2 0.3 0.4\ndiabetes 0.4 0.3 0.2 0.1\ncancer 0.2 0.2 0.2 0.2\n"


@pytest.fixture
def world(transactional_db, alice, settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    from django.db import connections

    from webapp.training.word_vectors import import_word_vectors
    from webapp.vocab.models import Dictionary, DictionaryVersion

    connections.settings["default"]["CONN_MAX_AGE"] = 0  # live-server threads close their connections
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="demo", checksum="e" * 64)
    given = tmp_path / "given.vec"
    given.write_text(GOOD)
    return import_word_vectors(given, "tiny-vectors", "given.vec")


def test_each_method_shows_its_own_fields(live_server, browser, world, screenshots) -> None:  # type: ignore[no-untyped-def]
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/runs/new/")
    shown = {  # method -> (fields shown, fields hidden)
        "fasttext": (["#id_text_collections", "#id_include_names", "#id_vector_dim"],
                     ["#id_collections", "#id_word_vectors", "#id_level", "#id_bne_epochs", "#id_eval_collection"]),
        "bne": (["#id_collections", "#id_word_vectors", "#id_vector_dim", "#id_bne_epochs", "#id_objectives_0", "#id_eval_collection"],
                ["#id_text_collections", "#id_include_names", "#id_level", "#id_dan_epochs", "#id_base_encoder"]),
        "dan": (["#id_collections", "#id_word_vectors", "#id_level", "#id_hierarchy", "#id_dan_epochs"],
                ["#id_objectives_0", "#id_bne_epochs", "#id_text_collections", "#id_topk"]),
        "biosyn": (["#id_topk", "#id_base_encoder"], ["#id_word_vectors", "#id_vector_dim", "#id_level"]),
    }
    for method, (visible, hidden) in shown.items():
        page.check(f"input[name=method][value={method}]")
        for selector in visible:
            assert page.is_visible(selector), (method, selector)
        for selector in hidden:
            assert not page.is_visible(selector), (method, selector)
        if method in ("fasttext", "bne", "dan"):
            page.screenshot(path=str(screenshots / f"training-start-{method}.png"), full_page=True)

    # BNE from word vectors of the workbench: fastText's settings go, the choice stays.
    page.check("input[name=method][value=bne]")
    page.select_option("#id_word_vectors", world.name)
    assert not page.is_visible("#id_vector_dim") and not page.is_visible("#id_include_definitions")
    assert page.is_visible("#id_word_vectors")
    page.select_option("#id_word_vectors", "")
    assert page.is_visible("#id_vector_dim")


def test_a_refused_upload_names_the_file_and_its_fault_by_the_form(live_server, browser, world, settings, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                   screenshots) -> None:
    cut = tmp_path / "cut.vec"
    cut.write_text(GOOD.replace("3 4", "5 4", 1))
    page = login(browser, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/training/models/")
    assert page.is_visible("#vectors-tiny-vectors")
    page.set_input_files("#id_file", str(cut))
    page.click("#upload-word-vectors button[type=submit]")
    error = page.locator("#upload-word-vectors .field-error")
    error.wait_for()
    assert error.inner_text() == "cut.vec: truncated: the header announces 5 words, the file holds 3"
    assert page.url.endswith("#upload-title")  # the page opens at the form and its error
    page.screenshot(path=str(screenshots / "word-vectors-upload-refused.png"))
    assert list(WordVectorModel.objects.values_list("name", flat=True)) == ["tiny-vectors"]
    assert sorted(p.name for p in (Path(settings.ARTIFACT_ROOT) / "word-vectors").iterdir()) == ["tiny-vectors"]
