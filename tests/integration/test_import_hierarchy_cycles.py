"""A cycle in a dictionary's is_a hierarchy (terms that are their own ancestors) is an error of the ontology:
the import keeps the edges as written (walks up the hierarchy stop where they repeat) and says so in a warning,
from the importer, the command and an import job alike."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tasks.imports import run_import
from webapp.imports.models import ImportJob
from webapp.vocab.hierarchy import hierarchy_cycles, root_paths
from webapp.vocab.importers import import_dictionary
from webapp.vocab.models import Concept, HierarchyEdge

pytestmark = pytest.mark.django_db


def term(concept_id: str, name: str, *parents: str) -> str:
    return "\n".join([f"[Term]\nid: {concept_id}\nname: {name}", *(f"is_a: {p}" for p in parents)]) + "\n\n"


# X:1 is the root; X:2 -> X:3 -> X:4 -> X:2 is a cycle under it, X:6 <-> X:7 another, X:5 hangs below the first.
OBO = "format-version: 1.2\nontology: x\n\n" + "".join([
    term("X:1", "Root"),
    term("X:2", "Two", "X:1", "X:4"),
    term("X:3", "Three", "X:2"),
    term("X:4", "Four", "X:3"),
    term("X:5", "Five", "X:4"),
    term("X:6", "Six", "X:7"),
    term("X:7", "Seven", "X:6"),
])
WARNING = (
    "the is_a hierarchy has 2 cycles, terms that are their own ancestors "
    "(X:2 -> X:4 -> X:3 -> X:2; X:6 -> X:7 -> X:6); the edges were kept as written"
)


def write(tmp_path: Path, text: str = OBO) -> Path:
    path = tmp_path / "x.obo"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_cycle_is_a_warning_and_the_edges_are_kept(tmp_path: Path) -> None:
    report = import_dictionary(write(tmp_path), dictionary_slug="x")
    assert report.warnings == [WARNING]
    assert report.edges == HierarchyEdge.objects.count() == 7
    # Pages that walk up the hierarchy still end.
    paths = root_paths(Concept.objects.get(concept_id="X:5"))
    walks = [[c.concept_id for c in path] for path in paths.paths]
    assert ["X:1", "X:2", "X:3", "X:4", "X:5"] in walks
    assert all(walk[-1] == "X:5" and len(walk) == len(set(walk)) for walk in walks)


def test_the_command_prints_the_warning(tmp_path: Path) -> None:
    err = StringIO()
    call_command("import_dictionary", str(write(tmp_path)), "--slug", "x", stderr=err, stdout=StringIO(), verbosity=0)
    assert f"warning: {WARNING}" in err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_an_import_job_reports_the_warning(tmp_path: Path) -> None:
    job = ImportJob.objects.create(import_kind="dictionary", path=str(write(tmp_path)), params={"dictionary_slug": "x"})
    assert run_import(job.pk) == ImportJob.State.SUCCEEDED
    job.refresh_from_db()
    assert WARNING in job.report["warnings"]


def test_a_hierarchy_without_cycles_has_no_such_warning(tmp_path: Path) -> None:
    text = "format-version: 1.2\n\n" + term("X:1", "Root") + term("X:2", "Two", "X:1") + term("X:3", "Three", "X:1", "X:2")
    assert import_dictionary(write(tmp_path, text), dictionary_slug="x").warnings == []


def test_cycles_are_found_in_long_chains_without_recursion() -> None:
    chain = [(i, i + 1) for i in range(50_000)]
    assert hierarchy_cycles(chain) == []
    assert hierarchy_cycles([*chain, (50_000, 0)]) == [list(range(50_001)) + [0]]
