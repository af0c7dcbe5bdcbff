"""Import a PubTator file (documents with gold mentions) into a collection, resolving gold ids to concepts.

Why it is written this way:

- One transaction per file: a malformed line refuses the whole file, with the file and line named, and the
  database is left as it was.
- Documents whose ``external_id`` is already in the collection are **skipped with a warning**, not updated
  and not refused. Importing the same file twice is therefore a no-op, and a second file can add its new
  documents to a collection that shares some abstracts with it; stored documents (and the curation done on
  them) are never overwritten by a re-import.
- A PMID repeated inside one file (the NCBI Disease training set repeats 8528200, and its published count
  of 5,145 mentions includes both copies) is kept as its own document ``8528200#2`` with
  ``metadata["repeat_of"]``, so the corpus counts match the literature and nothing is silently dropped.
- Gold ids are kept as written (``Link.concept_ref``) and resolved to Concepts of the dictionary's latest
  version when possible. Sources spell ids differently (NCBI ``D012345`` / ``OMIM:123456``, CTD
  ``MESH:D012345``, the DNorm release bare OMIM numbers), so each id is tried in those spellings, against
  primary ids first and alternative ids second.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import DatabaseError, transaction

from linker.data import GoldMention, ParseError, PubTatorDocument, iter_pubtator, open_text
from webapp.corpus.models import Collection, Document, Link, Mention
from webapp.vocab.importers import Progress, max_length
from webapp.vocab.models import Dictionary, DictionaryVersion

__all__ = ["ImportReport", "ConceptResolver", "id_variants", "import_pubtator"]

DOCUMENT_BATCH = 500
_REF_MAX = max_length(Link, "concept_ref")
_EXTERNAL_ID_MAX = max_length(Document, "external_id")
_TYPE_MAX = max_length(Mention, "mention_type")


@dataclass
class ImportReport:
    """What a document import did; ``created`` is False when every document was already there."""

    collection_id: int
    documents: int = 0  # documents created
    skipped_documents: int = 0  # already in the collection
    repeated_documents: int = 0  # PMIDs repeated inside the file, stored as "PMID#2"
    mentions: int = 0
    links: int = 0
    resolved_links: int = 0  # links whose concept was found in the dictionary
    unresolved_links: int = 0  # an id was given but no concept matched (kept in concept_ref)
    nil_links: int = 0  # "-1" or no id
    dictionary_version_id: int | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    created: bool = True
    message: str = ""


def import_pubtator(
    path: str | Path,
    *,
    collection_slug: str,
    title: str | None = None,
    dictionary_slug: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the documents and gold mentions of a PubTator file into ``collection_slug`` (created if new).

    With ``dictionary_slug``, gold ids are resolved to Concepts of that dictionary's latest version and the
    collection is linked to the dictionary. ``progress`` is called with (documents read, estimated total).

    Raises :class:`linker.data.ParseError` (``path:line: message``) for a malformed file,
    ``FileNotFoundError`` for a missing one and ``ValueError`` for bad arguments (an unknown dictionary, a
    dictionary without versions); the database is then exactly as it was before the call.
    """
    started = time.perf_counter()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        validate_slug(collection_slug)
    except ValidationError:
        raise ValueError(f"collection slug {collection_slug!r} must be letters, digits, '-' or '_'") from None
    dictionary, version = dictionary_version_for(dictionary_slug)
    resolver = ConceptResolver.for_version(version) if version else None
    total = _estimate_documents(path) if progress else None

    with transaction.atomic():
        collection = locked_collection(collection_slug, title, dictionary)
        report = ImportReport(collection_id=collection.pk, dictionary_version_id=version.pk if version else None)
        if dictionary and collection.dictionary_id not in (None, dictionary.pk):
            report.warnings.append(
                f"collection {collection.slug} is linked to dictionary {collection.dictionary}; "
                f"gold ids of this file were resolved against {dictionary.slug}"
            )
        writer = _DocumentWriter(collection, path, resolver, report)
        read = 0
        for batch in _batched_documents(iter_pubtator(path), DOCUMENT_BATCH):
            writer.add(batch)
            read += len(batch)
            if progress:
                progress(read, max(total or 0, read) or None)
        writer.summarise()
        if report.mentions and not collection.has_gold:
            collection.has_gold = True
            collection.save(update_fields=["has_gold"])

    report.created = report.documents > 0
    report.seconds = round(time.perf_counter() - started, 3)
    report.message = (
        f"imported {report.documents} documents ({report.skipped_documents} already there), "
        f"{report.mentions} mentions, {report.links} gold links ({report.resolved_links} resolved, "
        f"{report.unresolved_links} unresolved, {report.nil_links} NIL) into {collection.slug} "
        f"in {report.seconds:.1f} s"
    )
    return report


# --- id resolution ----------------------------------------------------------------------------------


