"""Abbreviations defined in a document, found and expanded: Schwartz & Hearst (2003), "A simple algorithm for
identifying abbreviation definitions in biomedical text", with a first-letter strategy tried first as Ab3P does
and plural short forms ("VSDs") kept in both spellings. BioSyn resolves abbreviations with Ab3P; this is our own.
"""

from __future__ import annotations

import re

__all__ = ["find_abbreviations", "expand_abbreviation"]

_WS = re.compile(r"\s+")


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
