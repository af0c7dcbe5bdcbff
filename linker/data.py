"""Readers for the file formats of biomedical entity linking, into plain dataclasses.

Every reader streams its file (gzip is detected from the name), yields records one at a time and
raises :class:`ParseError` naming the file and the 1-based line on malformed input, so a caller that
wraps an import in one transaction can refuse the whole file and leave nothing half-written.

Formats:
- MEDIC TSV (``CTD_diseases.tsv[.gz]``): names, synonyms, alt ids, definitions, ParentIDs, SlimMappings.
- DNorm/BioSyn dictionary text (``medic_06Jul2012.txt``): ``ID[|ID...]||Name|Synonym...``.
- OBO 1.2/1.4 (HPO, DOID, OntoBiotope): names, synonyms with their scope, alt ids, is_a, obsolete flag.
- PubTator documents with gold mentions (composite ids with ``|`` and ``+``, BC5CDR's 7th column).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

# The dictionary records every reader yields (and the error they raise) live in linker.records, so that a reader
# in a module of its own (linker.umls) need not import this one.
from linker.records import ConceptRecord, ParseError, Synonym

__all__ = [
    "ParseError",
    "Synonym",
    "ConceptRecord",
    "GoldMention",
    "PubTatorDocument",
    "open_text",
    "undecodable_line",
    "iter_medic_tsv",
    "iter_dnorm_dictionary",
    "namespaced",
    "iter_obo",
    "iter_pubtator",
    "sniff_dictionary_format",
    "read_release",
    "iter_dictionary",
    "iter_texts",
]


@dataclass(frozen=True)
class GoldMention:
    start: int
    end: int
    text: str
    mention_type: str
    # Raw id field as written ("D003110|D009369", "D020279+D035583", "-1", "OMIM:215600").
    ids_raw: str
    # Parts of a composite, one tuple of ids per part: "A|B" -> (("A",), ("B",)); "A+B" -> (("A", "B"),)
    # ("+" joins concepts that together denote one part); "-1" or empty -> () (no concept, NIL).
    parts: tuple[tuple[str, ...], ...]
    # BC5CDR's 7th column: the text of each composite part ("Ocular toxicity|auditory toxicity").
    part_texts: tuple[str, ...] = ()
    # The line of the file, for an error about this mention further down the pipeline; not part of its identity.
    line: int = field(default=0, compare=False)

    @property
    def concept_ids(self) -> tuple[str, ...]:
        return tuple(cid for part in self.parts for cid in part)

    @property
    def is_composite(self) -> bool:
        return len(self.parts) > 1


@dataclass(frozen=True)
class PubTatorDocument:
    pmid: str
    title: str
    abstract: str
    mentions: tuple[GoldMention, ...] = ()
    # Relation lines (PMID<TAB>CID<TAB>chem<TAB>disease) as tuples of their fields after the PMID.
    relations: tuple[tuple[str, ...], ...] = ()
    # 1 for the first document with this PMID in the file, 2 for a repeat, ... (NCBI train repeats 8528200).
    occurrence: int = 1
    line: int = 0

    @property
    def text(self) -> str:
        # PubTator offsets count the title, one separator, then the abstract.
        return f"{self.title} {self.abstract}" if self.abstract else self.title


def open_text(path: str | Path) -> IO[str]:
    """Open a text file, transparently un-gzipping ``*.gz``; UTF-8 with a clear error otherwise. A byte-order
    mark opening the file (Windows editors write one) is dropped: it would stick to the first field."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    if p.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8-sig", newline="")
    return open(p, encoding="utf-8-sig", newline="")