def id_variants(raw: str) -> list[str]:
    """Spellings of one id across the sources, as written first: ``D012345`` <-> ``MESH:D012345``,
    ``OMIM:123456`` <-> ``123456``."""
    raw = raw.strip()
    out = [raw]
    upper = raw.upper()
    if raw.isdigit():
        out.append(f"OMIM:{raw}")
    elif upper.startswith(("MESH:", "OMIM:")):
        out.append(raw[5:])
    elif raw[:1] in ("C", "D") and raw[1:].isdigit():
        out.append(f"MESH:{raw}")
    return out


class ConceptResolver:
    """Maps an id as a corpus writes it to the pk of a Concept of one dictionary version."""

    def __init__(self, primary: dict[str, int], alternative: dict[str, int]) -> None:
        self.primary = primary
        self.alternative = alternative

    @classmethod
    def for_version(cls, version: DictionaryVersion) -> ConceptResolver:
        primary: dict[str, int] = {}
        alternative: dict[str, int] = {}
        for pk, concept_id, alt_ids in version.concepts.values_list("pk", "concept_id", "alt_ids").iterator(2000):
            primary[concept_id] = pk
            for alt in alt_ids:
                # An alt id shared by several concepts (merged MeSH headings) resolves to the first one seen.
                alternative.setdefault(alt, pk)
        return cls(primary, alternative)

    def resolve(self, raw: str) -> int | None:
        variants = id_variants(raw)
        for table in (self.primary, self.alternative):
            for variant in variants:
                pk = table.get(variant)
                if pk is not None:
                    return pk
        return None


# --- the writer -------------------------------------------------------------------------------------


class _DocumentWriter:
    """Writes documents, then their mentions, then the mentions' gold links, one batch of documents at a time."""

    def __init__(
        self, collection: Collection, path: Path, resolver: ConceptResolver | None, report: ImportReport
    ) -> None:
        self.collection = collection
        self.path = path
        self.resolver = resolver
        self.report = report
        self.existing = set(collection.documents.values_list("external_id", flat=True))
        self.skipped: list[str] = []
        self.unresolved: dict[str, None] = {}
        self.unresolved_by_type: Counter[str] = Counter()
        self.conjunctions = 0

    def add(self, batch: Sequence[PubTatorDocument]) -> None:
        docs = [d for d in batch if self._keep(d)]
        if not docs:
            return
        first, last = batch[0].line, batch[-1].line
        try:
            documents = Document.objects.bulk_create([self._document(d) for d in docs])
            mentions: list[Mention] = []
            golds: list[GoldMention] = []
            for doc, document in zip(docs, documents, strict=True):
                for gold in self._unique_mentions(doc):
                    mentions.append(self._mention(document, gold))
                    golds.append(gold)
            Mention.objects.bulk_create(mentions, batch_size=2000)
            links = [link for mention, gold in zip(mentions, golds, strict=True) for link in self._links(mention, gold)]
            Link.objects.bulk_create(links, batch_size=2000)
        except DatabaseError as exc:
            raise ParseError(self.path, first, f"the database refused a document of lines {first}-{last}: {exc}") from exc
        self.report.documents += len(documents)
        self.report.mentions += len(mentions)
        self.report.links += len(links)

    def summarise(self) -> None:
        if self.skipped:
            self.report.warnings.append(
                f"{len(self.skipped)} documents already in collection {self.collection.slug} were skipped, "
                f"not updated (e.g. {', '.join(self.skipped[:5])})"
            )
        if self.unresolved:
            by_type = ", ".join(f"{t or 'untyped'} {n}" for t, n in self.unresolved_by_type.most_common())
            self.report.warnings.append(
                f"{sum(self.unresolved_by_type.values())} gold links ({by_type}) name {len(self.unresolved)} ids "
                f"the dictionary lacks; kept as written in concept_ref (e.g. {', '.join(list(self.unresolved)[:5])})"
            )
        if self.conjunctions:
            self.report.warnings.append(
                f"{self.conjunctions} gold links name several concepts joined by '+'; kept in concept_ref "
                "without a concept, since a link points to one concept"
            )

    # --- rows ---

    def _keep(self, doc: PubTatorDocument) -> bool:
        external_id = _external_id(doc)
        if len(external_id) > _EXTERNAL_ID_MAX:
            raise ParseError(self.path, doc.line, f"document id {external_id[:40]!r}... is longer than {_EXTERNAL_ID_MAX}")
        if external_id in self.existing:
            self.report.skipped_documents += 1
            self.skipped.append(external_id)
            return False
        self.existing.add(external_id)
        if doc.occurrence > 1:
            self.report.repeated_documents += 1
            self.report.warnings.append(
                f"{self.path}:{doc.line}: PMID {doc.pmid} appears again in the file (copy {doc.occurrence}); "
                f"stored as its own document {external_id}"
            )
        return True

    def _document(self, doc: PubTatorDocument) -> Document:
        metadata: dict[str, object] = {"source": self.path.name, "line": doc.line}
        if doc.occurrence > 1:
            metadata["repeat_of"] = doc.pmid
        if doc.relations:
            metadata["relations"] = [list(r) for r in doc.relations]
        return Document(
            collection=self.collection,
            external_id=_external_id(doc),
            title=doc.title,
            text=doc.text,
            metadata=metadata,
        )

    def _unique_mentions(self, doc: PubTatorDocument) -> Iterator[GoldMention]:
        """The document's mentions, each (span, type) once: the database allows one; a repeat is a warning."""
        seen: set[tuple[int, int, str]] = set()
        for gold in doc.mentions:
            key = (gold.start, gold.end, gold.mention_type)
            if len(gold.mention_type) > _TYPE_MAX:
                raise ParseError(self.path, doc.line, f"mention type {gold.mention_type[:40]!r}... is longer than {_TYPE_MAX}")
            long_refs = ["+".join(ids) for ids in gold.parts if len("+".join(ids)) > _REF_MAX]
            if long_refs:
                raise ParseError(self.path, doc.line, f"id {long_refs[0][:40]!r}... is longer than {_REF_MAX}")
            if key in seen:
                self.report.warnings.append(
                    f"{self.path}:{doc.line}: document {doc.pmid} annotates {gold.start}-{gold.end} "
                    f"{gold.mention_type} twice; the repeat was left out"
                )
                continue
            seen.add(key)
            yield gold

    def _mention(self, document: Document, gold: GoldMention) -> Mention:
        return Mention(
            document=document,
            start=gold.start,
            end=gold.end,
            text=gold.text,  # the document's own characters, which the span trigger compares against
            mention_type=gold.mention_type,
            status=Mention.Status.PENDING,
            source=Mention.Source.GOLD,
            part_texts=list(gold.part_texts),
        )

    def _links(self, mention: Mention, gold: GoldMention) -> Iterator[Link]:
        """One gold link per composite part; a part of several ids ("A+B") keeps them joined in concept_ref
        and resolves only when it names a single concept, since a link points to one concept."""
        if not gold.parts:
            self.report.nil_links += 1
            yield Link(mention=mention, part=0, nil=True, concept_ref="", origin=Link.Origin.GOLD)
            return
        for index, ids in enumerate(gold.parts):
            ref = "+".join(ids)
            concept = self.resolver.resolve(ids[0]) if self.resolver and len(ids) == 1 else None
            if concept is not None:
                self.report.resolved_links += 1
            else:
                self.report.unresolved_links += 1
                self._note_unresolved(ids, gold.mention_type)
            yield Link(mention=mention, part=index, concept_id=concept, concept_ref=ref, origin=Link.Origin.GOLD)

    def _note_unresolved(self, ids: tuple[str, ...], mention_type: str) -> None:
        if self.resolver is None:
            return  # nothing to resolve against: not worth a warning
        if len(ids) > 1:
            self.conjunctions += 1
        else:
            self.unresolved.setdefault(ids[0], None)
            self.unresolved_by_type[mention_type] += 1


