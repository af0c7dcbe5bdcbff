"""Load the demo data, or every data file of a folder, through the real importers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from linker.data import sniff_dictionary_format
from linker.textfiles import open_text
from webapp.demo.concepts import CONCEPTS
from webapp.demo.documents import render_pubtator

DEMO_DICTIONARY = "medic-demo"
DEMO_COLLECTION = "demo"

Log = Callable[[str], None]


def render_medic_tsv() -> str:
    """The demo concepts in CTD's MEDIC TSV layout (the same importer reads the full CTD file)."""
    lines = [
        "# Workbench demo: a slice of MEDIC written by the project",
        "# Report created: workbench demo 1",
        "# Fields:",
        "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings",
    ]
    for cid, name, synonyms, parents, slims, definition in CONCEPTS:
        cols = [name, cid, "", definition, "|".join(parents), "", "", "|".join(synonyms), "|".join(slims)]
        lines.append("\t".join(cols))
    return "\n".join(lines) + "\n"


def write_demo_files(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    dictionary = folder / "demo_medic.tsv"
    documents = folder / "demo_documents.pubtator.txt"
    dictionary.write_text(render_medic_tsv(), encoding="utf-8")
    documents.write_text(render_pubtator(), encoding="utf-8")
    return dictionary, documents


def load_demo(folder: Path, log: Log = print) -> None:
    from webapp.corpus.importers import import_pubtator
    from webapp.vocab.importers import import_dictionary

    dictionary, documents = write_demo_files(folder)
    report = import_dictionary(dictionary, dictionary_slug=DEMO_DICTIONARY, title="MEDIC (demo slice)")
    log(f"dictionary {DEMO_DICTIONARY}: {_summary(report)}")
    report = import_pubtator(
        documents, collection_slug=DEMO_COLLECTION, title="Demo abstracts", dictionary_slug=DEMO_DICTIONARY
    )
    log(f"collection {DEMO_COLLECTION}: {_summary(report)}")


@dataclass(frozen=True)
class FolderItem:
    path: Path
    kind: str  # "dictionary" or "documents"
    slug: str


def plan_folder(folder: Path) -> list[FolderItem]:
    """Recognise dictionaries (MEDIC TSV, DNorm text, OBO) and PubTator files in a folder, recursively.

    Dictionaries come first so that documents can resolve their gold ids against them.
    """
    items: list[FolderItem] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        kind = _kind(path)
        if kind:
            items.append(FolderItem(path, kind, _slug(path)))
    return sorted(items, key=lambda i: (i.kind != "dictionary", str(i.path)))


def load_folder(folder: Path, log: Log = print) -> None:
    from webapp.corpus.importers import import_pubtator
    from webapp.vocab.importers import import_dictionary

    items = plan_folder(folder)
    if not items:
        raise ValueError(f"{folder}: no dictionary (MEDIC TSV, DNorm text, OBO) or PubTator file found")
    dictionaries = [i.slug for i in items if i.kind == "dictionary"]
    for item in items:
        if item.kind == "dictionary":
            report = import_dictionary(item.path, dictionary_slug=item.slug)
        else:
            # Gold ids resolve against the first dictionary of the folder (e.g. MEDIC for NCBI Disease).
            report = import_pubtator(
                item.path, collection_slug=item.slug, dictionary_slug=dictionaries[0] if dictionaries else None
            )
        log(f"{item.kind} {item.slug} <- {item.path}: {_summary(report)}")


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if not name.endswith((".txt", ".tsv", ".tsv.gz", ".obo", ".obo.gz", ".txt.gz")):
        return None
    try:
        with open_text(path) as fh:
            # The NCBI Disease corpus files open with a blank line: sniff the first line with text.
            head = next((line for line in fh if line.strip()), "")
    except (OSError, UnicodeDecodeError):
        return None
    if re.match(r"^[^|\t]+\|t\|", head):
        return "documents"
    try:
        sniff_dictionary_format(path)
    except ValueError:
        return None
    return "dictionary"


def _slug(path: Path) -> str:
    stem = path.name
    for suffix in (".gz", ".txt", ".tsv", ".obo", ".PubTator", ".pubtator"):
        stem = stem.removesuffix(suffix)
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:64] or "data"


def _summary(report: object) -> str:
    fields = getattr(report, "__dataclass_fields__", {})
    parts = [f"{k}={getattr(report, k)}" for k in fields if k not in ("warnings",) and not k.startswith("_")]
    return ", ".join(parts)
