"""Plain records between the database and the interchange formats, and the errors readers raise.

Readers turn a file into :class:`DocumentRecord` objects; writers turn records into text. Records carry
offsets in characters of :attr:`DocumentRecord.text` (never bytes), the ids as the source wrote them, and a
``where`` string (``line 12``, ``document 1234 / annotation T3``) that import errors quote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from linker.textfiles import undecodable_line

# Metadata nests a few levels in practice (PubTator relations: 3); far deeper JSON is refused by name rather
# than met later as a RecursionError when it is encoded for PostgreSQL, deep inside the request's stack.
MAX_METADATA_DEPTH = 64

# The adjudication state of a span of a project's document that no one has adjudicated yet (the others are
# webapp.projects.models.Adjudication.State: agreed, adjudicated).
ADJUDICATION_OPEN = "open"


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
    # Provenance, written by JSONL and BioC and read back by none: who decided the link (the curator's username,
    # "gold", or a suggestion's model version), when, and how (the curator Decision's ``via``; empty otherwise).
    decided_by: str = ""
    decided_at: datetime | None = None
    decided_via: str = ""


@dataclass(frozen=True)
class AdjudicationRecord:
    """Where a span of a project's document stands in team curation (webapp.projects): ``open`` (no adjudication
    yet), ``agreed`` (every annotator made the same decision) or ``adjudicated`` (the adjudicator settled it, by
    taking ``chosen_annotator``'s decision or, with no chosen annotator, a third one). Written, never read back."""

    state: str
    adjudicator: str = ""
    chosen_annotator: str = ""
    annotator_labels: Mapping[str, str] = field(default_factory=dict, hash=False)  # username -> label


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
    # The mention's own line in a line-based file (PubTator), named by an error about it; else 0.
    line: int = 0
    adjudication: AdjudicationRecord | None = None  # exported for a project's documents only (JSONL, BioC)

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


def not_utf8(path: str | Path, exc: UnicodeDecodeError) -> FormatError:
    """The refusal of a file that is not UTF-8, naming the line of its first undecodable bytes (the reader's
    own error only knows a position in whatever chunk it was decoding)."""
    found = undecodable_line(path)
    if found is None:
        return FormatError(path, "", f"not UTF-8 text ({exc.reason})")
    line, reason = found
    return FormatError(path, f"line {line}", f"not UTF-8 text ({reason})")


def unstorable_character(value: Any) -> str | None:
    """What in a string, or in any key or string of a JSON value, PostgreSQL cannot store: "a NUL character",
    or a lone surrogate (JSON's ``"\\ud800"`` decodes to one: half a character, which no UTF-8 text can hold,
    so the driver would fail encoding the row), named by its code point. None when there is none."""
    if any("\x00" in text for text in _strings(value)):
        return "a NUL character"
    return lone_surrogate(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a string or in any key or string of a JSON value, named; None when none."""
    for text in _strings(value):
        surrogate = _SURROGATE.search(text)
        if surrogate:
            return f"a lone surrogate (U+{ord(surrogate.group()):04X}), which is not a character"
    return None


def has_nul(value: Any) -> bool:
    """Whether a string, or any key or string inside a JSON value, holds NUL, which PostgreSQL cannot store."""
    return any("\x00" in text for text in _strings(value))


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included (walked without recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def too_deep(value: Any, limit: int = MAX_METADATA_DEPTH) -> bool:
    """Whether a JSON value nests objects and arrays more than ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


_JSON_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}:,\n]')


def deep_json_keys(text: str, limit: int = MAX_METADATA_DEPTH) -> tuple[int, list[str]] | None:
    """Where JSON ``text`` first nests deeper than ``limit``: (line, the object keys on the way there, outermost
    first), or None. A scan of the tokens, for text :func:`json.loads` gave up on with a RecursionError."""
    line = 1
    keys: list[str | None] = []  # per open container, the key it is the value of
    last_string: str | None = None
    key: str | None = None
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
        elif token.startswith('"'):
            last_string = token
        elif token == ":":
            try:
                key = json.loads(last_string) if last_string else None
            except ValueError:
                key = None
        elif token in "[{":
            keys.append(key)
            key = None
            if len(keys) > limit:
                return line, [k for k in keys if k is not None]
        else:  # "," or a closing bracket: the key read last belongs to no container
            key = None
            if token in "]}" and keys:
                keys.pop()
    return None
