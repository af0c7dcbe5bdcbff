"""Import a UMLS Metathesaurus release (RRF: a folder or a .zip of one) as one new DictionaryVersion.

Concepts are CUIs; their names come from MRCONSO (by default English, every source, suppressed rows left out),
their known types from MRSTY (the "UMLS semantic types" vocabulary: TUI codes, STY labels) and their hierarchy
from MRHIER where the release has it, else from MRREL's PAR/CHD rows (:data:`linker.umls.HIERARCHY_SOURCES`).

Why it is written this way:

- A full release is 15 GB of MRCONSO and tens of millions of MRREL/MRHIER rows. Names go through the
  :class:`VersionWriter` batch by batch (COPY), keeping no id map in memory; semantic types and hierarchy rows
  are COPYed into temporary staging tables and joined to the concepts in SQL, so memory stays flat whatever the
  release's size, and rows naming a concept the filters left without a name simply find no partner (they are
  counted and reported, not errors).
- One transaction, as every import: a malformed row anywhere (its file and line named) leaves nothing behind.
- A release is identified by the SHA-256 over the RRF files read (the same whether a folder or a .zip) and by
  its label (release.dat, else a folder name like 2024AA): importing it again into the same dictionary is
  refused with the version that has it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection, transaction

from linker.data import ParseError
from linker.umls import (
    HIERARCHY_SOURCES,
    MRCONSO,
    MRHIER,
    MRREL,
    MRSTY,
    UmlsFilter,
    UmlsRelease,
    iter_concepts,
    iter_mrhier_edges,
    iter_mrrel_edges,
    iter_semantic_types,
)
from webapp.core.batching import batched
from webapp.vocab.copy import copy_into, max_length
from webapp.vocab.import_steps import analyze_vocab, existing_version, locked_dictionary, report_existing
from webapp.vocab.models import Concept, DictionaryVersion, HierarchyEdge, KnownType, KnownTypeVocabulary
from webapp.vocab.terms import defer_terms, write_terms
from webapp.vocab.version_writer import IS_A, ImportReport, VersionWriter

__all__ = ["UMLS_TYPE_VOCABULARY", "import_umls", "parse_list"]

UMLS_TYPE_VOCABULARY = "UMLS semantic types"
BATCH_SIZE = 5000
STAGE_BATCH = 50_000
_LABEL_MAX = max_length(KnownType, "label")
_RELEASE_MAX = max_length(DictionaryVersion, "release")

Progress = Any  # webapp.vocab.importers.Progress: (done, total or None) -> None


def parse_list(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"MSH,OMIM, HPO"`` (or a list) -> ("MSH", "OMIM", "HPO"): the command's, the form's and a job's spelling."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(dict.fromkeys(i.strip() for i in items if i and i.strip()))


def import_umls(
    path: Path,
    *,
    dictionary_slug: str,
    title: str | None,
    release: str | None,
    keep: UmlsFilter,
    hierarchy: str = "auto",
    user: Any = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the UMLS release at ``path`` (checked by :func:`webapp.vocab.importers.import_dictionary`, which calls
    this); raises ParseError (``file:line: message``) or ValueError and leaves the database as it was."""
    started = time.perf_counter()
    if hierarchy not in HIERARCHY_SOURCES:
        raise ValueError(f"unknown UMLS hierarchy source {hierarchy!r}; expected one of {', '.join(HIERARCHY_SOURCES)}")
    for code in (*keep.languages, *keep.sources):
        if not code.replace("_", "").replace("-", "").replace(".", "").isalnum() or len(code) > 40:
            raise ValueError(f"{code[:40]!r} is no UMLS language or source abbreviation (e.g. ENG, MSH, OMIM, HPO)")
    umls = UmlsRelease(path)
    if hierarchy == "mrhier" and not umls.has(MRHIER):
        raise ValueError(f"{path}: the release has no {MRHIER}; choose the hierarchy from MRREL (mrrel)")
    use_mrhier = umls.has(MRHIER) and hierarchy in ("auto", "mrhier")
    checksum = umls.checksum()
    label = (release or umls.release_label() or f"{path.name} sha256:{checksum[:12]}")[:_RELEASE_MAX]
    source_name = str(path)[:500]

    with transaction.atomic():
        dictionary = locked_dictionary(dictionary_slug, title)
        existing = existing_version(dictionary, label, checksum)
        if existing is not None:
            return report_existing(existing, checksum, started)
        version = DictionaryVersion.objects.create(
            dictionary=dictionary, release=label, source_format=DictionaryVersion.Format.UMLS, source_name=source_name,
            checksum=checksum, imported_by=user if getattr(user, "pk", None) else None,
        )
        writer = VersionWriter(version, Path(umls.where(MRCONSO)), "umls", keep_ids=False)
        defer_terms()
        stage = _Staging()
        _write_concepts(umls, keep, writer, stage if use_mrhier else None, progress)
        if not writer.report.concepts:
            raise ValueError(f"{umls.where(MRCONSO)}: no concepts: no row is left after the filters ({_described(keep)}); "
                             f"nothing imported")
        report = writer.report
        if umls.has(MRSTY):
            _write_semantic_types(umls, version, stage, report, keep)
        if use_mrhier or umls.has(MRREL):
            _write_hierarchy(umls, version, stage, writer, keep, hierarchy, use_mrhier)
        stage.drop()
        write_terms(version)
        version.concept_count, version.name_count, version.edge_count = report.concepts, report.names, report.edges
        version.save(update_fields=["concept_count", "name_count", "edge_count"])
        if dictionary.versions.exclude(pk=version.pk).exists():
            from webapp.vocab.releases import queue_carry_over

            queue_carry_over(version)

    analyze_vocab()
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {dictionary.slug} release {label!r} (UMLS, {_described(keep)}): {report.concepts} concepts, "
        f"{report.names} names, {report.edges} edges, {report.known_types} known types in {report.seconds:.1f} s"
    )
    return report


