"""Gold ids as corpora write them, resolved to Concepts of one dictionary version.

Sources spell ids differently (NCBI ``D012345`` / ``OMIM:123456``, CTD ``MESH:D012345``, the DNorm release
bare OMIM numbers), so each id is tried in those spellings, against primary ids first and alternative ids
second. An id that resolves to nothing is still kept as written (``Link.concept_ref``) by the importers.
"""

from __future__ import annotations

from webapp.vocab.models import Dictionary, DictionaryVersion

__all__ = ["ConceptResolver", "id_variants", "dictionary_version_for"]


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


def dictionary_version_for(slug: str | None) -> tuple[Dictionary | None, DictionaryVersion | None]:
    """The dictionary and its latest version, to resolve gold ids against; (None, None) without a slug."""
    if not slug:
        return None, None
    dictionary = Dictionary.objects.filter(slug=slug).first()
    if dictionary is None:
        raise ValueError(f"no dictionary {slug!r}; import it first (manage.py import_dictionary PATH --slug {slug})")
    version = dictionary.latest_version()
    if version is None:
        raise ValueError(f"dictionary {slug!r} has no imported version to resolve gold ids against")
    return dictionary, version
