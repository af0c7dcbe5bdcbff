"""Concept search's prefix tier: the same order (exact name, then names the query starts with whole words, a
preferred name before a synonym, then shortest, then id) whether the prefix is rare (every match read in name order and sorted) or common (read shortest first through the
(first 3 characters, length) index, a window of lengths at a time), and the planner settings it changes for those
index scans are back as they were afterwards.

PREFIX_SCAN is lowered so that a dictionary of a few dozen names has common prefixes (at 3M names "hyper" has 26K).
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from linker.text import normalize
from webapp.vocab import selectors
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

pytestmark = pytest.mark.django_db

NAMES = [
    # (concept id, name, preferred)
    ("C01", "hyperglycaemia induced by a drug of the sulfonylurea class", True),
    ("C02", "hypertension", True),
    ("C03", "hyper", True),  # the exact name of "hyper"
    ("C04", "hypertensive crisis", True),
    ("C05", "hyperkalaemia", True),
    ("C06", "hypokalaemia", True),
    ("C07", "hypothyroidism", True),
    ("C08", "hypotension", True),
    ("C09", "hyperthyroidism", True),
    ("C10", "hyperlipidaemia", False),
    ("C11", "hyperlipidaemia", True),  # a homonym: preferred before the other concept's synonym
    ("C12", "hypertrophic cardiomyopathy", True),
    ("C13", "hyperuricaemia", True),
    ("C14", "hyperplasia of the prostate gland with lower urinary tract symptoms", True),
    ("C15", "hy", True),
    ("C16", "hyaline membrane disease", True),
    ("C17", "cardiomyopathy", True),
]


@pytest.fixture
def version(db) -> DictionaryVersion:  # type: ignore[no-untyped-def]
    dictionary = Dictionary.objects.create(slug="prefixes", title="Prefixes")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="c" * 64)
    concepts: dict[str, Concept] = {}
    for cid, name, preferred in NAMES:
        concept = concepts.get(cid) or Concept.objects.create(version=version, concept_id=cid, preferred_name=name)
        concepts[cid] = concept
        Name.objects.create(concept=concept, text=name, normalized=normalize(name), is_preferred=preferred)
    return version


def _expected(q: str, rows: int) -> list[tuple[str, str]]:
    normalized = [(cid, normalize(name), preferred) for cid, name, preferred in NAMES]
    matches = [(cid, name, preferred) for cid, name, preferred in normalized if name.startswith(q)]
    matches.sort(key=lambda m: (m[1] != q, not m[1].startswith(q + " ") and m[1] != q, not m[2], len(m[1]), m[0]))
    return [(cid, name) for cid, name, _ in matches[:rows]]


def _tier(version: DictionaryVersion, q: str, rows: int) -> list[tuple[str, str]]:
    names = Name.objects.filter(concept__version=version).select_related("concept__version__dictionary")
    return [(n.concept.concept_id, n.normalized) for n in selectors._prefix_tier(names, q, rows)]


@pytest.mark.parametrize("scan", [1000, 3])  # every match read and sorted / the common-prefix path
@pytest.mark.parametrize("q", ["hyper", "hyperl", "hypo", "hyp", "card"])
def test_both_paths_give_the_exact_name_then_the_shortest(version, monkeypatch, scan: int, q: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", scan)
    for rows in (1, 4, 50):
        assert _tier(version, q, rows) == _expected(q, rows)


def test_a_common_prefix_finds_long_names_beyond_the_first_windows(version, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", 3)
    found = _tier(version, "hyperplasia", 5)
    assert found == [("C14", "hyperplasia of the prostate gland with lower urinary tract symptoms")]


def test_a_common_two_letter_prefix_is_in_name_order_with_the_exact_name_first(version, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", 3)
    found = _tier(version, "hy", 3)
    assert found == [("C15", "hy"), ("C16", "hyaline membrane disease"), ("C03", "hyper")]


def test_search_ranks_through_the_common_prefix_path(version, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", 3)
    hits = selectors.search_concepts(version, "Hyper", limit=3)
    assert [h.concept.concept_id for h in hits] == ["C03", "C02", "C05"]
    assert hits[0].matched == "hyper"


def _planner() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_bitmapscan'), current_setting('enable_seqscan')")
        return cursor.fetchone()


def test_the_planner_settings_are_restored_after_a_search_and_after_an_error(version, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(selectors, "PREFIX_SCAN", 3)
    with transaction.atomic():  # as inside a request's transaction: SET LOCAL would otherwise outlive the search
        selectors.search_concepts(version, "hyper")
        assert _planner() == ("on", "on")
        with pytest.raises(ZeroDivisionError), selectors._index_order_only():
            assert _planner() == ("off", "off")
            raise ZeroDivisionError
        assert _planner() == ("on", "on")
