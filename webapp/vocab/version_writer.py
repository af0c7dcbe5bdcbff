"""Writes the concepts, names, hierarchy and known types of one new DictionaryVersion, batch by batch.

Rows go in through :func:`webapp.vocab.copy.copy_rows`; concept ids, which COPY does not return, are read
back once per batch for the names of that batch. Names are normalised with :func:`linker.text.normalize`,
the very function the linker applies to mentions, so that database search and model retrieval agree on
what a "normalised" name is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection
from django.utils import timezone

from linker.data import ConceptRecord, ParseError, Synonym
from linker.text import normalize
from linker.textfiles import open_text
from webapp.vocab.copy import copy_rows, max_length
from webapp.vocab.hierarchy import hierarchy_cycles
from webapp.vocab.models import (
    Concept,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)

__all__ = ["ImportReport", "VersionWriter", "MEDIC_SLIM_VOCABULARY", "IS_A"]

MEDIC_SLIM_VOCABULARY = "MEDIC slim mappings"
IS_A = "is_a"

# Column widths of the models, checked before writing so that a too-long id is reported with its line
# instead of as a database error about some row of a 5,000-row batch.
_ID_MAX = max_length(Concept, "concept_id")
_TYPE_MAX = max_length(KnownType, "code")
# A name and its normalised form are keys of B-tree indexes (unique per concept; search by normalised name),
# whose entries PostgreSQL caps at 2,704 bytes: a longer name (a column shifted into the synonyms, a file
# cut mid-line) would fail a whole batch with "index row size ... exceeds maximum". No real name comes near.
MAX_NAME_BYTES = 2000
# NFKC turns a character into at most 18 (U+FDFA: 3 bytes into 36), so a name this short cannot normalise past it.
_NORMALISE_ABOVE = MAX_NAME_BYTES // 18


@dataclass
class ImportReport:
    """What an import did; ``created`` is False when the file or release was already there."""

    version_id: int
    release: str
    source_format: str
    concepts: int = 0
    names: int = 0
    edges: int = 0
    known_types: int = 0  # distinct known types the imported concepts carry
    known_type_assignments: int = 0  # (concept, known type) pairs
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    created: bool = True
    message: str = ""


class VersionWriter:
    """Writes the concepts of one version batch by batch; edges and known types once every id is known.

    Parents may come later in the file than their children (MEDIC is sorted by name, OBO by id), so edges
    are kept as (child pk, parent id) until the end, then resolved against every concept of the version.
    """

    def __init__(self, version: DictionaryVersion, path: Path, fmt: str, keep_ids: bool = True) -> None:
        self.version = version
        # Every concept id -> pk, for the edges resolved at the end; an importer that resolves its edges in SQL
        # (UMLS: millions of concepts) keeps none.
        self.keep_ids = keep_ids
        self.path = path
        self.fmt = fmt
        self.now = timezone.now()
        self.pk_by_id: dict[str, int] = {}
        self.pending_edges: list[tuple[int, str]] = []
        self.pending_types: list[tuple[int, str]] = []
        self.report = ImportReport(version_id=version.pk, release=version.release, source_format=fmt)

    def add_concepts(self, records: Sequence[ConceptRecord]) -> None:
        for record in records:
            self._validate(record)
        first, last = records[0].line, records[-1].line
        try:
            copy_rows(
                Concept,
                ["version", "concept_id", "alt_ids", "preferred_name", "definition", "obsolete"],
                (
                    (self.version.pk, r.concept_id, list(r.alt_ids), r.preferred_name, r.definition, r.obsolete)
                    for r in records
                ),
            )
            pks = self._concept_pks([r.concept_id for r in records])
            self.report.names += copy_rows(
                Name,
                ["concept", "text", "normalized", "source", "scope", "is_preferred", "created_at"],
                self._name_rows(records, pks),
            )
        except DatabaseError as exc:
            raise ParseError(self.path, first, f"the database refused a record of lines {first}-{last}: {_reason(exc)}") from exc
        if self.keep_ids:
            self.pk_by_id.update(pks)
        for record in records:
            pk = pks[record.concept_id]
            self.pending_edges.extend((pk, parent) for parent in dict.fromkeys(record.parents))
            self.pending_types.extend((pk, code) for code in dict.fromkeys(record.known_types))
        self.report.concepts += len(records)

    def _concept_pks(self, concept_ids: list[str]) -> dict[str, int]:
        # COPY returns no ids; one query with the batch's ids as a single array parameter fetches them
        # (an IN list of 5,000 placeholders would cost more to bind than the COPY itself).
        table = connection.ops.quote_name(Concept._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT concept_id, id FROM {table} WHERE version_id = %s AND concept_id = ANY(%s)",
                [self.version.pk, concept_ids],
            )
            return dict(cursor.fetchall())

    def finish(self) -> None:
        try:
            self._write_edges()
            self._write_known_types()
        except DatabaseError as exc:
            # Rows here come from records already validated and written; no single line is to blame.
            raise ValueError(f"{self.path}: the database refused the hierarchy or the known types: {_reason(exc)}") from exc

    # --- rows ---

    def _validate(self, record: ConceptRecord) -> None:
        # PostgreSQL stores no NUL character: named with its line, not as a database error about a batch.
        for name in ("concept_id", "preferred_name", "synonyms", "alt_ids", "definition", "parents", "known_types"):
            value = getattr(record, name)
            texts = [s.text if isinstance(s, Synonym) else s for s in value] if isinstance(value, tuple) else [value]
            if any("\x00" in t for t in texts):
                concept = record.concept_id.replace("\x00", "\\x00")  # the message is stored too
                raise ParseError(self.path, record.line, f"concept {concept}: field {name!r} contains a NUL character")
        too_long = [i for i in (record.concept_id, *record.alt_ids, *record.parents) if len(i) > _ID_MAX]
        if too_long:
            raise ParseError(self.path, record.line, f"id {too_long[0][:40]!r}... is longer than {_ID_MAX} characters")
        long_type = [t for t in record.known_types if len(t) > _TYPE_MAX]
        if long_type:
            raise ParseError(self.path, record.line, f"known type {long_type[0][:40]!r}... is longer than {_TYPE_MAX} characters")
        for name, candidates in (("preferred_name", (record.preferred_name,)), ("synonyms", tuple(s.text for s in record.synonyms))):
            for text in candidates:
                size = len(text.encode())
                if size > _NORMALISE_ABOVE:
                    size = max(size, len(normalize(text).encode()))
                if size > MAX_NAME_BYTES:
                    raise ParseError(
                        self.path,
                        record.line,
                        f"concept {record.concept_id}: field {name!r} holds a name of {len(text):,} characters "
                        f"({text[:40]!r}...), longer than a name may be ({MAX_NAME_BYTES:,} bytes of UTF-8)",
                    )

    def _name_rows(self, records: Sequence[ConceptRecord], pks: dict[str, int]) -> Iterator[tuple[Any, ...]]:
        source = Name.Source.DICTIONARY.value
        for record in records:
            pk = pks[record.concept_id]
            for text, scope, preferred in _names_of(record, self.fmt):
                yield (pk, text, normalize(text), source, scope, preferred, self.now)

    def _write_edges(self) -> None:
        rows: dict[tuple[int, int], None] = {}
        missing: dict[str, None] = {}
        skipped = loops = 0
        for child, parent_id in self.pending_edges:
            parent = self.pk_by_id.get(parent_id)
            if parent is None:
                skipped += 1
                missing.setdefault(parent_id, None)
            elif parent == child:
                loops += 1  # a term listed as its own parent: the table refuses self-loops
            else:
                rows.setdefault((child, parent), None)
        self.report.edges = copy_rows(
            HierarchyEdge,
            ["version", "child", "parent", "relation"],
            ((self.version.pk, child, parent, IS_A) for child, parent in rows),
        )
        if skipped:
            examples = ", ".join(list(missing)[:5])
            self.report.warnings.append(
                f"skipped {skipped} {IS_A} edges to {len(missing)} terms that are obsolete or absent from the file "
                f"(e.g. {examples})"
            )
        if loops:
            self.report.warnings.append(f"skipped {loops} {IS_A} edges from a term to itself")
        self.warn_cycles(list(rows))

    def warn_cycles(self, edges: list[tuple[int, int]]) -> None:
        """A cycle (A is_a B is_a A) is kept as written, since walks up the hierarchy stop where they repeat, but
        it is an error of the ontology a curator should hear about: it makes A and B each other's ancestors."""
        cycles = hierarchy_cycles(edges)
        if not cycles:
            return
        members = {pk for cycle in cycles for pk in cycle}
        concept_id = {pk: cid for cid, pk in self.pk_by_id.items() if pk in members}
        if len(concept_id) < len(members):  # ids not kept in memory (keep_ids=False): read the few needed
            concept_id.update(Concept.objects.filter(pk__in=members - concept_id.keys()).values_list("pk", "concept_id"))
        examples = sorted(" -> ".join(concept_id[pk] for pk in cycle) for cycle in cycles)
        shown = "; ".join(examples[:3]) + ("; ..." if len(examples) > 3 else "")
        self.report.warnings.append(
            f"the {IS_A} hierarchy has {len(cycles)} cycle{'s' if len(cycles) > 1 else ''}, terms that are their own "
            f"ancestors ({shown}); the edges were kept as written"
        )

    def _write_known_types(self) -> None:
        if not self.pending_types:
            return
        vocabulary = self._vocabulary()
        labels = _obo_subset_labels(self.path) if self.fmt == "obo" else {}
        codes = list(dict.fromkeys(code for _, code in self.pending_types))
        type_pk = dict(KnownType.objects.filter(vocabulary=vocabulary, code__in=codes).values_list("code", "pk"))
        new = [KnownType(vocabulary=vocabulary, code=c, label=labels.get(c, c)[:_TYPE_MAX]) for c in codes if c not in type_pk]
        KnownType.objects.bulk_create(new)
        type_pk.update({t.code: t.pk for t in new})
        through = Concept.known_types.through
        self.report.known_type_assignments = copy_rows(
            through, ["concept", "knowntype"], ((concept, type_pk[code]) for concept, code in self.pending_types)
        )
        self.report.known_types = len(codes)

    def _vocabulary(self) -> KnownTypeVocabulary:
        # MEDIC's slim mappings are one vocabulary whatever the slug, so every MEDIC release shares its types;
        # OBO subsets are the ontology's own, named after the dictionary ("hpo" -> "HPO subsets").
        if self.fmt == "obo":
            name = f"{self.version.dictionary.slug.upper()} subsets"
            description = f"OBO subsets of {self.version.dictionary}"
        else:
            name = MEDIC_SLIM_VOCABULARY
            description = "CTD MEDIC SlimMappings: coarse disease categories such as 'Cardiovascular disease'."
        vocabulary, _ = KnownTypeVocabulary.objects.get_or_create(name=name, defaults={"description": description})
        return vocabulary


