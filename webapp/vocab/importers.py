"""Import a dictionary release (MEDIC TSV, DNorm/BioSyn text, OBO) as one new DictionaryVersion.

Why it is written this way:

- One transaction per file. A file that fails to parse half-way (a truncated download, a garbled line) leaves
  nothing behind, not even the Dictionary row, and the error names the file and the line.
- The file is streamed through the :mod:`linker.data` readers and written in batches, so memory stays flat
  and the full CTD MEDIC file (12K concepts, 78K names, 20K edges) imports in seconds. Rows go in through
  PostgreSQL ``COPY`` (psycopg 3 ``cursor.copy``): ``bulk_create`` spent more time binding 70K parameters
  client-side than the server spent storing the rows. Concept ids, which COPY does not return, are read
  back once per batch for the names of that batch.
- A release is identified twice: by the SHA-256 of the file and by its label. Importing the same file or the
  same release again returns the existing version (``created=False``) instead of duplicating 80K names.
- Names are normalised with :func:`linker.text.normalize`, the very function the linker applies to mentions,
  so that database search and model retrieval agree on what a "normalised" name is.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone

from linker.data import (
    DICTIONARY_FORMATS,
    ConceptRecord,
    ParseError,
    iter_dictionary,
    open_text,
    read_release,
    sniff_dictionary_format,
)
from linker.text import normalize
from webapp.vocab.models import (
    Concept,
    Dictionary,
    DictionaryVersion,
    HierarchyEdge,
    KnownType,
    KnownTypeVocabulary,
    Name,
)

__all__ = [
    "ImportReport", "Progress", "BATCH_SIZE", "MEDIC_SLIM_VOCABULARY", "import_dictionary", "copy_rows", "max_length",
]

BATCH_SIZE = 5000
MEDIC_SLIM_VOCABULARY = "MEDIC slim mappings"
IS_A = "is_a"

Progress = Callable[[int, int | None], None]
T = TypeVar("T")

# Column widths of the models, checked before writing so that a too-long id is reported with its line
# instead of as a database error about some row of a 5,000-row batch.


def max_length(model: type[models.Model], field_name: str) -> int:
    """The declared max_length of a CharField, so checks here follow the model if it changes."""
    length = getattr(model._meta.get_field(field_name), "max_length", None)
    if not isinstance(length, int):
        raise TypeError(f"{model.__name__}.{field_name} has no max_length")
    return length


_ID_MAX = max_length(Concept, "concept_id")
_TYPE_MAX = max_length(KnownType, "code")


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


def import_dictionary(
    path: str | Path,
    *,
    dictionary_slug: str,
    title: str | None = None,
    fmt: str | None = None,
    release: str | None = None,
    include_obsolete: bool = False,
    user: Any = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import one dictionary file as a new version of the dictionary ``dictionary_slug`` (created if new).

    ``fmt`` is sniffed from the file when not given; ``release`` is read from the header (OBO data-version,
    MEDIC "Report created") and falls back to the file name plus the start of its checksum. ``progress`` is
    called with (concepts written, estimated total or None) after every batch.

    Raises :class:`linker.data.ParseError` (``path:line: message``) for a malformed file,
    ``FileNotFoundError`` for a missing one and ``ValueError`` for bad arguments; the database is then
    exactly as it was before the call.
    """
    started = time.perf_counter()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    _check_slug(dictionary_slug)
    fmt = fmt or sniff_dictionary_format(path)
    if fmt not in DICTIONARY_FORMATS:
        raise ValueError(f"unknown dictionary format {fmt!r}; expected one of {', '.join(DICTIONARY_FORMATS)}")
    checksum = file_sha256(path)
    label = (release or read_release(path) or f"{path.name} sha256:{checksum[:12]}")[:120]
    total = _estimate_records(path, fmt) if progress else None

    with transaction.atomic():
        dictionary = _locked_dictionary(dictionary_slug, title)
        existing = _existing_version(dictionary, label, checksum)
        if existing is not None:
            return _report_existing(existing, checksum, started)
        version = DictionaryVersion.objects.create(
            dictionary=dictionary,
            release=label,
            source_format=fmt,
            source_name=str(path)[:500],
            checksum=checksum,
            imported_by=user if getattr(user, "pk", None) else None,
        )
        writer = _VersionWriter(version, path, fmt)
        for batch in _batched(iter_dictionary(path, fmt, include_obsolete=include_obsolete), BATCH_SIZE):
            writer.add_concepts(batch)
            if progress:
                progress(writer.report.concepts, max(total or 0, writer.report.concepts) or None)
        writer.finish()
        version.concept_count = writer.report.concepts
        version.name_count = writer.report.names
        version.edge_count = writer.report.edges
        version.save(update_fields=["concept_count", "name_count", "edge_count"])

    # Fresh statistics for the planner: right after a large import PostgreSQL would otherwise pick a
    # sequential scan over the trigram index for concept search (seen: 535 ms instead of 20-60 ms).
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE vocab_name; ANALYZE vocab_concept; ANALYZE vocab_hierarchyedge")
    report = writer.report
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {dictionary.slug} release {label!r}: {report.concepts} concepts, {report.names} names, "
        f"{report.edges} edges, {report.known_types} known types in {report.seconds:.1f} s"
    )
    return report


