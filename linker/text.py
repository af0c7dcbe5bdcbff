"""Mention and name preprocessing as in BioSyn (Sung et al., ACL 2020, section 4.2).

BioSyn lower-cases and strips punctuation from both mentions and dictionary names, resolves abbreviations
from the document (Ab3P there; here our own Schwartz & Hearst 2003 implementation), splits composite mentions
("breast and ovarian cancer" -> "breast cancer", "ovarian cancer") with heuristic rules in the spirit of
D'Souza & Ng (2015), and merges training mentions into the dictionary (see :mod:`linker.protocol`).

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

__all__ = [
    "TextConfig",
    "normalize",
    "american_spelling",
    "find_abbreviations",
    "expand_abbreviation",
    "split_composite",
    "Preprocessor",
]


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


# --- abbreviations: Schwartz & Hearst (2003) --------------------------------------------------------


def _has_letter(s: str) -> bool:
    return any(c.isalpha() for c in s)


def _has_capital(s: str) -> bool:
    return any(c.isupper() for c in s)


def _valid_short_form(sf: str) -> bool:
    """S&H: at least one letter, and the first character is alphanumeric or an opening parenthesis."""
    return bool(sf) and _has_letter(sf) and (sf[0].isalnum() or sf[0] == "(")


def _best_long_form(sf: str, lf: str) -> str | None:
    """The backward character matching of S&H (their Figure 2).

    Every alphanumeric character of the short form, right to left, must be found in the long form right to
    left; the first character of the short form must additionally start a word of the long form. The long
    form returned starts at the beginning of the word where that first character matched.
    """
    s_idx = len(sf) - 1
    l_idx = len(lf) - 1
    while s_idx >= 0:
        c = sf[s_idx].lower()
        if not c.isalnum():
            s_idx -= 1
            continue
        while l_idx >= 0 and (
            lf[l_idx].lower() != c or (s_idx == 0 and l_idx > 0 and lf[l_idx - 1].isalnum())
        ):
            l_idx -= 1
        if l_idx < 0:
            return None
        l_idx -= 1
        s_idx -= 1
    start = lf.rfind(" ", 0, l_idx + 1) + 1
    return lf[start:]


_LF_TOKEN_SPLIT = re.compile(r"[ \t\n\r\f-]+")


_INITIALS_SKIP = {"of", "the", "and", "in", "with", "to", "for", "a", "an", "on", "or", "by"}


def _initials_long_form(sf: str, lf: str) -> str | None:
    """The shortest run of final words of ``lf`` whose initials spell the short form exactly.

    Tried before the backward matching (as Ab3P tries a first-letter strategy first): for "attenuated
    adenomatous polyposis coli (AAPC)" backward matching alone stops at "adenomatous polyposis coli".
    Function words may be skipped ("deficiency of the ninth component").
    """
    letters = "".join(c.lower() for c in sf if c.isalnum())
    if len(letters) < 2 or not letters.isalpha():
        return None
    words = [w for w in re.split(r"[\s-]+", lf) if w]
    spelled = ""
    for n in range(1, len(words) + 1):
        w = words[-n]
        if w.lower() not in _INITIALS_SKIP or n == len(words):
            spelled = w[0].lower() + spelled
        if spelled == letters:
            if words[-n].lower() in _INITIALS_SKIP:
                return None
            # Back to the original text, which may have hyphens: start at the n-th word from the end.
            start = len(lf)
            for _ in range(n):
                start = max(lf.rfind(" ", 0, start - 1), lf.rfind("-", 0, start - 1))
                if start < 0:
                    break
            return lf[start + 1 :].strip() if start >= 0 else lf.strip()
        if len(spelled) >= len(letters):
            return None
    return None


def _accept_pair(sf: str, lf: str) -> tuple[str, str] | None:
    """S&H ``extractAbbrPair``: best long form plus their length checks."""
    sf, lf = sf.strip(), lf.strip()
    if len(sf) < 2 or len(lf) < 1 or not _valid_short_form(sf):
        return None
    best = _initials_long_form(sf, lf) or _best_long_form(sf, lf)
    if best is None:
        return None
    best = best.strip()
    lf_words = len([t for t in _LF_TOKEN_SPLIT.split(best) if t])
    sf_chars = sum(1 for c in sf if c.isalnum())
    if (
        len(best) < len(sf)
        or f"{sf} " in best
        or best.endswith(sf)
        or lf_words > sf_chars * 2
        or lf_words > sf_chars + 5
        or sf_chars > 10
    ):
        return None
    return sf, best


# Sentence boundaries for the search: S&H cut the long-form candidate at the last ". " or ", " before the
# parenthesis; we do the same and additionally never look past a sentence end.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def _is_plural_short_form(sf: str) -> bool:
    return len(sf) > 2 and sf.endswith("s") and sf[-2].isupper()


def _pairs_in_sentence(sentence: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    cur = sentence
    open_idx = cur.find(" (")
    while open_idx > -1:
        open_idx += 1  # index of "("
        close_idx = cur.find(")", open_idx)
        if close_idx < 0:
            break
        # Nested parentheses inside the short form: "(AT (ataxia))" -> extend to the next ")".
        sf = cur[open_idx + 1 : close_idx]
        if "(" in sf:
            nxt = cur.find(")", close_idx + 1)
            if nxt > -1:
                sf = cur[open_idx + 1 : nxt]
                close_idx = nxt
        cut = max(cur.rfind(". ", 0, open_idx), cur.rfind(", ", 0, open_idx))
        lf = cur[(cut + 2 if cut > -1 else 0) : open_idx]
        for sep in (", ", "; "):
            pos = sf.find(sep)
            if pos > -1:
                sf = sf[:pos]
        if len(sf) > 1 and len(lf) > 1:
            if len(sf.split()) > 2 or len(sf) > len(lf):
                # The "short (long)" variant: the word before the parenthesis is the short form.
                before = cur[: open_idx - 1].rstrip()
                word = before[before.rfind(" ") + 1 :]
                lf, sf = sf, word
                if not _has_capital(sf):
                    sf = ""
            if sf and _valid_short_form(sf):
                pair = _accept_pair(sf, lf)
                if pair is None and _is_plural_short_form(sf):
                    # "ventricular septal defects (VSDs)": the plural "s" has no letter of its own in the
                    # long form (Ab3P handles these too); keep both spellings of the short form.
                    single = _accept_pair(sf[:-1], lf)
                    if single is not None:
                        pair = (sf, single[1])
                if pair is not None:
                    pairs.append(pair)
                    if _is_plural_short_form(pair[0]):
                        pairs.append((pair[0][:-1], pair[1]))
        cur = cur[close_idx + 1 :]
        open_idx = cur.find(" (")
    return pairs


def find_abbreviations(text: str) -> dict[str, str]:
    """Short form -> long form for the abbreviations defined in ``text`` (Schwartz & Hearst, 2003).

    Finds "long form (SF)" and "SF (long form)" patterns, matches the short form's characters backwards in
    the long form, and applies the paper's validity checks (short form 2-10 alphanumeric characters, at most
    two words, containing a letter; long form of at most min(|SF| + 5, 2|SF|) words, not containing the
    short form). The first definition of a short form in the text wins.
    """
    found: dict[str, str] = {}
    for sentence in _SENTENCE_END.split(text):
        for sf, lf in _pairs_in_sentence(sentence):
            found.setdefault(sf, lf)
    return found


def _plural_lookup(token: str, abbreviations: dict[str, str]) -> str | None:
    if token in abbreviations:
        return abbreviations[token]
    # "DMDs", "ALLs": a plural of a defined upper-case short form.
    if len(token) > 2 and token.endswith("s") and token[:-1] in abbreviations and _has_capital(token[:-1]):
        return abbreviations[token[:-1]]
    return None


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'.]*[A-Za-z0-9]|[A-Za-z0-9]")


def expand_abbreviation(mention: str, abbreviations: dict[str, str]) -> str:
    """Replace abbreviations in ``mention`` by their long forms from the same document.

    The whole mention is tried first ("HNPCC" -> "hereditary nonpolyposis colorectal cancer"), then each
    token ("type 1 DM" -> "type 1 diabetes mellitus"). A parenthesised short form right after its own long
    form ("... cancer (HNPCC)") is dropped rather than expanded a second time. Matching is case-sensitive,
    as abbreviations are ("AT" is not "at").
    """
    if not abbreviations:
        return mention
    stripped = mention.strip()
    whole = _plural_lookup(stripped, abbreviations)
    if whole is not None:
        return whole
    out = mention
    for sf, lf in abbreviations.items():
        paren = f"({sf})"
        if paren in out and lf.lower() in out.lower():
            out = _WS.sub(" ", out.replace(paren, " ")).strip()

    def repl(m: re.Match[str]) -> str:
        lf = _plural_lookup(m.group(0), abbreviations)
        return m.group(0) if lf is None else lf

    return _TOKEN.sub(repl, out)


# --- composite mentions --------------------------------------------------------------------------

# Words that make a conjunct a complete disease name on its own ("ataxia-telangiectasia or breast cancer":
# the first conjunct needs no head from the last one). Suffixes are checked on the last word.
_HEAD_WORDS = {
    "cancer", "cancers", "carcinoma", "carcinomas", "tumor", "tumors", "tumour", "tumours", "neoplasm",
    "neoplasms", "disease", "diseases", "syndrome", "syndromes", "disorder", "disorders", "deficiency",
    "deficiencies", "dystrophy", "dystrophies", "defect", "defects", "anomaly", "anomalies", "abnormality",
    "abnormalities", "malformation", "malformations", "failure", "insufficiency", "dysfunction", "injury",
    "toxicity", "lesion", "lesions", "infection", "infections", "palsy", "pain", "loss", "retardation",
    "hyperplasia", "cysts", "cyst", "polyps", "polyp", "ataxia", "atrophy", "sclerosis", "fever", "edema",
    "oedema", "effusion", "effusions", "bleeding", "hemorrhage", "haemorrhage", "infarction", "stroke",
}
_HEAD_SUFFIXES = ("itis", "osis", "oses", "emia", "aemia", "pathy", "pathies", "oma", "omas", "plasia", "trophy",
                  "algia", "ia", "ias", "iasis", "ism", "cele", "rrhea", "rhoea", "uria", "megaly")
# Determiners and vague quantifiers that precede a conjunct without being part of its name.
_FILLER = {"the", "a", "an", "some", "other", "many", "several", "all", "both", "either", "neither", "most",
           "certain", "various", "milder", "more", "less", "severe", "mild"}
_CONJ = {"and", "or", "nor", "and/or", "or/and", "&"}
_PREP = {"of", "in", "to", "on", "at", "for", "with"}
_ADJ_SUFFIXES = ("al", "ary", "ed", "ic", "ive", "ous", "ar", "ant", "ent", "ile", "oid")
# Words that belong to the head noun phrase when they precede it ("muscular dystrophy", "cell carcinoma").
_HEAD_MODIFIERS = {"muscular", "cell", "nervous", "system", "neck", "lung", "bowel", "kidney", "renal",
                   "mellitus", "syndrome"}

_WORD_RE = re.compile(r"\S+")
# Coordinations that name one thing; kept as one token while splitting.
_FIXED_COORDINATIONS = (("head", "and", "neck"), ("attention-deficit/hyperactivity",), ("signs", "and", "symptoms"))
_JOIN = "\x00"


def _is_head(word: str) -> bool:
    w = word.lower().strip(string.punctuation)
    if w in _HEAD_WORDS:
        return True
    return len(w) > 4 and w.endswith(_HEAD_SUFFIXES)


def _is_adjective(word: str) -> bool:
    """Looks like a modifier ("familial", "inherited", "sporadic", "X-linked"), not like a head noun."""
    w = word.lower().strip(string.punctuation)
    return len(w) > 3 and w.endswith(_ADJ_SUFFIXES) and not _is_head(w)


def _conjuncts(words: list[str]) -> list[list[str]] | None:
    """Split a word list at conjunctions and list commas; None unless there is a conjunction word.

    Commas alone make an adjective list, not a composite ("sudden, unexplained death").
    """
    parts: list[list[str]] = [[]]
    saw_conj = False
    for w in words:
        if w.lower() in _CONJ:
            saw_conj = True
            if parts[-1]:
                parts.append([])
            continue
        if w.endswith(",") and len(w) > 1:
            parts[-1].append(w[:-1])
            parts.append([])
            continue
        parts[-1].append(w)
    parts = [p for p in parts if p]
    if not saw_conj or len(parts) < 2:
        return None
    return parts


def _strip_filler(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) - 1 and words[i].lower() in _FILLER:
        i += 1
    return words[i:]


def _is_modifier_of_head(word: str, following: str) -> bool:
    return word.lower() in _HEAD_MODIFIERS and following.lower() not in ("and", "or")


def _split_coordination(words: list[str]) -> list[list[str]] | None:
    """Composite rules for a phrase without a prepositional phrase; None when no rule applies."""
    conj = _conjuncts(words)
    if conj is None:
        return None
    raw_last_len = len(conj[-1])
    conj = [_strip_filler(c) for c in conj]
    last, first = conj[-1], conj[0]
    if len(first) >= 2 and all(len(c) == 1 and _is_head(c[0]) for c in conj[1:]):
        # Left-shared modifier: "pancreatic cysts and tumors", "endometrial hyperplasia or cancer".
        return [first] + [first[:-1] + c for c in conj[1:]]
    if all(_is_head(c[-1]) for c in conj) and not (len(first) == 1 and len(last) > 1 and not _is_head(first[0])):
        # Every conjunct is a complete name: "ataxia-telangiectasia or breast cancer".
        return conj
    if raw_last_len < 2 or any(_is_head(c[-1]) for c in conj[:-1]):
        return None
    if any(len(c) > 1 and c[-1].lower() not in _HEAD_MODIFIERS for c in conj[1:-1]):
        # A middle conjunct that is a phrase of its own ("simple and sustained attention, working memory,
        # and verbal memory") means the last conjunct's head is not shared.
        return None
    # Right-shared head: "breast and ovarian cancer", "colorectal, endometrial, and ovarian cancers",
    # "colon and some other cancers" (fillers dropped). The head is the last word, extended leftwards over
    # words that belong to it ("Duchenne and Becker muscular dystrophy" shares "muscular dystrophy").
    head_len = 1
    while head_len < len(last) - 1 and _is_modifier_of_head(last[-head_len - 1], last[-head_len]):
        head_len += 1
    head = last[-head_len:]
    prefix: list[str] = []
    if len(first) > 1:
        # "familial breast and ovarian cancer": leading modifiers of the first conjunct are shared too;
        # a first conjunct that is a phrase of its own ("heart rate and cardiac output") is not split.
        if not all(_is_adjective(w) for w in first[:-1]):
            return None
        prefix, conj[0] = first[:-1], first[-1:]
    return [prefix + c + head for c in conj[:-1]] + [prefix + last]


def _split_words(words: list[str]) -> list[list[str]] | None:
    """The composite rules on a tokenised mention; None when no rule applies."""
    for i, w in enumerate(words):
        if w.lower() not in _PREP or not 0 < i < len(words) - 1:
            continue
        left, right = words[:i], words[i + 1 :]
        conj_left, conj_right = _conjuncts(left), _conjuncts(right)
        if conj_right and not conj_left:
            # "cancer of the renal pelvis, ureter or bladder", "demyelination in the central and peripheral
            # nervous system": the coordination is inside the object; the left part is shared.
            lead: list[str] = []
            if right[0].lower() in ("the", "a", "an"):
                lead, right = right[:1], right[1:]
            parts = _split_coordination(right) or _conjuncts(right) or [right]
            return [left + [w] + lead + p for p in parts]
        if conj_left and not conj_right:
            # "A and B of X": the prepositional phrase is shared to the right; "inherited and sporadic forms
            # of the cancer" first shares "forms".
            shared: list[list[str]] | None = None
            if len(conj_left[0]) == 1 and _is_adjective(conj_left[0][0]):
                shared = _split_coordination(left)
            return [p + words[i:] for p in (shared or [_strip_filler(c) for c in conj_left])]
        # Coordination on both sides (or none before the first preposition): too ambiguous to split.
        return None
    return _split_coordination(words)


_SLASH_PAIR = re.compile(r"^([A-Za-z][A-Za-z-]*)/([A-Za-z][A-Za-z-]*)$")


def _protect_fixed(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        for fixed in _FIXED_COORDINATIONS:
            n = len(fixed)
            if n > 1 and tuple(w.lower().rstrip(",") for w in words[i : i + n]) == fixed:
                out.append(_JOIN.join(words[i : i + n]))
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return out


def split_composite(mention: str) -> list[str]:
    """Split a composite mention into its parts; ``[mention]`` when it is not a composite.

    A composite needs a conjunction word ("and", "or", "and/or", "nor") or an "X/Y" word; commas alone
    are an adjective list ("sudden, unexplained death"). Rules, tried in order:
    - coordination inside a prepositional object shares the left part: "cancer of the renal pelvis and
      bladder" -> "cancer of the renal pelvis", "cancer of the bladder"; "A and B of X" shares "of X";
      coordination on both sides of the preposition is left alone;
    - a left modifier is shared when the later conjuncts are single head nouns: "pancreatic cysts and
      tumors" -> "pancreatic cysts", "pancreatic tumors";
    - conjuncts that are each complete names stay as they are: "ataxia-telangiectasia or breast cancer";
    - otherwise the last conjunct's head is shared to the right: "breast and ovarian cancer" ->
      "breast cancer", "ovarian cancer"; "X, Y and Z cancers"; "colon and some other cancers" ->
      "colon cancers", "cancers" (fillers like "some other" dropped); leading adjectives of the first
      conjunct are shared too ("familial breast and ovarian cancer");
    - "X/Y head" is read as "X and Y head" ("Duchenne/Becker muscular dystrophy").
    A mention with a parenthesis is not split. Splitting never looks at a dictionary, so these are
    heuristics: on the training sets they reproduce the number of gold parts for most composites (the
    figures are in the module's tests and the benchmark notes).
    """
    text = _WS.sub(" ", mention).strip()
    if not text:
        return [mention]
    words = _WORD_RE.findall(text)
    # "X/Y" inside a word is a coordination of X and Y (but not "and/or", which is one conjunction).
    expanded: list[str] = []
    for w in words:
        m = _SLASH_PAIR.match(w)
        if m and w.lower() not in ("and/or", "or/and") and (w.lower(),) not in _FIXED_COORDINATIONS:
            expanded.extend([m.group(1), "and", m.group(2)])
        else:
            expanded.append(w)
    # A parenthetical inside a composite ("obstructive (P less than 0.05) and central apnoea") is noise.
    if "(" in text:
        return [mention]
    split = _split_words(_protect_fixed(expanded))
    if not split or len(split) < 2:
        return [mention]
    parts = [" ".join(p).replace(_JOIN, " ").strip(" ,;") for p in split]
    if any(not p for p in parts) or len(set(p.lower() for p in parts)) < len(parts):
        return [mention]
    return parts


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
