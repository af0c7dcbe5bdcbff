"""What every dictionary importer shares (the formats' own importers and :mod:`webapp.vocab.umls`): the dictionary
row locked for the import, the release already imported, and fresh planner statistics after it."""

from __future__ import annotations

import time

from django.contrib.postgres.indexes import GinIndex
from django.db import connection, models

from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, KnownType, Name, Term
from webapp.vocab.version_writer import ImportReport

__all__ = ["analyze_vocab", "locked_dictionary", "existing_version", "report_existing"]


# The GIN indexes an import fills, as the models declare them: concept search reads them all.
GIN_INDEXES = tuple(index.name for model in (Concept, Name, Term) for index in model._meta.indexes
                    if isinstance(index, GinIndex))


def analyze_vocab() -> None:
    """Fresh statistics for the planner, and the GIN indexes' pending lists merged, after an import.

    Statistics: right after a large import PostgreSQL would otherwise pick a sequential scan over the trigram index
    for concept search (seen: 535 ms instead of 20-60 ms), and a parallel bitmap scan of every known-type row for the
    panel's ten candidates (13 ms instead of 1 at 3M names).
    Pending lists: a GIN index takes new rows into an unsorted pending list, which every search through the index
    reads from end to end until a vacuum merges it; with autovacuum off, or before it comes round, that was 6.7 ms
    instead of 0.07 for one concept-id lookup after importing CTD MEDIC, and concept search, 20-40 such lookups a
    query, answered in p95 148-164 ms instead of 92-95 for whole names and typos (bench/RESULTS.md).
    """
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE vocab_name; ANALYZE vocab_concept; ANALYZE vocab_hierarchyedge; "
                       "ANALYZE vocab_concept_known_types; ANALYZE vocab_knowntype; ANALYZE vocab_term")
        cursor.execute("SELECT " + ", ".join(f"gin_clean_pending_list('{name}'::regclass)" for name in GIN_INDEXES))


def locked_dictionary(slug: str, title: str | None) -> Dictionary:
    """The dictionary row, created if new and locked until commit, so two imports into it run one at a time."""
    dictionary, created = Dictionary.objects.get_or_create(slug=slug, defaults={"title": title or slug.upper()})
    dictionary = Dictionary.objects.select_for_update().get(pk=dictionary.pk)
    if title and not created and dictionary.title != title:
        dictionary.title = title
        dictionary.save(update_fields=["title"])
    return dictionary


def existing_version(dictionary: Dictionary, release: str, checksum: str) -> DictionaryVersion | None:
    return (
        dictionary.versions.filter(models.Q(checksum=checksum) | models.Q(release=release))
        .order_by("-imported_at")
        .first()
    )


def report_existing(version: DictionaryVersion, checksum: str, started: float) -> ImportReport:
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
