"""Read a UMLS Metathesaurus release in Rich Release Format (RRF): a folder, or a ``.zip`` of one.

A release holds ``META/MRCONSO.RRF`` (names), ``MRSTY.RRF`` (semantic types), ``MRREL.RRF`` (relationships)
and, in most releases, ``MRHIER.RRF`` (hierarchical contexts). Each is pipe-delimited UTF-8 with a trailing
pipe; the column layouts are those of the UMLS Reference Manual (section 3.3). Everything here streams: a full
MRCONSO is 15 GB, so no file is ever held in memory, and a concept's rows are grouped as they come (MRCONSO is
sorted by CUI in every release; a file that is not is refused, not silently split into duplicate concepts).

Only the reading is here (no database): :mod:`webapp.vocab.umls` writes what this yields.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from linker.records import ConceptRecord, ParseError, Synonym

__all__ = [
    "MRCONSO", "MRSTY", "MRREL", "MRHIER", "SUPPRESSED", "HIERARCHY_SOURCES", "UmlsFilter", "UmlsRelease",
    "SemanticType", "is_umls_release", "iter_concepts", "iter_semantic_types", "iter_mrrel_edges", "iter_mrhier_edges",
]

MRCONSO, MRSTY, MRREL, MRHIER = "MRCONSO.RRF", "MRSTY.RRF", "MRREL.RRF", "MRHIER.RRF"
# The files read, in the order the checksum covers them.
RELEASE_FILES = (MRCONSO, MRSTY, MRREL, MRHIER)
COLUMNS = {
    MRCONSO: "CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF",
    MRSTY: "CUI|TUI|STN|STY|ATUI|CVF",
    MRREL: "CUI1|AUI1|STYPE1|REL|CUI2|AUI2|STYPE2|RELA|RUI|SRUI|SAB|SL|RG|DIR|SUPPRESS|CVF",
    MRHIER: "CUI|AUI|CXN|PAUI|SAB|RELA|PTR|HCD|CVF",
}
# SUPPRESS: O obsolete, E suppressed by the editors, Y suppressed by the source; N is a live row.
SUPPRESSED = frozenset("OEY")
# Where the hierarchy comes from: "auto" is MRHIER.RRF where the release has it, else MRREL's PAR/CHD.
HIERARCHY_SOURCES = ("auto", "mrhier", "mrrel", "mrrel-broader")
_CUI = re.compile(r"C\d{7}")
_AUI = re.compile(r"A\d{7,}")
_TUI = re.compile(r"T\d{3}")
_RELEASE = re.compile(r"\d{4}[A-Z]{2}")
_CODE_MAX = 100  # Concept.alt_ids' element width: a longer source code is not kept as an alternative id


@dataclass(frozen=True)
class UmlsFilter:
    """Which MRCONSO rows become names: languages (LAT; empty: all), sources (SAB; empty: all), suppressed rows."""

    languages: tuple[str, ...] = ("ENG",)
    sources: tuple[str, ...] = ()
    include_suppressed: bool = False

    def keeps(self, lat: str, sab: str, suppress: str) -> bool:
        return ((not self.languages or lat in self.languages) and (not self.sources or sab in self.sources)
                and (self.include_suppressed or suppress not in SUPPRESSED))


@dataclass(frozen=True)
class SemanticType:
    cui: str
    tui: str
    label: str  # STY, e.g. "Disease or Syndrome"
    line: int


class UmlsRelease:
    """The RRF files of a release: a folder holding them (its ``META`` folder or the release folder above it), or a
    ``.zip`` of either. Files are named in messages as ``<path>/<member>``, e.g. ``2024AA.zip/META/MRCONSO.RRF``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.is_zip = self.path.is_file()
        self._sizes: dict[str, int] = {}
        if self.is_zip:
            try:
                with zipfile.ZipFile(self.path) as archive:
                    infos = [i for i in archive.infolist() if not i.is_dir()]
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable .zip of a UMLS release ({exc})") from None
            members = {i.filename: i.file_size for i in infos}
        else:
            members = {}
            for sub in ("", "META/"):
                for name in RELEASE_FILES:
                    if (self.path / sub / name).is_file():
                        members[sub + name] = (self.path / sub / name).stat().st_size
        # The MRCONSO nearest the top decides where the release is: "MRCONSO.RRF", "META/...", "2024AA/META/...".
        found = sorted((m for m in members if m == MRCONSO or m.endswith("/" + MRCONSO)), key=lambda m: (m.count("/"), m))
        if not found:
            what = "the archive" if self.is_zip else "the folder (nor its META folder)"
            raise ValueError(f"{self.path}: not a UMLS release: {what} holds no {MRCONSO}")
        self.prefix = found[0][: -len(MRCONSO)]
        self._sizes = {m[len(self.prefix):]: size for m, size in members.items()
                       if m.startswith(self.prefix) and m[len(self.prefix):] in RELEASE_FILES}

    def has(self, name: str) -> bool:
        return name in self._sizes

    def size(self, name: str) -> int:
        return self._sizes.get(name, 0)

    def where(self, name: str) -> str:
        return f"{self.path}/{self.prefix}{name}"

    def _open(self, name: str) -> tuple[IO[bytes], zipfile.ZipFile | None]:
        if not self.is_zip:
            return open(self.path / self.prefix / name, "rb"), None
        archive = zipfile.ZipFile(self.path)
        try:
            return archive.open(self.prefix + name), archive
        except BaseException:
            archive.close()
            raise

    def lines(self, name: str, counter: list[int] | None = None) -> Iterator[tuple[int, str]]:
        """(1-based line, line without its end) of one file; ``counter[0]`` is kept at the bytes read so far.

        Each line is decoded on its own, so a byte that is not UTF-8 is reported on its own line; a damaged archive
        member (a CRC error, a truncated stream) becomes a ParseError at the line it was reached."""
        where = self.where(name)
        lineno = 0
        try:
            fh, archive = self._open(name)
            try:
                for lineno, raw in enumerate(fh, start=1):
                    if counter is not None:
                        counter[0] += len(raw)
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise ParseError(where, lineno, f"not UTF-8 text ({exc.reason})") from None
                    if lineno == 1:
                        text = text.removeprefix("\ufeff")
                    yield lineno, text.rstrip("\r\n")
            finally:
                fh.close()
                if archive is not None:
                    archive.close()
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError) as exc:
            raise ParseError(where, lineno + 1, f"unreadable or damaged file ({exc})") from None

    def checksum(self) -> str:
        """SHA-256 over the release files present (name, size and bytes of each, in a fixed order): the same
        release gives the same checksum whether it comes as a folder or as a .zip."""
        digest = hashlib.sha256()
        for name in RELEASE_FILES:
            if not self.has(name):
                continue
            digest.update(f"{name}\x00{self.size(name)}\x00".encode())
            try:
                fh, archive = self._open(name)
                try:
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
                finally:
                    fh.close()
                    if archive is not None:
                        archive.close()
            except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError) as exc:
                raise ValueError(f"{self.where(name)}: unreadable or damaged file ({exc})") from None
        return digest.hexdigest()

    def release_label(self) -> str:
        """``umls.release.name`` of the release's release.dat, else the first folder (or archive) name that reads
        like a release (2024AA), else ''."""
        label = self._release_dat()
        if label:
            return label
        parts = [*Path(self.prefix).parts[::-1], self.path.stem if self.is_zip else self.path.name]
        if not self.is_zip and self.path.name == "META":
            parts.append(self.path.parent.name)
        return next((p for p in parts if _RELEASE.fullmatch(p)), "")

    def _release_dat(self) -> str:
        # release.dat sits beside META in the release folder (MetamorphoSys writes it there), or beside the files.
        top = self.prefix.removesuffix("META/")
        candidates = [self.prefix + "release.dat", top + "release.dat"]
        try:
            if self.is_zip:
                with zipfile.ZipFile(self.path) as archive:
                    names = set(archive.namelist())
                    member = next((c for c in candidates if c in names), None)
                    data = archive.read(member)[:4096] if member else b""
            else:
                files = [self.path / c for c in candidates]
                if self.path.name == "META":
                    files.append(self.path.parent / "release.dat")
                found = next((f for f in files if f.is_file()), None)
                data = found.read_bytes()[:4096] if found else b""
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError):
            return ""
        for line in data.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "umls.release.name" and value.strip():
                return value.strip()
        return ""