def _lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline); decoding and gzip errors become ParseError."""
    lineno = 0
    try:
        with open_text(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                yield lineno, raw.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        # The text layer decodes 8 KB ahead of the line being read: the line before it is not the culprit.
        found = undecodable_line(path)
        line, reason = found if found else (lineno + 1, exc.reason)
        raise ParseError(path, line, f"not UTF-8 text ({reason})") from exc
    except (EOFError, gzip.BadGzipFile, OSError, zlib.error) as exc:
        # zlib.error: a .gz file whose compressed data is damaged (not merely cut short, which is an EOFError).
        if isinstance(exc, FileNotFoundError):
            raise
        raise ParseError(path, lineno + 1, f"unreadable or truncated file ({exc})") from exc


def undecodable_line(path: str | Path) -> tuple[int, str] | None:
    """(1-based line, reason) of the first bytes of a file (un-gzipped if ``*.gz``) that are not UTF-8, or None.

    Read line by line as bytes: a newline byte is never part of a longer UTF-8 sequence, so each line decodes
    on its own, and the file is never held whole in memory.
    """
    p = Path(path)
    try:
        with gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return number, f"{exc.reason} at byte {exc.start + 1} of the line"
    except (EOFError, OSError, zlib.error):
        return None
    return None


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split("|") if v.strip())


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
    for lineno, line in _lines(path):
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
            synonyms=tuple(Synonym(s) for s in _split_list(synonyms)),
            alt_ids=_split_list(alt),
            definition=definition,
            parents=_split_list(parents),
            known_types=_split_list(slims),
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
    for lineno, line in _lines(path):
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

    for lineno, line in _lines(path):
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


# --- PubTator ----------------------------------------------------------------------------------

_TITLE_OR_ABSTRACT = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
_OFFSET = re.compile(r"\s*-?[0-9]+\s*")


def _parse_ids(raw: str) -> tuple[tuple[str, ...], ...]:
    raw = raw.strip()
    if raw in ("", "-1", "-"):
        return ()
    return tuple(tuple(i.strip() for i in part.split("+") if i.strip()) for part in raw.split("|"))


def iter_pubtator(path: str | Path) -> Iterator[PubTatorDocument]:
    """Documents of a PubTator file, each with its gold mentions (offsets checked against the text).

    A PMID that appears again later in the file is yielded again with ``occurrence`` 2, 3, ...: the NCBI
    training set repeats one abstract, and its published mention count includes both copies, so the
    importer decides how to store it rather than the reader silently dropping it.
    """
    occurrences: dict[str, int] = {}
    pmid: str | None = None
    title = abstract = ""
    mentions: list[GoldMention] = []
    relations: list[tuple[str, ...]] = []
    start = 0

    def flush() -> Iterator[PubTatorDocument]:
        if pmid is None:
            return
        occurrences[pmid] = occurrences.get(pmid, 0) + 1
        yield PubTatorDocument(
            pmid=pmid,
            title=title,
            abstract=abstract,
            mentions=tuple(mentions),
            relations=tuple(relations),
            occurrence=occurrences[pmid],
            line=start,
        )

    for lineno, line in _lines(path):
        if not line.strip():
            yield from flush()
            pmid, title, abstract, mentions, relations = None, "", "", [], []
            continue
        m = _TITLE_OR_ABSTRACT.match(line)
        if m:
            doc_id, kind, body = m.groups()
            if kind == "t":
                if pmid is not None:
                    # Some files omit the blank line between documents.
                    yield from flush()
                    mentions, relations, abstract = [], [], ""
                pmid, title, start = doc_id, body, lineno
            else:
                if pmid != doc_id:
                    raise ParseError(path, lineno, f"abstract of {doc_id} without its title line")
                abstract = body
            continue
        cols = line.split("\t")
        if pmid is None:
            raise ParseError(path, lineno, "annotation line before any 'PMID|t|title' line")
        if cols[0] != pmid:
            raise ParseError(path, lineno, f"annotation for {cols[0]!r} inside document {pmid}")
        if len(cols) >= 2 and cols[1] in ("CID", "relation") or (len(cols) == 4 and not cols[1].isdigit()):
            relations.append(tuple(cols[1:]))
            continue
        if len(cols) < 5:
            raise ParseError(path, lineno, f"expected 'PMID start end text type [ids]', found {len(cols)} columns")
        # ASCII digits only: int() would also read "+5", "1_0" and other scripts' digits as offsets.
        try:
            if not (_OFFSET.fullmatch(cols[1]) and _OFFSET.fullmatch(cols[2])):
                raise ValueError
            s, e = int(cols[1]), int(cols[2])
        except ValueError:  # or more digits than Python converts (4,300)
            raise ParseError(path, lineno, f"offsets {cols[1][:40]!r} {cols[2][:40]!r} are not integers") from None
        text = f"{title} {abstract}" if abstract else title
        if not (0 <= s < e <= len(text)):
            raise ParseError(path, lineno, f"span {s}-{e} outside the document text (length {len(text)})")
        # Compared without surrounding blanks: NCBI Disease pads a few mention columns with spaces.
        if text[s:e].strip() != cols[3].strip():
            raise ParseError(
                path, lineno, f"span {s}-{e} reads {text[s:e]!r} in the text, the file says {cols[3]!r}"
            )
        ids_raw = cols[5].strip() if len(cols) > 5 else ""
        mentions.append(
            GoldMention(
                start=s,
                end=e,
                text=text[s:e],
                mention_type=cols[4].strip(),
                ids_raw=ids_raw,
                parts=_parse_ids(ids_raw),
                part_texts=_split_list(cols[6]) if len(cols) > 6 else (),
                line=lineno,
            )
        )
    yield from flush()


# --- format sniffing ---------------------------------------------------------------------------

DICTIONARY_FORMATS = ("medic", "dnorm", "obo", "umls")


def sniff_dictionary_format(path: str | Path) -> str:
    """'medic', 'dnorm' or 'obo' from the file name and its first non-comment line; 'umls' for a folder or a .zip
    holding a UMLS release's MRCONSO.RRF."""
    from linker.umls import is_umls_release  # linker.umls reads records of this module

    if is_umls_release(path):
        return "umls"
    name = Path(path).name.lower()
    if Path(path).is_dir() or name.endswith(".zip"):
        raise ParseError(path, 1, "cannot tell the dictionary format: a folder or a .zip is read as a UMLS release, "
                                  "and this one holds no MRCONSO.RRF (nor a META folder with one)")
    if name.endswith((".obo", ".obo.gz")):
        return "obo"
    for _, line in _lines(path):
        if not line.strip():
            continue
        if line.startswith("#"):
            if "DiseaseName" in line or "Report created" in line:
                return "medic"
            continue
        if line.startswith(("format-version:", "[Term]")):
            return "obo"
        if "||" in line:
            return "dnorm"
        if line.count("\t") >= 7:
            return "medic"
        break
    raise ParseError(path, 1, "cannot tell the dictionary format (expected MEDIC TSV, DNorm '||' text or OBO)")