def _reason(exc: DatabaseError) -> str:
    """PostgreSQL's first line, which says what is wrong; the LINE/DETAIL/CONTEXT lines after it quote SQL and rows."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _names_of(record: ConceptRecord, fmt: str) -> Iterator[tuple[str, str, bool]]:
    """(text, scope, is_preferred): the preferred name, then each synonym whose exact text is new.

    Exact duplicates within a concept are dropped (the first wins, so the preferred name keeps its flag);
    names differing in case are kept, since they are different strings a curator may want to see. Only OBO
    knows synonym scopes; other formats leave the scope blank rather than claim EXACT.
    """
    seen = {record.preferred_name}
    yield record.preferred_name, "", True
    for synonym in record.synonyms:
        if synonym.text and synonym.text not in seen:
            seen.add(synonym.text)
            yield synonym.text, synonym.scope if fmt == "obo" else "", False


_SUBSETDEF = re.compile(r'^subsetdef:\s*(\S+)\s+"((?:[^"\\]|\\.)*)"')


def _obo_subset_labels(path: Path) -> dict[str, str]:
    """``subsetdef: hposlim_core "Core clinical terminology"`` header lines -> {code: description}."""
    labels: dict[str, str] = {}
    with open_text(path) as fh:
        for line in fh:
            if line.startswith("["):
                break
            match = _SUBSETDEF.match(line)
            if match:
                labels[match.group(1)] = match.group(2).replace('\\"', '"') or match.group(1)
    return labels
