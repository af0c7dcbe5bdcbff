"""One spelling of concept ids per export: the dictionary's (the default) or the source file's.

A gold link keeps its id as the corpus wrote it (``Link.concept_ref``: NCBI's ``D001943``) beside the concept it
resolved to (the dictionary's ``MESH:D001943``); curator links carry the concept's own id. Written as stored, one
export would name one concept two ways, and a scorer would count two concepts. So every id of an export is written
in one form:

- ``dictionary``: the concept's id where the link has a concept; an id that resolved to none on import is looked up
  again in the dictionary's latest release (primary ids, then alternative ids, in the spellings of
  :func:`~webapp.corpus.resolver.id_variants`), else respelled the way the dictionary spells ids (``D012345`` ->
  ``MESH:D012345`` where its ids carry ``MESH:``), else kept as written;
- ``source``: a gold link's id as the file wrote it; any other link's concept id respelled the way the collection's
  gold ids are spelled (``MESH:D001943`` -> ``D001943`` where the file wrote MeSH ids bare), else as it is.

A part naming several concepts (``D1+D2``) is spelled piece by piece; composite parts (``D1|D2``) are links of their
own, each spelled alike. Everything here is read once per export (or per batch of links), never per link.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from webapp.corpus.models import Collection, Link
from webapp.corpus.resolver import id_variants
from webapp.vocab.models import Concept, DictionaryVersion

__all__ = ["ID_FORMS", "IdSpeller", "check_id_form", "prefix_of", "respell"]

# The forms an export can write its ids in, the first the default, each said as the export page offers it.
ID_FORMS = {
    "dictionary": "as the collection's dictionary writes them (e.g. MESH:D001943)",
    "source": "as the imported file wrote them (e.g. D001943)",
}


def check_id_form(form: str) -> str:
    if form not in ID_FORMS:
        raise ValueError(f"unknown id form {form!r}; expected one of {', '.join(ID_FORMS)}")
    return form


def prefix_of(identifier: str) -> str:
    """``MESH:D001943`` -> ``MESH``; ``D001943`` -> ``""`` (a bare id)."""
    return identifier.split(":", 1)[0] if ":" in identifier else ""


def respell(raw: str, uses: Callable[[str], bool]) -> str:
    """Each ``+``-joined piece of ``raw`` in its first spelling (:func:`id_variants`, as written first) whose prefix
    ``uses`` accepts; a piece none fits is kept as written."""
    return "+".join(
        next((v for v in id_variants(piece) if uses(prefix_of(v))), piece) for piece in raw.split("+")
    )


class IdSpeller:
    """The ids of one export's links in one form, per collection (its dictionary, its gold ids' spelling)."""

    def __init__(self, form: str) -> None:
        self.form = check_id_form(form)
        self._versions: dict[int, int | None] = {}  # dictionary pk -> its latest release's pk
        self._found: dict[tuple[int, str], str] = {}  # (release pk, piece as written) -> the concept's id
        self._dictionary_prefixes: dict[tuple[int, str], bool] = {}  # (release pk, prefix) -> its ids use it
        self._source_prefixes: dict[int, set[str]] = {}  # collection pk -> the prefixes its gold ids use

    def prepare(self, links: Iterable[tuple[Link, Collection | None]]) -> None:
        """Look up the pieces of a batch's unresolved links, each with its collection (dictionary form): two queries
        a dictionary release."""
        if self.form != "dictionary":
            return
        wanted: dict[int, set[str]] = {}
        for link, collection in links:
            if link.nil or link.concept_id is not None or not link.concept_ref:
                continue
            version = self._version(collection)
            if version is not None:
                pieces = {p for p in link.concept_ref.split("+") if (version, p) not in self._found}
                wanted.setdefault(version, set()).update(pieces)
        for version, pieces in wanted.items():
            self._look_up(version, pieces)

    def concept_id(self, link: Link, collection: Collection | None) -> str:
        """The link's id in this export's form; "" for NIL."""
        if link.nil:
            return ""
        stored = link.concept.concept_id if link.concept is not None else ""
        if self.form == "source":
            if link.origin == Link.Origin.GOLD and link.concept_ref:
                return link.concept_ref
            raw = stored or link.concept_ref
            return respell(raw, self._source_uses(collection.pk)) if collection is not None else raw
        if stored:
            return stored
        version = self._version(collection)
        if version is None:
            return link.concept_ref
        return "+".join(
            self._found.get((version, piece))
            or respell(piece, lambda prefix: self._dictionary_has(version, prefix))
            for piece in link.concept_ref.split("+")
        )

    def label(self, label: str, collection: Collection | None) -> str:
        """An annotator's label in a span's adjudication (concept ids of the dictionary joined by ``+``, or NIL) in
        this export's form: respelled as the source spells ids, or as it is (the dictionary's already)."""
        if self.form != "source" or collection is None:
            return label
        return respell(label, self._source_uses(collection.pk))

    # --- what the dictionary and the source write ---

    def _version(self, collection: Collection | None) -> int | None:
        if collection is None or collection.dictionary_id is None:
            return None
        if collection.dictionary_id not in self._versions:
            latest = (
                DictionaryVersion.objects.filter(dictionary_id=collection.dictionary_id)
                .order_by("-imported_at")
                .first()
            )
            self._versions[collection.dictionary_id] = latest.pk if latest is not None else None
        return self._versions[collection.dictionary_id]

    def _look_up(self, version: int, pieces: set[str]) -> None:
        """Primary ids first, then alternative ids, in every spelling of each piece (as :class:`ConceptResolver`)."""
        variants = {piece: id_variants(piece) for piece in pieces}
        spellings = sorted({v for vs in variants.values() for v in vs})
        concepts = Concept.objects.filter(version_id=version)
        primary = set(concepts.filter(concept_id__in=spellings).values_list("concept_id", flat=True))
        alternative: dict[str, str] = {}
        rows = concepts.filter(alt_ids__overlap=spellings).order_by("pk").values_list("concept_id", "alt_ids")
        for concept_id, alt_ids in rows:
            for alt in alt_ids:
                alternative.setdefault(
                    alt, concept_id
                )  # an alt id of several concepts: the first, as on import
        for piece, spelled in variants.items():
            found = next((v for v in spelled if v in primary), None) or next(
                (alternative[v] for v in spelled if v in alternative), None
            )
            if found:
                self._found[(version, piece)] = found

    def _dictionary_has(self, version: int, prefix: str) -> bool:
        """Whether the release's ids use ``prefix`` ("": bare ids); one small query per prefix asked."""
        key = (version, prefix)
        if key not in self._dictionary_prefixes:
            concepts = Concept.objects.filter(version_id=version)
            found = (
                concepts.filter(concept_id__startswith=f"{prefix}:")
                if prefix
                else concepts.exclude(concept_id__contains=":")
            )
            self._dictionary_prefixes[key] = found.exists()
        return self._dictionary_prefixes[key]

    def _source_uses(self, collection_id: int) -> Callable[[str], bool]:
        """The prefixes the collection's gold ids are written with, read once per collection."""
        if collection_id not in self._source_prefixes:
            refs = (
                Link.objects.filter(
                    origin=Link.Origin.GOLD, nil=False, mention__document__collection_id=collection_id
                )
                .exclude(concept_ref="")
                .values_list("concept_ref", flat=True)
                .distinct()
            )
            self._source_prefixes[collection_id] = {
                prefix_of(piece) for ref in refs for piece in ref.split("+")
            }
        prefixes = self._source_prefixes[collection_id]
        return lambda prefix: prefix in prefixes
