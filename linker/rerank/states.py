"""Token states for the re-ranker from the linker's own transformer, which stays frozen.

Why frozen: the linker's transformer was trained on names (BioSyn); the re-ranker learns on top of its
token states (BiLSTM, cross-attention, types), so the states of every training mention and candidate name
are computed once and training runs in minutes on a CPU. At inference a mention costs one transformer pass
and its candidate names come from a cache (names recur across mentions).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TypeVar

import torch

from linker.encoders.transformer import TransformerEncoder
from linker.overlap import beside, in_parallel
from linker.rerank.context import MentionContext

__all__ = ["TokenStates", "Padded", "pad", "FLAG_PAD", "FLAG_QUERY", "FLAG_MENTION", "FLAG_CONTEXT", "N_FLAGS"]

# What a mention-side token is: the flags enter the model as an embedding added to the token state.
FLAG_PAD, FLAG_QUERY, FLAG_MENTION, FLAG_CONTEXT = 0, 1, 2, 3
N_FLAGS = 4

Item = tuple[torch.Tensor, torch.Tensor]  # states [t, h] (float16 when cached), flags [t] (int64)
Padded = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # states [b, t, h], mask [b, t], flags [b, t]
K = TypeVar("K", str, MentionContext)


def pad(items: Sequence[Item], dtype: torch.dtype = torch.float32) -> Padded:
    """Variable-length items -> a padded batch."""
    length = max(1, max((s.shape[0] for s, _ in items), default=1))
    dim = items[0][0].shape[1]
    states = torch.zeros(len(items), length, dim, dtype=dtype)
    mask = torch.zeros(len(items), length, dtype=torch.bool)
    flags = torch.zeros(len(items), length, dtype=torch.long)
    for i, (s, f) in enumerate(items):
        n = s.shape[0]
        states[i, :n] = s.to(dtype)
        mask[i, :n] = True
        flags[i, :n] = f
    return states, mask, flags


class TokenStates:
    """``mentions(contexts)`` / ``names(names)`` -> one :data:`Item` per input (special tokens dropped)."""

    def __init__(self, encoder: TransformerEncoder, mention_max_length: int = 64, name_max_length: int = 24,
                 batch_size: int = 64, cache_size: int = 100_000) -> None:
        self.encoder = encoder
        self.mention_max_length = mention_max_length
        self.name_max_length = name_max_length
        self.batch_size = batch_size
        # Both caches are bounded: a serving linker sees an unbounded stream of mentions.
        self._name_cache: OrderedDict[str, Item] = OrderedDict()
        self._mention_cache: OrderedDict[MentionContext, Item] = OrderedDict()
        self._cache_size = cache_size
        # A web process serves one linker to several threads: a lookup, its move to the end and an eviction by
        # another thread must not interleave (a KeyError). Encoding runs outside the lock; two threads may then
        # encode the same item, and both results are equal.
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def _run(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        model = self.encoder.model
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                device = self.encoder.device
                return model(**{k: v.to(device) for k, v in batch.items()}).last_hidden_state.float().cpu()
        finally:
            model.train(was_training)

    def mentions(self, contexts: Sequence[MentionContext]) -> list[Item]:
        """Query [SEP] window, each token flagged as query, mention (inside the window) or context."""
        with self._lock:
            found = {c: self._mention_cache[c] for c in dict.fromkeys(contexts) if c in self._mention_cache}
        missing = [c for c in dict.fromkeys(contexts) if c not in found]
        found.update(zip(missing, self._encode_mentions(missing), strict=True))
        self._remember(self._mention_cache, found)
        return [found[c] for c in contexts]

    def _remember(self, cache: OrderedDict[K, Item], items: dict[K, Item]) -> None:
        """Put ``items`` last in ``cache`` (the most recently used) and evict the least recently used beyond the size."""
        with self._lock:
            for key, item in items.items():
                cache[key] = item
                cache.move_to_end(key)
            while len(cache) > self._cache_size:
                cache.popitem(last=False)

    def _encode_mentions(self, contexts: Sequence[MentionContext]) -> list[Item]:
        out: list[Item] = []
        tok = self.encoder.tokenizer
        for start in range(0, len(contexts), self.batch_size):
            chunk = contexts[start : start + self.batch_size]
            windows = [c.window() or c.mention for c in chunk]
            enc = tok([c.query or c.mention for c in chunk], windows, padding=True, truncation="only_second",
                      max_length=self.mention_max_length, return_offsets_mapping=True, return_tensors="pt")
            hidden = self._run({k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc})
            for i, ctx in enumerate(chunk):
                m_start = len(ctx.left) + 1 if ctx.left else 0
                m_end = m_start + len(ctx.mention)
                seq_ids = enc.sequence_ids(i)
                keep: list[int] = []
                flags: list[int] = []
                for j, sid in enumerate(seq_ids):
                    if sid is None:
                        continue
                    keep.append(j)
                    if sid == 0:
                        flags.append(FLAG_QUERY)
                    else:
                        a, b = (int(x) for x in enc["offset_mapping"][i, j])
                        flags.append(FLAG_MENTION if a < m_end and b > m_start else FLAG_CONTEXT)
                out.append((hidden[i, keep].half(), torch.tensor(flags, dtype=torch.long)))
        return out

    def names(self, names: Sequence[str]) -> list[Item]:
        with self._lock:
            found = {n: self._name_cache[n] for n in dict.fromkeys(names) if n in self._name_cache}
        # Length-sorted batches pad least (names run from "AT" to 20-word syndromes). A panel's few new names go
        # in two halves of alike lengths, one of them on a second core where torch keeps to one thread.
        missing = sorted((n for n in dict.fromkeys(names) if n not in found), key=len)
        if 4 <= len(missing) <= self.batch_size and in_parallel():
            other = beside(self.encode_names, missing[1::2])
            found.update(self.encode_names(missing[0::2]))
            found.update(other.result())
        else:
            found.update(self.encode_names(missing))
        self._remember(self._name_cache, found)
        return [found[n] for n in names]

    def encode_names(self, names: Sequence[str]) -> dict[str, Item]:
        """``names`` through the transformer, not cached (:meth:`names` caches)."""
        out: dict[str, Item] = {}
        tok = self.encoder.tokenizer
        for start in range(0, len(names), self.batch_size):
            chunk = names[start : start + self.batch_size]
            enc = tok(list(chunk), padding=True, truncation=True, max_length=self.name_max_length,
                      return_tensors="pt", return_special_tokens_mask=True)
            hidden = self._run({k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc})
            for i, name in enumerate(chunk):
                keep = ((enc["attention_mask"][i] == 1) & (enc["special_tokens_mask"][i] == 0)).nonzero().flatten()
                if keep.numel() == 0:
                    keep = torch.tensor([0])
                out[name] = (hidden[i, keep].half(), torch.full((keep.numel(),), FLAG_MENTION, dtype=torch.long))
        return out
