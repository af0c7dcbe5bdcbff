"""Plain records between the database and the interchange formats, and the errors readers raise.

Readers turn a file into :class:`DocumentRecord` objects; writers turn records into text. Records carry
offsets in characters of :attr:`DocumentRecord.text` (never bytes), the ids as the source wrote them, and a
``where`` string (``line 12``, ``document 1234 / annotation T3``) that import errors quote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class FormatError(ValueError):
    """Malformed input; ``str()`` reads ``file: where: message`` (``where`` is a line or an element)."""

    def __init__(self, path: str | Path, where: str, message: str) -> None:
        self.path = str(path)
        self.where = where
        self.message = message
        super().__init__(f"{self.path}: {where}: {message}" if where else f"{self.path}: {message}")


@dataclass(frozen=True)
class LinkRecord:
    """One composite part's concept: ``concept_id`` as written (``D012345``, ``OMIM:1234``, ``A+B``), or NIL."""

    part: int = 0
    concept_id: str = ""
    nil: bool = False
    origin: str = "gold"  # gold, curator or model: written by JSONL, read back by none (imports are gold)
    score: float | None = None
    model_version: str = ""


@dataclass(frozen=True)
class MentionRecord:
    start: int
    end: int
    text: str
    mention_type: str = ""
    links: tuple[LinkRecord, ...] = ()  # no links: a span without a decision yet
    part_texts: tuple[str, ...] = ()
    status: str = ""  # exported for JSONL only
    where: str = ""

    def ids_field(self) -> str:
        return ids_field(self.links)


@dataclass
class DocumentRecord:
    external_id: str
    text: str
    title: str = ""  # a prefix of text ("title abstract") or empty
    mentions: list[MentionRecord] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    # The line the document starts on, for line-based files: errors then read ``path:line: message``.
    line: int = 0

    def split_title(self) -> tuple[str, str]:
        """(title, rest) with ``text == title + " " + rest`` (or ``text == title`` when rest is empty)."""
        if self.title and self.text == self.title:
            return self.title, ""
        if self.title and self.text.startswith(self.title + " "):
            return self.title, self.text[len(self.title) + 1 :]
        return "", self.text


def ids_field(links: tuple[LinkRecord, ...]) -> str:
    """PubTator's id column: parts joined by ``|``, ``-1`` for NIL, empty without links."""
    if not links:
        return ""
    if all(link.nil for link in links):
        return "-1"
    return "|".join(link.concept_id if not link.nil else "-1" for link in links)


def links_from_ids(raw: str) -> tuple[LinkRecord, ...]:
    """``"D1|D2"`` -> two parts, ``"D1+D2"`` -> one part naming two concepts, ``"-1"`` -> NIL, ``""`` -> none."""
    raw = raw.strip()
    if not raw:
        return ()
    if raw in ("-1", "-", "NIL"):
        return (LinkRecord(part=0, nil=True),)
    links = []
    for index, part in enumerate(raw.split("|")):
        ids = "+".join(i.strip() for i in part.split("+") if i.strip())
        links.append(LinkRecord(part=index, concept_id=ids) if ids and ids != "-1" else LinkRecord(part=index, nil=True))
    return tuple(links)
