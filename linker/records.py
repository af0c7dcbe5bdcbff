"""The plain records dictionary readers yield, and the error they raise (re-exported by :mod:`linker.data`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ParseError", "Synonym", "ConceptRecord"]


class ParseError(ValueError):
    """Malformed input; ``str()`` reads ``path:line: message`` so a user can find it."""

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")


@dataclass(frozen=True)
class Synonym:
    text: str
    # OBO synonym scope (EXACT, RELATED, BROAD, NARROW); other formats only know EXACT.
    scope: str = "EXACT"


@dataclass(frozen=True)
class ConceptRecord:
    concept_id: str
    preferred_name: str
    synonyms: tuple[Synonym, ...] = ()
    alt_ids: tuple[str, ...] = ()
    definition: str = ""
    parents: tuple[str, ...] = ()
    known_types: tuple[str, ...] = ()
    obsolete: bool = False
    line: int = 0  # where the record starts, for error messages further down the pipeline

    def all_names(self) -> list[str]:
        """Preferred name first, then synonyms, without case-sensitive duplicates."""
        seen: dict[str, None] = {self.preferred_name: None}
        for syn in self.synonyms:
            seen.setdefault(syn.text, None)
        return list(seen)