def _described(keep: UmlsFilter) -> str:
    languages = ", ".join(keep.languages) or "every language"
    sources = ", ".join(keep.sources) or "every source"
    suppressed = "suppressed rows kept" if keep.include_suppressed else "suppressed rows left out"
    return f"languages {languages}; sources {sources}; {suppressed}"


# --- staging tables ---------------------------------------------------------------------------------------------


class _Staging:
    """Temporary tables of this transaction: atom -> concept (for MRHIER's parent atoms), semantic types and
    hierarchy rows by CUI, joined to the version's concepts in SQL. Dropped at the end (and by the rollback)."""

    TABLES = {
        "umls_stage_aui": "aui text NOT NULL, cui text NOT NULL",
        "umls_stage_sty": "cui text NOT NULL, tui text NOT NULL",
        "umls_stage_edge": "child text NOT NULL, parent text",
        "umls_stage_hier": "child text NOT NULL, parent_aui text NOT NULL",
    }

    def __init__(self) -> None:
        with connection.cursor() as cursor:
            for table, columns in self.TABLES.items():
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
                cursor.execute(f"CREATE TEMPORARY TABLE {table} ({columns}) ON COMMIT DROP")

    def copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        return copy_into(table, columns, rows)

    def drop(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {', '.join(self.TABLES)}")


# --- concepts and names -----------------------------------------------------------------------------------------


def _write_concepts(umls: UmlsRelease, keep: UmlsFilter, writer: VersionWriter, stage: _Staging | None,
                    progress: Progress | None) -> None:
    read = [0]  # bytes of MRCONSO read so far
    auis: list[tuple[str, str]] | None = [] if stage is not None else None
    size = umls.size(MRCONSO)
    for batch in batched(iter_concepts(umls, keep, read, auis), BATCH_SIZE):
        writer.add_concepts(batch)
        if stage is not None and auis:
            _stage_auis(stage, auis)
        if progress:
            # No count of concepts is known before the end: the total is estimated from the share of MRCONSO read.
            done = writer.report.concepts
            progress(done, max(done, round(done * size / read[0])) if read[0] else None)
    if stage is not None and auis:
        _stage_auis(stage, auis)


def _stage_auis(stage: _Staging, auis: list[tuple[str, str]]) -> None:
    stage.copy("umls_stage_aui", ["aui", "cui"], auis)
    auis.clear()


# --- semantic types ---------------------------------------------------------------------------------------------


def _write_semantic_types(umls: UmlsRelease, version: DictionaryVersion, stage: _Staging, report: ImportReport,
                          keep: UmlsFilter) -> None:
    labels: dict[str, str] = {}
    rows = 0
    for batch in batched(iter_semantic_types(umls), STAGE_BATCH):
        for st in batch:
            if "\x00" in st.label:
                raise ParseError(umls.where(MRSTY), st.line, f"TUI {st.tui}: STY contains a NUL character")
            labels.setdefault(st.tui, st.label[:_LABEL_MAX])
        rows += stage.copy("umls_stage_sty", ["cui", "tui"], ((st.cui, st.tui) for st in batch))
    if not rows:
        return
    vocabulary, _ = KnownTypeVocabulary.objects.get_or_create(
        name=UMLS_TYPE_VOCABULARY,
        defaults={"description": "UMLS Semantic Network types (MRSTY): TUI codes such as T047 'Disease or Syndrome'."},
    )
    have = set(KnownType.objects.filter(vocabulary=vocabulary, code__in=labels).values_list("code", flat=True))
    KnownType.objects.bulk_create(
        [KnownType(vocabulary=vocabulary, code=tui, label=label) for tui, label in labels.items() if tui not in have])
    through = Concept.known_types.through._meta.db_table
    concepts, known = Concept._meta.db_table, KnownType._meta.db_table
    params = {"version": version.pk, "vocabulary": vocabulary.pk}
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {through} (concept_id, knowntype_id)
                SELECT DISTINCT c.id, k.id FROM umls_stage_sty s
                JOIN {concepts} c ON c.version_id = %(version)s AND c.concept_id = s.cui
                JOIN {known} k ON k.vocabulary_id = %(vocabulary)s AND k.code = s.tui""", params)
        report.known_type_assignments = cursor.rowcount
        cursor.execute(
            f"""SELECT count(DISTINCT t.knowntype_id) FROM {through} t
                JOIN {concepts} c ON c.id = t.concept_id WHERE c.version_id = %(version)s""", params)
        report.known_types = cursor.fetchone()[0]
        cursor.execute(
            f"""SELECT count(*) FROM umls_stage_sty s WHERE NOT EXISTS (
                   SELECT 1 FROM {concepts} c WHERE c.version_id = %(version)s AND c.concept_id = s.cui)""", params)
        skipped = cursor.fetchone()[0]
    if skipped:
        report.warnings.append(f"{MRSTY}: skipped {skipped} of {rows} rows naming a concept without a name after the "
                               f"filters ({_described(keep)})")


# --- hierarchy --------------------------------------------------------------------------------------------------


def _write_hierarchy(umls: UmlsRelease, version: DictionaryVersion, stage: _Staging, writer: VersionWriter,
                     keep: UmlsFilter, hierarchy: str, use_mrhier: bool) -> None:
    if use_mrhier:
        source = f"{MRHIER} contexts"
        for batch in batched(iter_mrhier_edges(umls, keep), STAGE_BATCH):
            stage.copy("umls_stage_hier", ["child", "parent_aui"], batch)
        with connection.cursor() as cursor:
            # A parent atom absent from MRCONSO keeps a NULL parent: counted below with the other unmatched rows.
            cursor.execute("CREATE INDEX ON umls_stage_aui (aui)")
            cursor.execute("""INSERT INTO umls_stage_edge (child, parent)
                              SELECT h.child, a.cui FROM umls_stage_hier h LEFT JOIN umls_stage_aui a ON a.aui = h.parent_aui""")
    else:
        broader = hierarchy == "mrrel-broader"
        source = f"{MRREL} PAR/CHD{'/RB/RN' if broader else ''} rows"
        for batch in batched(iter_mrrel_edges(umls, keep, broader), STAGE_BATCH):
            stage.copy("umls_stage_edge", ["child", "parent"], batch)
    params = {"version": version.pk, "relation": IS_A}
    table, concepts = HierarchyEdge._meta.db_table, Concept._meta.db_table
    try:
        with connection.cursor() as cursor:
            # Every edge once (an AUI-level source repeats a CUI pair for each pair of atoms; PAR and CHD state each
            # edge twice), never from a concept to itself (two atoms of one concept, a merged source concept).
            cursor.execute(
                f"""INSERT INTO {table} (version_id, child_id, parent_id, relation)
                    SELECT DISTINCT %(version)s, c.id, p.id, %(relation)s FROM umls_stage_edge e
                    JOIN {concepts} c ON c.version_id = %(version)s AND c.concept_id = e.child
                    JOIN {concepts} p ON p.version_id = %(version)s AND p.concept_id = e.parent
                    WHERE c.id <> p.id""", params)
            writer.report.edges = cursor.rowcount
            cursor.execute(
                f"""SELECT count(*) FROM umls_stage_edge e WHERE e.parent IS NULL
                   OR NOT EXISTS (SELECT 1 FROM {concepts} c WHERE c.version_id = %(version)s AND c.concept_id = e.child)
                   OR NOT EXISTS (SELECT 1 FROM {concepts} p WHERE p.version_id = %(version)s AND p.concept_id = e.parent)""",
                params)
            skipped = cursor.fetchone()[0]
            cursor.execute(f"SELECT child_id, parent_id FROM {table} WHERE version_id = %(version)s", params)
            edges = cursor.fetchall()
    except DatabaseError as exc:
        raise ValueError(f"{umls.where(MRHIER if use_mrhier else MRREL)}: the database refused the hierarchy: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc
    if skipped:
        writer.report.warnings.append(f"skipped {skipped} {source} naming a concept without a name after the filters "
                                      f"({_described(keep)})")
    writer.warn_cycles(edges)