def read_release(path: str | Path) -> str:
    """A release label from the file header (OBO data-version, MEDIC 'Report created'), else ''."""
    for lineno, line in _lines(path):
        if lineno > 60:
            break
        if line.startswith("data-version:"):
            return line.partition(":")[2].strip()
        if line.startswith("# Report created:"):
            return line.partition(":")[2].strip()
        if line.startswith("date:") and "format" not in line:
            return line.partition(":")[2].strip()
    return ""


def iter_dictionary(path: str | Path, fmt: str | None = None, include_obsolete: bool = False) -> Iterator[ConceptRecord]:
    fmt = fmt or sniff_dictionary_format(path)
    if fmt == "medic":
        return iter_medic_tsv(path)
    if fmt == "dnorm":
        return iter_dnorm_dictionary(path)
    if fmt == "obo":
        return iter_obo(path, include_obsolete=include_obsolete)
    if fmt == "umls":  # concepts and names only (ENG, every source): the hierarchy is the importer's business
        from linker.umls import UmlsFilter, UmlsRelease, iter_concepts

        return iter_concepts(UmlsRelease(path), UmlsFilter())
    raise ValueError(f"unknown dictionary format {fmt!r}; expected one of {', '.join(DICTIONARY_FORMATS)}")


def iter_mention_pairs(docs: Iterable[PubTatorDocument]) -> Iterator[tuple[PubTatorDocument, GoldMention]]:
    for doc in docs:
        for m in doc.mentions:
            yield doc, m



def iter_concept_mentions(path: str | Path, skip_splits: tuple[str, ...] = ("test",)) -> Iterator[tuple[str, str]]:
    """(mention text, concept id) from ``ID||text`` lines (the derived MedMentions mention->CUI set): a text
    file, or a ``.tar.gz`` of them whose members under a folder named in ``skip_splits`` are left out (a
    test split never trains anything). A line without ``||`` is a :class:`ParseError`."""
    import tarfile

    def parse(lines: Iterable[str], where: str) -> Iterator[tuple[str, str]]:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cid, sep, text = line.partition("||")
            if not sep or not cid.strip() or not text.strip():
                raise ParseError(where, number, f"expected 'ID||mention text', got {line[:80]!r}")
            yield text.strip(), cid.strip()

    name = str(path)
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(path) as archive:
            for member in archive:
                parts = Path(member.name).parts
                if not member.isfile() or any(split in parts[:-1] for split in skip_splits):
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    yield from parse(handle.read().decode("utf-8").splitlines(), f"{name}:{member.name}")
        return
    with open_text(path) as fh:
        yield from parse(fh, name)


def iter_texts(path: str | Path) -> Iterator[str]:
    """Free text for word vectors: a PubTator file's documents (title and abstract, one text each), or a
    plain text file's non-empty lines (gzip read transparently)."""
    with open_text(path) as fh:
        head = fh.read(4000)
    if "|t|" in head or "|a|" in head:
        for doc in iter_pubtator(path):
            yield f"{doc.title} {doc.abstract}".strip()
        return
    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                yield line.strip()
