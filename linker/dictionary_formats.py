"""Readers of the dictionary file formats, each yielding :class:`linker.records.ConceptRecord` (UMLS releases are
:mod:`linker.umls`'s; :func:`linker.data.iter_dictionary` picks the reader for a file):

- MEDIC TSV (``CTD_diseases.tsv[.gz]``): names, synonyms, alt ids, definitions, ParentIDs, SlimMappings.
- DNorm/BioSyn dictionary text (``medic_06Jul2012.txt``): ``ID[|ID...]||Name|Synonym...``.
- OBO 1.2/1.4 (HPO, DOID, OntoBiotope): names, synonyms with their scope, alt ids, is_a, obsolete flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from linker.records import ConceptRecord, ParseError, Synonym
from linker.textfiles import read_lines, split_bars

__all__ = ["iter_medic_tsv", "iter_dnorm_dictionary", "namespaced", "iter_obo", "MEDIC_COLUMNS"]

# --- MEDIC TSV -----------------------------------------------------------------------------------

MEDIC_COLUMNS = (
    "DiseaseName",
    "DiseaseID",
    "AltDiseaseIDs",
    "Definition",
    "ParentIDs",
    "TreeNumbers",
    "ParentTreeNumbers",
    "Synonyms",
    "SlimMappings",
)
_MEDIC_ID = re.compile(r"^(MESH|OMIM|DO):[A-Za-z0-9_:.-]+$")  # "MESH:C" is the root "Diseases"


def iter_medic_tsv(path: str | Path) -> Iterator[ConceptRecord]:
    """CTD's ``CTD_diseases.tsv[.gz]``: one concept a line after ``#`` comment lines."""
    seen: set[str] = set()
    for lineno, line in read_lines(path):
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) not in (len(MEDIC_COLUMNS), len(MEDIC_COLUMNS) - 1):
            raise ParseError(
                path, lineno, f"expected {len(MEDIC_COLUMNS)} tab-separated columns, found {len(cols)}"
            )
        cols += [""] * (len(MEDIC_COLUMNS) - len(cols))
        name, cid, alt, definition, parents, _tree, _ptree, synonyms, slims = (c.strip() for c in cols)
        if not name:
            raise ParseError(path, lineno, "empty DiseaseName")
        if not _MEDIC_ID.match(cid):
            raise ParseError(path, lineno, f"DiseaseID {cid!r} is not MESH:... or OMIM:...")
        if cid in seen:
            raise ParseError(path, lineno, f"DiseaseID {cid} appears twice")
        seen.add(cid)
        yield ConceptRecord(
            concept_id=cid,
            preferred_name=name,
            synonyms=tuple(Synonym(s) for s in split_bars(synonyms)),
            alt_ids=split_bars(alt),
            definition=definition,
            parents=split_bars(parents),
            known_types=split_bars(slims),
            line=lineno,
        )


# --- DNorm / BioSyn dictionary text ------------------------------------------------------------

_BARE_NUMBER = re.compile(r"^\d+$")
_DNORM_ID = re.compile(r"^(?:[A-Za-z][A-Za-z_]*:)?[A-Za-z]?\d*$")  # "C" is the MeSH root "Diseases"


_BARE_MESH = re.compile(r"^[CD]\d*$")  # D009223, C535484, and C alone (the root "Diseases")


def namespaced(record: ConceptRecord) -> ConceptRecord:
    """The record with its bare MeSH ids prefixed as CTD's MEDIC writes them (``D009223`` → ``MESH:D009223``).

    medic_06Jul2012 (the DNorm/BioSyn release) writes MeSH ids bare; the workbench stores them namespaced, so a
    concept is named the same way whichever MEDIC release it came from (gold ids written either way still
    resolve). The linker's own protocol keeps the file's spelling (the papers' evaluation compares it)."""
    def fix(raw: str) -> str:
        return f"MESH:{raw}" if _BARE_MESH.match(raw) else raw

    return replace(record, concept_id=fix(record.concept_id), alt_ids=tuple(fix(a) for a in record.alt_ids),
                   parents=tuple(fix(p) for p in record.parents))


def _normalise_dnorm_id(raw: str) -> str:
    """medic_06Jul2012 writes OMIM ids as bare numbers and MeSH ids without a prefix."""
    raw = raw.strip()
    return f"OMIM:{raw}" if _BARE_NUMBER.match(raw) else raw


