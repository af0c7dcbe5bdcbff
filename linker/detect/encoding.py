"""A text as the tagger reads it (:class:`linker.detect.tagger.Tagger`), in compact arrays: its words with their
character offsets, the fast tokenizer's subtokens and which word each one is the first subtoken of, the windows
over those tokens, and each token's training label.

The text is tokenized in pieces of :data:`PIECE_WORDS` words cut at word edges, so a long text is never handed to
the tokenizer whole.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from linker.detect.bio import _WORD, LABELS
from linker.detect.gazetteer import token_features
from linker.detect.spans import Span

__all__ = ["Encoded", "encode_text", "window_starts", "word_labels", "PIECE_WORDS"]

# Words tokenized at once: a piece of a long text, small enough to keep the tokenizer's output small.
PIECE_WORDS = 2048


@dataclass
class Encoded:
    """One text as the tagger reads it, in compact arrays (8 bytes or less per word or token).

    ``starts``/``ends``: each word's character offsets. ``ids``: the text's subtoken ids, no special tokens.
    ``first``: for each token, the word it is the first subtoken of, or -1 (a later subtoken, or a token that
    starts in no word). A word no token starts in ("C" of "37°C" when one "##°c" token covered "°C") has no
    reading of its own; see :meth:`linker.detect.tagger.Tagger._decode`. ``feats``: each token's dictionary feature
    (:mod:`linker.detect.gazetteer`), empty when the text was encoded without matches.
    """

    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    ids: array[int] = field(default_factory=lambda: array("q"))
    first: array[int] = field(default_factory=lambda: array("q"))
    feats: array[int] = field(default_factory=lambda: array("b"))

    def word_offsets(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends, strict=True))

    def __len__(self) -> int:
        return len(self.ids)


def encode_text(
    tokenizer: Any, text: str, piece_words: int = PIECE_WORDS, matches: Sequence[Span] | None = None
) -> Encoded:
    """Words and subtokens of ``text`` (``tokenizer``: a ``tokenizers.Tokenizer`` without padding or truncation),
    with each token's dictionary feature when ``matches`` (sorted, non-overlapping dictionary spans) are given."""
    enc = Encoded()
    piece: list[tuple[int, int]] = []
    token_starts = array("q")

    def flush() -> None:
        if not piece:
            return
        base_word = len(enc.starts)
        lo, hi = piece[0][0], piece[-1][1]
        for s, e in piece:
            enc.starts.append(s)
            enc.ends.append(e)
        out = tokenizer.encode(text[lo:hi], add_special_tokens=False)
        j = 0  # the word the walk is at, within the piece
        last_owner = -1
        for tid, (a, b) in zip(out.ids, out.offsets, strict=True):
            if b <= a:
                continue  # an empty token (nothing to read) is dropped
            start = lo + a
            while j < len(piece) and piece[j][1] <= start:
                j += 1
            enc.ids.append(tid)
            if matches is not None:
                token_starts.append(start)
            if j < len(piece) and piece[j][0] <= start and j != last_owner:
                enc.first.append(base_word + j)
                last_owner = j
            else:
                enc.first.append(-1)
        piece.clear()

    for m in _WORD.finditer(text):
        piece.append(m.span())
        if len(piece) >= piece_words:
            flush()
    flush()
    if matches is not None:
        enc.feats = token_features(token_starts, matches)
    return enc


def window_starts(n_tokens: int, content: int, overlap: int) -> list[int]:
    """Where each window of ``content`` tokens starts over ``n_tokens`` tokens, consecutive ones sharing
    ``overlap``; the last window ends at the last token (it may share more)."""
    if n_tokens <= content:
        return [0]
    step = max(1, content - overlap)
    starts = list(range(0, n_tokens - content, step))
    starts.append(n_tokens - content)
    return starts


def word_labels(enc: Encoded, bio: Sequence[str]) -> array[int]:
    """Each token's training label: the label index of the word it is the first subtoken of, else -100 (not
    scored by the loss, as Hugging Face's token classification does)."""
    index = {label: i for i, label in enumerate(LABELS)}
    out = array("q")
    for w in enc.first:
        out.append(index[bio[w]] if w >= 0 else -100)
    return out
