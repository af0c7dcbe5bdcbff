"""Hierarchy pre-training sources from files: dictionaries with their hierarchies, annotated corpora whose
mentions become names of the concepts they are linked to, and mention->concept lists as synonyms-only
sources. The CLI and the benchmark read files through here; the web app builds sources from its database.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from linker.data import iter_concept_mentions, iter_dictionary, iter_pubtator
from linker.dictionary import NameTable
from linker.hierarchy.graph import HierarchySource
from linker.protocol import training_pairs
from linker.text import Preprocessor, TextConfig

__all__ = ["source_name", "sources_from_files"]


def source_name(path: str | Path) -> str:
    """A dictionary's name from its file: ``CTD_diseases.tsv.gz`` -> ``CTD_diseases``."""
    name = Path(path).name
    for suffix in (".gz", ".tsv", ".txt", ".obo", ".tar", ".tgz"):
        name = name.removesuffix(suffix)
    return name


def sources_from_files(
    dictionaries: Sequence[str | Path],
    corpora: Sequence[str | Path] = (),
    synonym_files: Sequence[str | Path] = (),
    cfg: TextConfig | None = None,
) -> tuple[list[HierarchySource], dict[str, int]]:
    """The sources, and how many corpus names each dictionary gained. Each corpus's mentions join the
    dictionary that resolves most of them (NCBI Disease and BC5CDR ids resolve in MEDIC)."""
    cfg = cfg or TextConfig()
    sources: list[HierarchySource] = []
    tables: list[NameTable] = []  # only to resolve corpus ids: built when there are corpora
    for path in dictionaries:
        records = list(iter_dictionary(path))
        sources.append(HierarchySource.from_records(source_name(path), records, cfg))
        if corpora:
            tables.append(NameTable.from_records(records, cfg))
    gained = {s.name: 0 for s in sources}
    preprocessor = Preprocessor(cfg)
    for corpus in corpora:
        docs = list(iter_pubtator(corpus))
        candidates = [training_pairs(docs, table, preprocessor) for table in tables]
        best = max(range(len(candidates)), key=lambda i: len(candidates[i]), default=None)
        if best is not None and candidates[best]:
            gained[sources[best].name] += sources[best].add_names(candidates[best], cfg=cfg)
    for path in synonym_files:
        sources.append(HierarchySource.synonyms_only(source_name(path), iter_concept_mentions(path), cfg))
    return sources, gained
