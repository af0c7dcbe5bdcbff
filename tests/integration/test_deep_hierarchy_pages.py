"""A hierarchy 20,000 levels deep (an OBO is_a chain: imports fine) answers on the deepest concept's page and in
the candidate panel: the walks up the hierarchy are iterative, and a path too deep to show whole is shown from the
concept's nearest ancestors, saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.hierarchy import MAX_PATH_LENGTH
from webapp.vocab.importers import import_dictionary
from webapp.vocab.links import concept_url
from webapp.vocab.models import Concept

pytestmark = pytest.mark.django_db

LEVELS = 20_000


@pytest.fixture
def chain(tmp_path: Path) -> Concept:
    """C:0 is the root; C:n is_a C:n-1, down to C:19999. Returns the deepest concept."""
    terms = [
        f"[Term]\nid: C:{n}\nname: level {n}\n" + (f"is_a: C:{n - 1}\n" if n else "") for n in range(LEVELS)
    ]
    path = tmp_path / "chain.obo"
    path.write_text("format-version: 1.2\nontology: chain\n\n" + "\n".join(terms), encoding="utf-8")
    report = import_dictionary(path, dictionary_slug="chain")
    assert report.edges == LEVELS - 1
    return Concept.objects.select_related("version__dictionary").get(concept_id=f"C:{LEVELS - 1}")


def test_the_deepest_concepts_page_answers_with_its_nearest_ancestors(bob_client, chain: Concept) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get(concept_url(chain))
    assert response.status_code == 200
    paths = response.context["root_paths"]
    assert paths.cut and not paths.truncated and len(paths.paths) == 1
    names = [c.preferred_name for c in paths.paths[0]]
    assert names == [f"level {n}" for n in range(LEVELS - MAX_PATH_LENGTH, LEVELS)]
    assert f"A path is deeper than {MAX_PATH_LENGTH} levels" in response.content.decode()


def test_a_shallow_concepts_page_shows_its_whole_path(bob_client, chain: Concept) -> None:  # type: ignore[no-untyped-def]
    response = bob_client.get(
        concept_url(Concept.objects.select_related("version__dictionary").get(concept_id="C:3"))
    )
    assert response.status_code == 200
    paths = response.context["root_paths"]
    assert [c.concept_id for c in paths.paths[0]] == ["C:0", "C:1", "C:2", "C:3"] and not paths.cut
    assert "deeper than" not in response.content.decode()


def test_the_panel_gives_the_deepest_candidates_lineage(bob_client, chain: Concept) -> None:  # type: ignore[no-untyped-def]
    collection = Collection.objects.create(slug="deep", title="Deep", dictionary=chain.version.dictionary)
    document = Document.objects.create(collection=collection, external_id="1", text="level 19999 here")
    mention = Mention.objects.create(document=document, start=0, end=11, text="level 19999")
    Link.objects.create(
        mention=mention,
        concept=chain,
        concept_ref=chain.concept_id,
        origin=Link.Origin.MODEL,
        rank=1,
        score=1.0,
    )
    response = bob_client.get(f"/curate/mentions/{mention.pk}/panel/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    row = response.context["p"].candidates[0]
    assert row.concept_id == chain.concept_id and row.path_cut
    assert len(row.path) == MAX_PATH_LENGTH and row.path[-1].concept_id == chain.concept_id
    assert row.parent is not None and row.parent.concept_id == f"C:{LEVELS - 2}"
    assert "path cut, the root is further up" in response.content.decode()