def is_umls_release(path: str | Path) -> bool:
    """Whether ``path`` is a folder or a .zip holding an MRCONSO.RRF (its META folder's included)."""
    p = Path(path)
    if p.is_dir():
        return any((p / sub / MRCONSO).is_file() for sub in ("", "META"))
    if p.suffix.lower() != ".zip":
        return False
    try:
        with zipfile.ZipFile(p) as archive:
            return any(n == MRCONSO or n.endswith("/" + MRCONSO) for n in archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False


def _fields(where: str, lineno: int, line: str, name: str) -> list[str]:
    expected = COLUMNS[name].count("|") + 1
    fields = line.split("|")
    # Every row ends with a pipe: n columns are n + 1 pieces, the last one empty.
    if len(fields) != expected + 1 or fields[-1] != "":
        raise ParseError(where, lineno, f"expected {expected} fields ({COLUMNS[name]}) each followed by '|', "
                                        f"found {len(fields) - (fields[-1] == '')}")
    return fields


def _cui(where: str, lineno: int, value: str, column: str = "CUI") -> str:
    if not _CUI.fullmatch(value):
        raise ParseError(where, lineno, f"{column} {value[:40]!r} is not C followed by 7 digits")
    return value


def _rank(ts: str, stt: str, ispref: str, lat: str, languages: tuple[str, ...]) -> tuple[int, ...]:
    """Lower is better. MRCONSO's preferred atom of a concept is the row with TS=P (preferred term of the concept),
    STT=PF (preferred form of the term) and ISPREF=Y (preferred atom of the string): exactly one per concept and
    language. When several qualify (several languages kept) the first language of the filter wins, then the first
    row in the file; when none is left (the source filter dropped it) the nearest to it is taken, TS before STT
    before ISPREF, so that a concept seen only through, say, OMIM is named by OMIM's preferred form."""
    language = languages.index(lat) if lat in languages else len(languages)
    return (ts != "P", stt != "PF", ispref != "Y", language)


def iter_concepts(release: UmlsRelease, keep: UmlsFilter, counter: list[int] | None = None,
                  auis: list[tuple[str, str]] | None = None) -> Iterator[ConceptRecord]:
    """One record per CUI that has a name after filtering: its preferred name, its other names (exact duplicates
    dropped by the writer), and its source codes as alternative ids (``MSH:D003920``, ``OMIM:222100``).

    ``auis``, when given, receives (AUI, CUI) of every row (filtered or not: a hierarchy's parent atom may be one
    the filter left out while its concept has other names); the caller drains it as it goes."""
    where = release.where(MRCONSO)
    cui = ""
    start = 0
    rows: list[tuple[tuple[int, ...], str]] = []
    codes: dict[str, None] = {}

    def flush() -> Iterator[ConceptRecord]:
        if rows:
            best = min(range(len(rows)), key=lambda i: rows[i][0])  # min keeps the first of equals: file order
            names = [text for _, text in rows]
            yield ConceptRecord(
                concept_id=cui, preferred_name=names[best], line=start,
                synonyms=tuple(Synonym(t, "") for i, t in enumerate(names) if i != best),
                alt_ids=tuple(codes),
            )

    for lineno, line in release.lines(MRCONSO, counter):
        if not line:
            continue
        f = _fields(where, lineno, line, MRCONSO)
        row_cui = _cui(where, lineno, f[0])
        if row_cui != cui:
            if row_cui < cui:
                raise ParseError(where, lineno, f"CUI {row_cui} comes after {cui}: {MRCONSO} must be sorted by CUI, "
                                                f"as UMLS releases are (sort -t'|' -k1,1 -s)")
            yield from flush()
            cui, start, rows, codes = row_cui, lineno, [], {}
        lat, ts, stt, ispref, aui, sab, code, text, suppress = f[1], f[2], f[4], f[6], f[7], f[11], f[13], f[14], f[16]
        if not _AUI.fullmatch(aui):
            raise ParseError(where, lineno, f"AUI {aui[:40]!r} is not A followed by digits")
        if auis is not None:
            auis.append((aui, cui))
        if not keep.keeps(lat, sab, suppress):
            continue
        if not text.strip():
            raise ParseError(where, lineno, f"CUI {cui}: empty STR (the name)")
        if not rows:
            start = lineno
        rows.append((_rank(ts, stt, ispref, lat, keep.languages), text))
        if code and code != "NOCODE" and len(sab) + 1 + len(code) <= _CODE_MAX:
            codes.setdefault(f"{sab}:{code}", None)
    yield from flush()


def iter_semantic_types(release: UmlsRelease) -> Iterator[SemanticType]:
    where = release.where(MRSTY)
    for lineno, line in release.lines(MRSTY):
        if not line:
            continue
        f = _fields(where, lineno, line, MRSTY)
        cui = _cui(where, lineno, f[0])
        if not _TUI.fullmatch(f[1]):
            raise ParseError(where, lineno, f"TUI {f[1][:40]!r} is not T followed by 3 digits")
        if not f[3].strip():
            raise ParseError(where, lineno, f"TUI {f[1]}: empty STY (the semantic type's name)")
        yield SemanticType(cui, f[1], f[3], lineno)


# REL is the relationship of the second concept to the first (Reference Manual, MRREL): "C1|..|PAR|C2" says C2 is a
# parent of C1. Each PAR row has its CHD twin the other way round, so both give the same edge once.
_CHILD_PARENT = {"PAR": (0, 4), "CHD": (4, 0), "RB": (0, 4), "RN": (4, 0)}


def iter_mrrel_edges(release: UmlsRelease, keep: UmlsFilter, broader: bool = False) -> Iterator[tuple[str, str]]:
    """(child CUI, parent CUI) from MRREL's PAR/CHD rows (with ``broader``, RB/RN too) of the kept sources, not
    suppressed unless asked; a row from a concept to itself (two atoms of one concept) is left out."""
    where = release.where(MRREL)
    wanted = {"PAR", "CHD", "RB", "RN"} if broader else {"PAR", "CHD"}
    for lineno, line in release.lines(MRREL):
        if not line:
            continue
        f = _fields(where, lineno, line, MRREL)
        cui1, cui2 = _cui(where, lineno, f[0], "CUI1"), _cui(where, lineno, f[4], "CUI2")
        rel, sab, suppress = f[3], f[10], f[14]
        if rel not in wanted or cui1 == cui2:
            continue
        if (keep.sources and sab not in keep.sources) or (not keep.include_suppressed and suppress in SUPPRESSED):
            continue
        child, parent = _CHILD_PARENT[rel]
        yield f[child], f[parent]


def iter_mrhier_edges(release: UmlsRelease, keep: UmlsFilter) -> Iterator[tuple[str, str]]:
    """(child CUI, parent AUI) from MRHIER's contexts of the kept sources. The parent is PAUI, the last atom of the
    path to the root (PTR); the atoms further up the path have contexts of their own, which give their edges, so
    walking each PTR whole would only repeat them. A root's context (no parent) gives no edge."""
    where = release.where(MRHIER)
    for lineno, line in release.lines(MRHIER):
        if not line:
            continue
        f = _fields(where, lineno, line, MRHIER)
        cui = _cui(where, lineno, f[0])
        sab, paui, ptr = f[4], f[3], f[6]
        if keep.sources and sab not in keep.sources:
            continue
        parent = paui or (ptr.rsplit(".", 1)[-1] if ptr else "")
        if not parent:
            continue
        if not _AUI.fullmatch(parent):
            raise ParseError(where, lineno, f"PAUI {parent[:40]!r} is not A followed by digits")
        yield cui, parent
