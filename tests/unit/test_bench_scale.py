"""bench/scale.py's generated UMLS release: read back by linker.umls with exactly the names asked for; needs ../shared/data."""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from pathlib import Path

import pytest

from linker.umls import UmlsFilter, UmlsRelease, iter_concepts, iter_mrrel_edges, iter_semantic_types

SHARED = Path(__file__).parents[2] / ".." / "shared" / "data"

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent (public data sets not on this machine)"),
]

scale = importlib.import_module("bench.scale")


@pytest.fixture(scope="module")
def sources() -> object:
    # The first 150 MEDIC concepts (~1,000 names) stay real; the rest of 2,000 names is synthetic.
    real = scale.load_sources(SHARED)
    return replace(real, medic=real.medic[:150])


def _names(concept: object) -> list[str]:
    return list(dict.fromkeys([concept.preferred_name, *(s.text for s in concept.synonyms)]))


def test_release_has_the_requested_names_concepts_types_and_edges(tmp_path: Path, sources: object) -> None:
    stats = scale.write_release(tmp_path / "rel", 2000, seed=7, sources=sources)
    release = UmlsRelease(tmp_path / "rel")
    assert release.release_label() == scale.RELEASE_LABEL

    concepts = list(iter_concepts(release, UmlsFilter()))
    assert sum(len(_names(c)) for c in concepts) == stats["names"] == 2000
    assert len(concepts) == stats["concepts"] == stats["medic_concepts"] + stats["synthetic_concepts"]
    assert stats["medic_concepts"] == 150 and stats["synthetic_concepts"] > 100
    cuis = [c.concept_id for c in concepts]
    assert all(re.fullmatch(r"C\d{7}", c) for c in cuis) and cuis == sorted(set(cuis))

    # A real concept keeps its names and its MEDIC ids as source codes, spelled so BC5CDR's gold ids resolve.
    first = sources.medic[0]
    assert _names(concepts[0]) == list(first.names)
    assert concepts[0].alt_ids[0] == first.concept_id and set(concepts[0].alt_ids) == set(first.codes)
    # A synthetic one is a real concept's names with words swapped: none of its names is a real MEDIC name.
    real_names = {n for c in sources.medic for n in c.names}
    synthetic = concepts[stats["medic_concepts"]:]
    assert all(c.alt_ids == (f"SCALE:SC{int(c.concept_id[1:]):08d}",) for c in synthetic)
    assert not any(n in real_names for c in synthetic for n in _names(c))

    types = list(iter_semantic_types(release))
    assert {t.cui for t in types} == set(cuis) and len(types) == stats["mrsty_rows"]
    assert {t.tui for t in types} <= {tui for tui, *_ in scale.SEMANTIC_TYPES}

    edges = list(iter_mrrel_edges(release, UmlsFilter()))
    assert len(edges) == stats["mrrel_rows"]
    position = {cui: i for i, cui in enumerate(cuis)}
    synthetic_cuis = {c.concept_id for c in synthetic}
    # Every synthetic concept has one parent, an earlier concept; the real ones keep MEDIC's own edges.
    parents = {child: parent for child, parent in edges if child in synthetic_cuis}
    assert set(parents) == synthetic_cuis
    assert all(position[parent] < position[child] for child, parent in parents.items())


def test_same_seed_same_release_other_seed_other_names(tmp_path: Path, sources: object) -> None:
    scale.write_release(tmp_path / "a", 2000, seed=7, sources=sources)
    scale.write_release(tmp_path / "b", 2000, seed=7, sources=sources)
    scale.write_release(tmp_path / "c", 2000, seed=8, sources=sources)
    conso = "META/MRCONSO.RRF"
    assert (tmp_path / "a" / conso).read_bytes() == (tmp_path / "b" / conso).read_bytes()
    assert (tmp_path / "a" / conso).read_bytes() != (tmp_path / "c" / conso).read_bytes()
