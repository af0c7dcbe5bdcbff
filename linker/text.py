"""Mention and name preprocessing as in BioSyn (Sung et al., ACL 2020, section 4.2).

BioSyn lower-cases and strips punctuation from both mentions and dictionary names, resolves abbreviations
from the document (Ab3P there; here our own Schwartz & Hearst 2003 implementation, :mod:`linker.abbreviations`),
splits composite mentions ("breast and ovarian cancer" -> "breast cancer", "ovarian cancer") with heuristic rules
in the spirit of D'Souza & Ng (2015) (:mod:`linker.composites`), and merges training mentions into the dictionary
(see :mod:`linker.protocol`).

Every step is switchable through :class:`TextConfig`, and :func:`normalize` is the single function applied
to dictionary names and mention queries alike, so both sides of a comparison always go through the same code.
"""

from __future__ import annotations

import html
import re
import string
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

from linker.abbreviations import expand_abbreviation, find_abbreviations
from linker.composites import split_composite

__all__ = ["TextConfig", "normalize", "american_spelling", "Preprocessor"]


@dataclass(frozen=True)
class TextConfig:
    """Switches for each preprocessing step; defaults are BioSyn's."""

    lowercase: bool = True
    remove_punctuation: bool = True
    resolve_abbreviations: bool = True
    split_composites: bool = True
    # British -> American spelling of common medical stems ("anaemia", "oedema", "tumour"), applied to
    # names and mentions alike; an addition to BioSyn, which ran a spelling checker on NCBI mentions.
    american_spelling: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TextConfig:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: bool(v) for k, v in data.items() if k in known})


# --- normalisation -------------------------------------------------------------------------------

# ASCII punctuation (as BioSyn's string.punctuation) plus every Unicode P* / S* character ("–", "’", "±"),
# which the corpora contain and which would otherwise survive as one-character "words".
_ASCII_PUNCT = set(string.punctuation)


def _is_punct(ch: str) -> bool:
    if ch in _ASCII_PUNCT:
        return True
    if ord(ch) < 128:
        return False
    cat = unicodedata.category(ch)
    return cat[0] == "P" or cat in ("Sm", "Sc", "Sk", "So")


_PUNCT_TABLE: dict[int, str] = {}


def _punct_table() -> dict[int, str]:
    # Built lazily once: maps each punctuation code point of the Basic Multilingual Plane to a space.
    if not _PUNCT_TABLE:
        for cp in range(0x10000):
            ch = chr(cp)
            if _is_punct(ch):
                _PUNCT_TABLE[cp] = " "
    return _PUNCT_TABLE


_WS = re.compile(r"\s+")


def normalize(text: str, cfg: TextConfig | None = None) -> str:
    """Lower-case, replace punctuation by a space, collapse whitespace, strip.

    Deterministic and identical for dictionary names and mentions: "Breast-Ovarian Cancer, type 1" ->
    "breast ovarian cancer type 1". Unicode is NFKC-normalised first so that ligatures and full-width forms
    compare equal to their ASCII spelling.
    """
    cfg = cfg or TextConfig()
    # medic_06Jul2012 writes some names with HTML entities ("Wilms&apos; tumor").
    if "&" in text:
        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    if cfg.lowercase:
        text = text.lower()
    if cfg.remove_punctuation:
        text = text.translate(_punct_table())
    text = _WS.sub(" ", text).strip()
    if cfg.american_spelling:
        text = american_spelling(text)
    return text


# Stems whose British spelling differs, replaced wherever they occur in a word: "aemia" catches
# "anaemia", "hypoglycaemia", "leukaemia"; plain "ae" / "oe" are never touched ("aerosol", "shoe").
_BRITISH = [
    ("aemia", "emia"), ("aemic", "emic"), ("haem", "hem"), ("oedem", "edem"), ("oesophag", "esophag"),
    ("oestr", "estr"), ("foet", "fet"), ("paediatr", "pediatr"), ("orthopaed", "orthoped"),
    ("gynaec", "gynec"), ("anaesth", "anesth"), ("ischaem", "ischem"), ("coeliac", "celiac"),
    ("diarrhoe", "diarrhe"), ("dyspnoe", "dyspne"), ("apnoe", "apne"), ("amenorrhoe", "amenorrhe"),
    ("leukaem", "leukem"), ("leucaem", "leukem"), ("aetiol", "etiol"), ("faec", "fec"),
    ("tumour", "tumor"), ("behaviour", "behavior"), ("colour", "color"), ("manoeuv", "maneuv"),
]
_BRITISH_RE = re.compile("|".join(sorted((re.escape(b) for b, _ in _BRITISH), key=len, reverse=True)))
_BRITISH_MAP = dict(_BRITISH)


def american_spelling(text: str) -> str:
    """British -> American spelling of common medical word stems ("anaemia" -> "anemia"); lower-case input."""
    if "ae" not in text and "oe" not in text and "our" not in text:
        return text
    return _BRITISH_RE.sub(lambda m: _BRITISH_MAP[m.group(0)], text)


# --- the preprocessor ----------------------------------------------------------------------------


class Preprocessor:
    """Applies a :class:`TextConfig` to documents and mentions."""

    def __init__(self, cfg: TextConfig | None = None) -> None:
        self.cfg = cfg or TextConfig()

    def normalize(self, text: str) -> str:
        return normalize(text, self.cfg)

    def abbreviations(self, document_text: str) -> dict[str, str]:
        """Abbreviations defined in a document ({} when resolution is switched off)."""
        if not self.cfg.resolve_abbreviations:
            return {}
        return find_abbreviations(document_text)

    def mention_parts_unsplit(self, mention: str, abbreviations: dict[str, str] | None = None) -> str:
        """The mention with its abbreviations expanded, not split and not normalised."""
        if self.cfg.resolve_abbreviations and abbreviations:
            return expand_abbreviation(mention, abbreviations)
        return mention

    def mention_parts(self, mention: str, abbreviations: dict[str, str] | None = None) -> list[str]:
        """Expanded and split, but not yet normalised, parts of a mention."""
        text = self.mention_parts_unsplit(mention, abbreviations)
        return split_composite(text) if self.cfg.split_composites else [text]

    def mention_queries(self, mention: str, abbreviations: dict[str, str] | None = None) -> list[str]:
        """One normalised query per part of the mention (expand abbreviations, split, normalise)."""
        out = [self.normalize(p) for p in self.mention_parts(mention, abbreviations)]
        out = [q for q in out if q]
        return out or [self.normalize(mention) or mention.strip().lower()]
