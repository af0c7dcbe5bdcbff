"""An undone curator synonym stops coming back as a candidate at once: in the process that undid it (after the
undo commits) and in any other process serving the index (from the RemovedName row, on its next lookup)."""

from __future__ import annotations

import pytest

from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.curation.services.decisions import decide
from webapp.curation.services.undo import undo
from webapp.linking import registry
from webapp.linking.registry import forget_all, get_active_linker
from webapp.training.services import activate_index, build_index, create_index_version
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name, RemovedName

pytestmark = pytest.mark.django_db

SYNONYM = "wheezy chest attack"


@pytest.fixture(autouse=True)
def _artifacts(settings, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    monkeypatch.setattr(registry, "RECHECK_SECONDS", 0.0)  # every lookup looks at the database
    forget_all()
    yield
    forget_all()


def _served() -> tuple[DictionaryVersion, Collection]:
    dictionary = Dictionary.objects.create(slug="mini", title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="a" * 64)
    for cid, names in {"MESH:D001249": ["Asthma", "Bronchial asthma"], "MESH:D006973": ["Hypertension", "High blood pressure"]}.items():
        concept = Concept.objects.create(version=version, concept_id=cid, preferred_name=names[0])
        for i, text in enumerate(names):
            Name.objects.create(concept=concept, text=text, normalized=text.lower(), is_preferred=i == 0)
    return version, Collection.objects.create(slug="notes", title="Notes", dictionary=dictionary)


def _mention(collection: Collection, text: str) -> Mention:
    document = Document.objects.create(collection=collection, external_id=text, text=text)
    mention = Mention.objects.create(document=document, start=0, end=len(text), text=text, status=Mention.Status.SUGGESTED)
    asthma = Concept.objects.get(concept_id="MESH:D001249")
    Link.objects.create(mention=mention, concept=asthma, concept_ref=asthma.concept_id, origin=Link.Origin.MODEL, rank=1,
                        score=1.0, model_version="mini@1/sparse")
    return mention


def _names_found(text: str) -> list[tuple[str, str]]:
    active = get_active_linker("mini")
    assert active is not None
    (cands,) = active.linker.link_mentions([text], k=5)
    return [(c.concept_id, c.name) for c in cands]


def _accept(mention: Mention, user) -> int:  # type: ignore[no-untyped-def]
    return decide(user=user, mention_id=mention.pk, action="accept", seen_updated_at=mention.updated_at).decision.pk


def test_an_undone_synonym_no_longer_comes_back_as_a_candidate(bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    version, collection = _served()
    activate_index(build_index(create_index_version(version, None)).pk)
    assert ("MESH:D001249", SYNONYM) not in _names_found(SYNONYM)
    mention = _mention(collection, SYNONYM)
    with django_capture_on_commit_callbacks(execute=True):
        decision = _accept(mention, bob)
    assert _names_found(SYNONYM)[0] == ("MESH:D001249", SYNONYM)

    with django_capture_on_commit_callbacks(execute=True):
        undo(user=bob, decision_id=decision)

    assert not Name.objects.filter(text=SYNONYM).exists()
    assert SYNONYM not in [name for _, name in _names_found(SYNONYM)]
    assert _names_found("bronchial asthma")[0] == ("MESH:D001249", "Bronchial asthma")


def test_another_process_forgets_it_on_its_next_lookup(bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    version, collection = _served()
    mention = _mention(collection, SYNONYM)
    decision = _accept(mention, bob)
    # The index is built with the synonym in it, as any process loads it.
    activate_index(build_index(create_index_version(version, None)).pk)
    assert _names_found(SYNONYM)[0] == ("MESH:D001249", SYNONYM)

    # Another process undoes it: its after-commit callback runs there, not here.
    with django_capture_on_commit_callbacks(execute=False):
        undo(user=bob, decision_id=decision)
    assert list(RemovedName.objects.values_list("concept_id", "text")) == [("MESH:D001249", SYNONYM)]

    assert SYNONYM not in [name for _, name in _names_found(SYNONYM)]


def test_a_synonym_that_is_also_a_dictionary_name_stays_in_the_index(bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    version, collection = _served()
    activate_index(build_index(create_index_version(version, None)).pk)
    mention = _mention(collection, "BRONCHIAL ASTHMA")  # another text, the same normalised name as a dictionary name
    with django_capture_on_commit_callbacks(execute=True):
        decision = _accept(mention, bob)
    assert Name.objects.filter(text="BRONCHIAL ASTHMA", source="curator").exists()
    with django_capture_on_commit_callbacks(execute=True):
        undo(user=bob, decision_id=decision)
    assert _names_found("bronchial asthma")[0] == ("MESH:D001249", "Bronchial asthma")


def test_each_curator_name_counts_once_in_the_live_index(bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    """Every process, the deciding one too, reads the curator's name from the database: each counts it once (its
    support: a tie-break, a re-ranker feature)."""
    version, collection = _served()
    activate_index(build_index(create_index_version(version, None)).pk)
    with django_capture_on_commit_callbacks(execute=True):
        _accept(_mention(collection, SYNONYM), bob)
    assert _names_found(SYNONYM)[0] == ("MESH:D001249", SYNONYM)  # the next look has run (RECHECK_SECONDS = 0)
    active = get_active_linker("mini")
    assert active is not None
    table = active.linker.table
    row = table.row(SYNONYM, "MESH:D001249")
    assert row is not None and table.row_support[row] == 1

    # A mention spelt as a name the concept has already creates no name: the served linker is the same one.
    asthma = table.row("Bronchial asthma", "MESH:D001249")
    assert asthma is not None
    support = table.row_support[asthma]
    with django_capture_on_commit_callbacks(execute=True):
        _accept(_mention(collection, "Bronchial asthma"), bob)
    _names_found("bronchial asthma")
    again = get_active_linker("mini")
    assert again is not None and again.linker is active.linker and table.row_support[asthma] == support

    # Another process (a fresh load of the index) counts the curator's name once as well.
    forget_all()
    other = get_active_linker("mini")
    assert other is not None and other.linker is not active.linker
    row = other.linker.table.row(SYNONYM, "MESH:D001249")
    assert row is not None and other.linker.table.row_support[row] == 1