# --- helpers ----------------------------------------------------------------------------------------


def _external_id(doc: PubTatorDocument) -> str:
    return doc.pmid if doc.occurrence == 1 else f"{doc.pmid}#{doc.occurrence}"


def dictionary_version_for(slug: str | None) -> tuple[Dictionary | None, DictionaryVersion | None]:
    if not slug:
        return None, None
    dictionary = Dictionary.objects.filter(slug=slug).first()
    if dictionary is None:
        raise ValueError(f"no dictionary {slug!r}; import it first (manage.py import_dictionary PATH --slug {slug})")
    version = dictionary.latest_version()
    if version is None:
        raise ValueError(f"dictionary {slug!r} has no imported version to resolve gold ids against")
    return dictionary, version


def locked_collection(slug: str, title: str | None, dictionary: Dictionary | None) -> Collection:
    """The collection row, created if new and locked until commit, so two imports into it run one at a time."""
    defaults = {"title": title or slug, "dictionary": dictionary}
    collection, created = Collection.objects.get_or_create(slug=slug, defaults=defaults)
    collection = Collection.objects.select_for_update().get(pk=collection.pk)
    changed = []
    if title and not created and collection.title != title:
        collection.title = title
        changed.append("title")
    if dictionary and collection.dictionary_id is None:
        collection.dictionary = dictionary
        changed.append("dictionary")
    if changed:
        collection.save(update_fields=changed)
    return collection


def _estimate_documents(path: Path) -> int | None:
    """Title lines in the file, for a progress bar."""
    try:
        with open_text(path) as fh:
            return sum(1 for line in fh if "|t|" in line[:40])
    except (OSError, UnicodeDecodeError, EOFError):
        return None  # the reader will report where the file is broken


def _batched_documents(docs: Iterator[PubTatorDocument], size: int) -> Iterator[list[PubTatorDocument]]:
    batch: list[PubTatorDocument] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
