"""Reading the data of biomedical entity linking, into plain dataclasses: gold corpora in PubTator (documents
with their gold mentions: composite ids with ``|`` and ``+``, BC5CDR's 7th column), mention sets, free text, and
dictionaries in any of their formats (:func:`iter_dictionary`, which tells the format and hands the file to its
reader in :mod:`linker.dictionary_formats` or :mod:`linker.umls`).

Every reader streams its file (gzip is detected from the name: :mod:`linker.textfiles`), yields records one at a
time and raises :class:`ParseError` naming the file and the 1-based line on malformed input, so a caller that
wraps an import in one transaction can refuse the whole file and leave nothing half-written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from linker.dictionary_formats import iter_dnorm_dictionary, iter_medic_tsv, iter_obo

# The dictionary records every reader yields (and the error they raise) live in linker.records, so that a reader
# in a module of its own (linker.umls, linker.dictionary_formats) need not import this one.
from linker.records import ConceptRecord, ParseError, Synonym
from linker.textfiles import open_text, read_lines, split_bars

__all__ = [
    "ParseError",
    "Synonym",
    "ConceptRecord",
    "GoldMention",
    "PubTatorDocument",
    "iter_pubtator",
    "iter_mention_pairs",
    "iter_concept_mentions",
    "sniff_dictionary_format",
    "read_release",
    "iter_dictionary",
    "DICTIONARY_FORMATS",
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


# --- PubTator ----------------------------------------------------------------------------------

_TITLE_OR_ABSTRACT = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
_OFFSET = re.compile(r"\s*-?[0-9]+\s*")


def _parse_ids(raw: str) -> tuple[tuple[str, ...], ...]:
    raw = raw.strip()
    if raw in ("", "-1", "-"):
        return ()
    return tuple(tuple(i.strip() for i in part.split("+") if i.strip()) for part in raw.split("|"))


def _gold_mention(path: str | Path, lineno: int, cols: list[str], text: str) -> GoldMention:
    """The mention of an annotation line (its tab-separated ``cols``) of the document whose text is ``text``."""
    if len(cols) < 5:
        raise ParseError(path, lineno, f"expected 'PMID start end text type [ids]', found {len(cols)} columns")
    # ASCII digits only: int() would also read "+5", "1_0" and other scripts' digits as offsets.
    try:
        if not (_OFFSET.fullmatch(cols[1]) and _OFFSET.fullmatch(cols[2])):
            raise ValueError
        s, e = int(cols[1]), int(cols[2])
    except ValueError:  # or more digits than Python converts (4,300)
        raise ParseError(path, lineno, f"offsets {cols[1][:40]!r} {cols[2][:40]!r} are not integers") from None
    if not (0 <= s < e <= len(text)):
        raise ParseError(path, lineno, f"span {s}-{e} outside the document text (length {len(text)})")
    # Compared without surrounding blanks: NCBI Disease pads a few mention columns with spaces.
    if text[s:e].strip() != cols[3].strip():
        raise ParseError(
            path, lineno, f"span {s}-{e} reads {text[s:e]!r} in the text, the file says {cols[3]!r}"
        )
    ids_raw = cols[5].strip() if len(cols) > 5 else ""
    return GoldMention(
        start=s,
        end=e,
        text=text[s:e],
        mention_type=cols[4].strip(),
        ids_raw=ids_raw,
        parts=_parse_ids(ids_raw),
        part_texts=split_bars(cols[6]) if len(cols) > 6 else (),
        line=lineno,
    )


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

    for lineno, line in read_lines(path):
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
        mentions.append(_gold_mention(path, lineno, cols, f"{title} {abstract}" if abstract else title))
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
    for _, line in read_lines(path):
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
    for lineno, line in read_lines(path):
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