def iter_dnorm_dictionary(path: str | Path) -> Iterator[ConceptRecord]:
    """``ID[|ID...]||Name|Synonym...``; the first id is primary, the others are alternative ids.

    The BioSyn release of the same format (``ID||name`` one name a line) is read too: consecutive lines
    with the same id set are merged into one concept.
    """
    pending: ConceptRecord | None = None
    seen: set[str] = set()
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        if "||" not in line:
            raise ParseError(path, lineno, "expected 'ID[|ID...]||Name[|Synonym...]' (no '||' found)")
        id_part, _, name_part = line.partition("||")
        ids = [_normalise_dnorm_id(i) for i in id_part.split("|") if i.strip()]
        names = [n.strip() for n in name_part.split("|") if n.strip()]
        if not ids:
            raise ParseError(path, lineno, "no concept id before '||'")
        bad = [i for i in ids if not _DNORM_ID.match(i)]
        if bad:
            raise ParseError(path, lineno, f"malformed concept id {bad[0]!r}")
        if not names:
            raise ParseError(path, lineno, "no name after '||'")
        if pending is not None and pending.concept_id == ids[0]:
            merged = pending.synonyms + tuple(Synonym(n) for n in names)
            pending = ConceptRecord(
                concept_id=pending.concept_id,
                preferred_name=pending.preferred_name,
                synonyms=merged,
                alt_ids=pending.alt_ids,
                line=pending.line,
            )
            continue
        if pending is not None:
            yield pending
        if ids[0] in seen:
            raise ParseError(path, lineno, f"concept id {ids[0]} appears twice")
        seen.add(ids[0])
        pending = ConceptRecord(
            concept_id=ids[0],
            preferred_name=names[0],
            synonyms=tuple(Synonym(n) for n in names[1:]),
            alt_ids=tuple(ids[1:]),
            line=lineno,
        )
    if pending is not None:
        yield pending


# --- OBO ---------------------------------------------------------------------------------------

_OBO_SYNONYM = re.compile(r'^"((?:[^"\\]|\\.)*)"\s+(EXACT|RELATED|BROAD|NARROW)\b')
_OBO_DEF = re.compile(r'^"((?:[^"\\]|\\.)*)"')


def _obo_unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def _strip_obo_comment(value: str) -> str:
    # "HP:0001507 ! Growth abnormality" -> "HP:0001507"; trailing {qualifiers} are dropped too.
    value = value.split(" ! ", 1)[0]
    value = re.sub(r"\s*\{.*\}\s*$", "", value)
    return value.strip()


def iter_obo(path: str | Path, include_obsolete: bool = False) -> Iterator[ConceptRecord]:
    """[Term] stanzas of an OBO file. Obsolete terms are left out unless ``include_obsolete``."""
    stanza: str | None = None
    tags: dict[str, list[str]] = {}
    start = 0
    ids_seen: set[str] = set()
    saw_header_or_stanza = False

    def flush() -> Iterator[ConceptRecord]:
        if stanza != "Term" or not tags:
            return
        cid = (tags.get("id") or [""])[0]
        if not cid:
            raise ParseError(path, start, "[Term] without an id")
        if cid in ids_seen:
            raise ParseError(path, start, f"term {cid} defined twice")
        ids_seen.add(cid)
        name = (tags.get("name") or [""])[0]
        obsolete = (tags.get("is_obsolete") or ["false"])[0].lower() == "true"
        if not name:
            raise ParseError(path, start, f"term {cid} has no name")
        if obsolete and not include_obsolete:
            return
        synonyms: list[Synonym] = []
        for raw in tags.get("synonym", []):
            m = _OBO_SYNONYM.match(raw)
            if not m:
                raise ParseError(path, start, f"malformed synonym in {cid}: {raw[:80]!r}")
            synonyms.append(Synonym(_obo_unescape(m.group(1)), m.group(2)))
        definition = ""
        if tags.get("def"):
            m = _OBO_DEF.match(tags["def"][0])
            definition = _obo_unescape(m.group(1)) if m else tags["def"][0]
        yield ConceptRecord(
            concept_id=cid,
            preferred_name=name,
            synonyms=tuple(synonyms),
            alt_ids=tuple(tags.get("alt_id", [])),
            definition=definition,
            parents=tuple(_strip_obo_comment(v) for v in tags.get("is_a", [])),
            known_types=tuple(_strip_obo_comment(v) for v in tags.get("subset", [])),
            obsolete=obsolete,
            line=start,
        )

    for lineno, line in read_lines(path):
        text = line.strip()
        if not text or text.startswith("!"):
            continue
        if text.startswith("["):
            if not text.endswith("]"):
                raise ParseError(path, lineno, f"malformed stanza header {text[:40]!r}")
            yield from flush()
            stanza, tags, start = text[1:-1], {}, lineno
            saw_header_or_stanza = True
            continue
        if ":" not in text:
            raise ParseError(path, lineno, f"expected 'tag: value', found {text[:60]!r}")
        tag, _, value = text.partition(":")
        if stanza is None:
            saw_header_or_stanza = saw_header_or_stanza or tag == "format-version"
            continue
        tags.setdefault(tag.strip(), []).append(value.strip())
    if not saw_header_or_stanza:
        raise ParseError(path, 1, "not an OBO file (no format-version header and no [Term] stanza)")
    yield from flush()