# --- the writer -------------------------------------------------------------------------------------


class _VersionWriter:
    """Writes the concepts of one version batch by batch; edges and known types once every id is known.

    Parents may come later in the file than their children (MEDIC is sorted by name, OBO by id), so edges
    are kept as (child pk, parent id) until the end, then resolved against every concept of the version.
    """

    def __init__(self, version: DictionaryVersion, path: Path, fmt: str) -> None:
        self.version = version
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
            raise ParseError(self.path, first, f"the database refused a record of lines {first}-{last}: {exc}") from exc
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
            raise ValueError(f"{self.path}: the database refused the hierarchy or the known types: {exc}") from exc

    # --- rows ---

    def _validate(self, record: ConceptRecord) -> None:
        too_long = [i for i in (record.concept_id, *record.alt_ids, *record.parents) if len(i) > _ID_MAX]
        if too_long:
            raise ParseError(self.path, record.line, f"id {too_long[0][:40]!r}... is longer than {_ID_MAX} characters")
        long_type = [t for t in record.known_types if len(t) > _TYPE_MAX]
        if long_type:
            raise ParseError(self.path, record.line, f"known type {long_type[0][:40]!r}... is longer than {_TYPE_MAX} characters")

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


# --- database helpers -------------------------------------------------------------------------------


def copy_rows(model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Write rows into ``model``'s table with PostgreSQL COPY; returns the number of rows written.

    ``fields`` are model field names (``concept`` for a foreign key, written as its ``concept_id`` column).
    Columns left out take their database default (the identity id, NULL). Errors come back as Django's
    ``DatabaseError`` subclasses, as for any other query.
    """
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(_column(model, f)) for f in fields)
    count = 0
    with connection.wrap_database_errors, connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def _column(model: type[models.Model], field_name: str) -> str:
    field = model._meta.get_field(field_name)
    if not isinstance(field, models.Field) or not field.column:
        raise TypeError(f"{model.__name__}.{field_name} is not a concrete column")
    return field.column


def _locked_dictionary(slug: str, title: str | None) -> Dictionary:
    """The dictionary row, created if new and locked until commit, so two imports into it run one at a time."""
    dictionary, created = Dictionary.objects.get_or_create(slug=slug, defaults={"title": title or slug.upper()})
    dictionary = Dictionary.objects.select_for_update().get(pk=dictionary.pk)
    if title and not created and dictionary.title != title:
        dictionary.title = title
        dictionary.save(update_fields=["title"])
    return dictionary


def _existing_version(dictionary: Dictionary, release: str, checksum: str) -> DictionaryVersion | None:
    return (
        dictionary.versions.filter(models.Q(checksum=checksum) | models.Q(release=release))
        .order_by("-imported_at")
        .first()
    )


def _report_existing(version: DictionaryVersion, checksum: str, started: float) -> ImportReport:
    same_file = version.checksum == checksum
    why = "this file (same SHA-256)" if same_file else f"release {version.release!r} (from another file)"
    message = (
        f"{version.dictionary.slug} already has {why} as version {version.pk}, imported "
        f"{version.imported_at:%Y-%m-%d %H:%M} from {version.source_name}; nothing imported"
    )
    known = KnownType.objects.filter(concepts__version=version)
    return ImportReport(
        version_id=version.pk,
        release=version.release,
        source_format=version.source_format,
        concepts=version.concept_count,
        names=version.name_count,
        edges=version.edge_count,
        known_types=known.distinct().count(),
        known_type_assignments=known.count(),
        warnings=[message],
        seconds=round(time.perf_counter() - started, 3),
        created=False,
        message=message,
    )


# --- file helpers -----------------------------------------------------------------------------------


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_slug(slug: str) -> None:
    try:
        validate_slug(slug)
    except ValidationError:
        raise ValueError(f"dictionary slug {slug!r} must be letters, digits, '-' or '_'") from None
    if len(slug) > 64:
        raise ValueError(f"dictionary slug {slug!r} is longer than 64 characters")


def _estimate_records(path: Path, fmt: str) -> int | None:
    """Records in the file, for a progress bar: a cheap line count, never a parse (that is the import's job)."""
    count = 0
    try:
        with open_text(path) as fh:
            for line in fh:
                if fmt == "obo":
                    count += line.startswith("[Term]")
                else:
                    count += bool(line.strip()) and not line.startswith("#")
    except (OSError, UnicodeDecodeError, EOFError):
        return None  # the reader will report where the file is broken
    return count


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


def _batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
