"""The project form's known types (issue #46): grouped by vocabulary, with a filter box once the list is long."""

from __future__ import annotations

from webapp.projects.forms import ProjectForm
from webapp.vocab.models import KnownType, KnownTypeVocabulary


def _types(vocabulary: str, n: int) -> None:
    voc = KnownTypeVocabulary.objects.create(name=vocabulary)
    KnownType.objects.bulk_create([KnownType(vocabulary=voc, code=f"{vocabulary}-{i}", label=f"{vocabulary} type {i:02d}")
                                   for i in range(n)])


def test_types_are_grouped_by_vocabulary(db) -> None:  # type: ignore[no-untyped-def]
    _types("MEDIC slim", 3)
    _types("UMLS semantic types", 2)
    choices = ProjectForm().fields["concept_types"].widget.choices
    assert [(group, [label for _, label in options]) for group, options in choices] == [
        ("MEDIC slim", ["MEDIC slim type 00", "MEDIC slim type 01", "MEDIC slim type 02"]),
        ("UMLS semantic types", ["UMLS semantic types type 00", "UMLS semantic types type 01"]),
    ]


def test_a_chosen_type_is_still_taken(db) -> None:  # type: ignore[no-untyped-def]
    _types("MEDIC slim", 3)
    chosen = KnownType.objects.get(code="MEDIC slim-1")
    form = ProjectForm(data={"concept_types": [chosen.pk]})
    form.is_valid()
    assert "concept_types" not in form.errors and list(form.cleaned_data["concept_types"]) == [chosen]


def test_a_long_list_gets_a_filter_box(alice_client) -> None:  # type: ignore[no-untyped-def]
    _types("UMLS semantic types", 30)
    html = alice_client.get("/projects/new/").content.decode()
    assert 'class="choices-filter"' in html and "choices-long" in html and "js/choice_filter.js" in html
    assert "<label>UMLS semantic types</label>" in html
