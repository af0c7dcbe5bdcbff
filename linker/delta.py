"""Curator names over an immutable linker: the names added and taken back since it was built, scored exactly.

A served linker's artifact never changes (as scispaCy's do not). What curators add (synonyms) or take back (an
undone synonym) since the build is a small :class:`Delta`; :meth:`linker.linker.Linker.with_delta` gives a linker
over the base's names plus the delta's that ranks as a fresh build over those names would (the tf-idf vectoriser
fitted on the base's names): each search lists the base's top names (asking for as many more as the delta took
back, which are dropped) merged with the delta's names scored exactly against the query, cut at the same number of
names, so every pool, score and tie-break is the fresh build's.

- :class:`DeltaTable`: the base name table's rows, then one row per new delta name (numbered from ``len(base)``,
  so every tie broken by row falls as in the fresh build), the base rows taken back marked removed; each pair
  added counts once in its name's and concept's support, as :meth:`linker.dictionary.NameTable.add` counts it.
- :class:`DeltaRows`: the delta's rows as the searches see them: their dense vectors (the encoder's and a first
  stage's, in the index's vector dtype) and tf-idf rows (the base's vocabulary and idf).
- :class:`DeltaVectors`: the delta names' vectors, kept between deltas of one base (a delta grows by one name a
  decision: only that one is encoded).
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast, overload

import numpy as np
import scipy.sparse as sp

from linker.dictionary import NameTable, id_variants
from linker.encoders.base import NameEncoder
from linker.index import DenseIndex
from linker.sparse import SparseEncoder
from linker.text import normalize

__all__ = ["Delta", "DeltaRows", "DeltaTable", "DeltaVectors", "merge_top"]

T = TypeVar("T")


@dataclass(frozen=True)
class Delta:
    """Names added to a base linker and base names taken back, as (name, concept id) pairs.

    ``added`` in the order they were made (a new row's place breaks ties as the fresh build's row order would);
    ``removed``: base names no longer in the dictionary (a pair the base does not hold is ignored; an added pair
    spelt, once normalised, as one taken back comes back as a new row). ``watermark``: what the caller knows this
    delta by (the web app: the newest database rows it read); rankings made under another watermark are not this
    delta's.
    """

    added: tuple[tuple[str, str], ...] = ()
    removed: frozenset[tuple[str, str]] = frozenset()
    watermark: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


class _Joined(Sequence[T], Generic[T]):
    """The base's list followed by the delta's, read only (the base is not copied: at 3M names a copy is 25 MB
    and 20 ms a delta)."""

    def __init__(self, base: Sequence[T], extra: Sequence[T]) -> None:
        self._base, self._extra, self._start = base, extra, len(base)

    def __len__(self) -> int:
        return self._start + len(self._extra)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...

    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if 0 <= i < self._start:
            return self._item(i)
        if i < 0 or i >= len(self):
            raise IndexError(i)
        return self._extra[i - self._start]

    def _item(self, i: int) -> T:
        return self._base[i]

    def __iter__(self) -> Iterator[T]:
        yield from self._base
        yield from self._extra


class _Support(_Joined[int]):
    """Row support: the base's counts plus what the delta's pairs attest of base rows."""

    def __init__(self, base: Sequence[int], extra: Sequence[int], bumps: dict[int, int]) -> None:
        super().__init__(base, extra)
        self._bumps = bumps

    def _item(self, i: int) -> int:
        return self._base[i] + self._bumps.get(i, 0)

    def __iter__(self) -> Iterator[int]:
        for i, n in enumerate(self._base):
            yield n + self._bumps.get(i, 0)
        yield from self._extra


class DeltaTable(NameTable):
    """A base name table with a delta's names added and taken back, read only; the base is not changed.

    It answers every lookup a ranking makes (rows, supports, homonyms, ids) as the table of a fresh build over the
    same names would, its rows numbered as described in :mod:`linker.delta`."""

    def __init__(self, base: NameTable, delta: Delta) -> None:  # no super().__init__: every attribute is the base's or joined
        self.base = base
        self.cfg = base.cfg
        start = len(base)
        self.start = start
        removed = set(base.removed)
        for text, cid in delta.removed:
            row = base.row(text, base.resolve_id(cid) or cid)
            if row is not None:
                removed.add(row)
        self.removed = removed
        self.alt_id_map = base.alt_id_map
        self._new_concepts: dict[str, str] = {}  # concept id -> preferred name (its first name), in order
        self._rows_of: dict[str, list[int]] = {}  # concept id -> its delta rows
        self._delta_row: dict[tuple[str, str], int] = {}  # (normalised name, concept id) -> its delta row
        self._owners: dict[str, list[str]] = {}  # normalised name -> the concepts its delta rows are of
        names: list[str] = []
        concept_ids: list[str] = []
        raw_names: list[str] = []
        support: list[int] = []
        bumps: Counter[int] = Counter()
        concept_bumps: Counter[str] = Counter()
        for raw, cid in delta.added:  # as NameTable.add, over the base's live rows and the delta's so far
            primary = self.resolve_id(cid) or cid
            if not base.has_concept(primary):
                self._new_concepts.setdefault(primary, raw)
            name = normalize(raw, self.cfg)
            if not name:
                continue
            row = self._find_row(name, primary)
            if row is None:
                row = start + len(names)
                names.append(name)
                concept_ids.append(primary)
                raw_names.append(raw)
                support.append(0)
                self._rows_of.setdefault(primary, []).append(row)
                self._delta_row[(name, primary)] = row
                self._owners.setdefault(name, []).append(primary)
            if row >= start:
                support[row - start] += 1
            else:
                bumps[row] += 1
            concept_bumps[primary] += 1
        self.delta_names: list[str] = names
        # Read-only views typed as the base's lists: nothing appends to a DeltaTable (add refuses).
        self.names = cast(list[str], _Joined(base.names, names))
        self.concept_ids = cast(list[str], _Joined(base.concept_ids, concept_ids))
        self.raw_names = cast(list[str], _Joined(base.raw_names, raw_names))
        self.row_support = cast(list[int], _Support(base.row_support, support, dict(bumps)))
        self.concept_support = cast(dict[str, int], ChainMap(
            {cid: base.concept_support.get(cid, 0) + n for cid, n in concept_bumps.items()}, base.concept_support))
        self.preferred_names = cast(dict[str, str], ChainMap(self._new_concepts, base.preferred_names))

    # --- what a read-only table refuses ----------------------------------------------------------------------

    def add(self, pairs: Iterable[tuple[str, str]]) -> list[int]:
        raise TypeError("a DeltaTable is read only: make a new Delta")

    def save(self, folder: object) -> None:
        raise TypeError("a DeltaTable is not saved: its base is the artifact, its delta the caller's")

    # --- lookups over base and delta --------------------------------------------------------------------------

    @property
    def concepts(self) -> list[str]:
        return self.base.concepts + list(self._new_concepts)

    def has_concept(self, cid: str) -> bool:
        return self.base.has_concept(cid) or cid in self._new_concepts

    def concept_names(self, cid: str) -> list[int]:
        primary = self.resolve_id(cid)
        if primary is None:
            return []
        return [r for r in self.base.concept_names(primary) if r not in self.removed] + self._rows_of.get(primary, [])

    def concepts_named(self, name: str) -> list[str]:
        normal = normalize(name, self.cfg)
        base = self.base
        owners = [cid for cid in base.concepts_named(normal) if base.row(normal, cid) not in self.removed]
        return owners + self._owners.get(normal, [])

    def _find_row(self, name: str, cid: str) -> int | None:
        row = self.base.row(name, cid)  # normalising a normalised name changes nothing
        if row is not None and row not in self.removed:
            return row
        return self._delta_row.get((name, cid))

    def resolve_id(self, raw_id: str) -> str | None:
        variants = id_variants(raw_id)
        for variant in variants:  # primary ids first, as NameTable.resolve_id
            if self.has_concept(variant):
                return variant
        for variant in variants:
            if variant in self.alt_id_map:
                return self.alt_id_map[variant]
        return None


@dataclass
class DeltaVectors:
    """Delta names' vectors by normalised name, per encoder, kept between the deltas of one base linker."""

    by_encoder: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)

    def vectors(self, encoder: NameEncoder, names: Sequence[str], batch_size: int) -> np.ndarray:
        """[len(names), d] float32: the names not met before are encoded (each distinct one once), the rest read."""
        known = self.by_encoder.setdefault(id(encoder), {})
        missing = list(dict.fromkeys(n for n in names if n not in known))
        if missing:
            for name, vector in zip(missing, encoder.encode(missing, batch_size=batch_size), strict=True):
                known[name] = np.asarray(vector, dtype=np.float32)
        if not names:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        return np.stack([known[n] for n in names])


@dataclass(frozen=True)
class DeltaRows:
    """A delta's rows as retrieval sees them beside the base's indexes (rows ``start`` .. ``start + n - 1``)."""

    start: int
    removed: np.ndarray  # base rows taken back, sorted (int64)
    dense: np.ndarray | None  # [n, d] the encoder's vectors, in the base index's vector dtype
    fast: np.ndarray | None  # [n, d'] the first stage's, likewise
    sparse: sp.csr_matrix | None  # [n, V] tf-idf rows (the base's vocabulary and idf)
    n: int

    @classmethod
    def of(cls, table: DeltaTable, sparse: SparseEncoder | None, encoder: NameEncoder | None, index: DenseIndex | None,
           fast_encoder: NameEncoder | None, fast_index: DenseIndex | None, batch_size: int,
           vectors: DeltaVectors) -> DeltaRows:
        names = table.delta_names
        dense = fast = None
        if encoder is not None and index is not None:
            dense = vectors.vectors(encoder, names, batch_size).astype(index.config.vector_dtype)
        if fast_encoder is not None and fast_index is not None:
            fast = vectors.vectors(fast_encoder, names, batch_size).astype(fast_index.config.vector_dtype)
        tfidf = sparse.transform(names) if sparse is not None and names else None
        removed = np.array(sorted(table.removed), dtype=np.int64)
        return cls(table.start, removed, dense, fast, tfidf, len(names))

    @property
    def hidden(self) -> int:
        """How many more names a base search asks for: the rows taken back may fill its top places."""
        return len(self.removed)

    def merged(self, scores: np.ndarray, rows: np.ndarray, extra: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """A base search's list merged with the delta rows' ``extra`` scores: :func:`merge_top`."""
        return merge_top(scores, rows, self.removed, extra, self.start, m)

    def list_scores(self, vectors: np.ndarray, which: np.ndarray | None) -> np.ndarray:
        """Dense scores of queries [b, d] against every delta row, [b, n] (as a flat search computes them)."""
        if which is None or self.n == 0:
            return np.zeros((len(vectors), 0), dtype=np.float32)
        return np.asarray(np.matmul(which, np.ascontiguousarray(vectors, dtype=np.float32).T).T, dtype=np.float32)

    def sparse_list_scores(self, sparse: SparseEncoder, queries: Sequence[str]) -> np.ndarray:
        """tf-idf scores of queries against every delta row, [b, n]."""
        if self.sparse is None or self.n == 0:
            return np.zeros((len(queries), 0), dtype=np.float32)
        qd = np.ascontiguousarray(sparse.transform(queries).T.toarray(), dtype=np.float32)
        return np.asarray(self.sparse @ qd, dtype=np.float32).T

    def fill_dense(self, out: np.ndarray, which: np.ndarray | None, queries: np.ndarray, rows: np.ndarray) -> None:
        """Write the dense scores of the delta rows among ``rows`` [b, m] into ``out`` [b, m] (as pair scores)."""
        if which is None:
            return
        mine = rows >= self.start
        for i in np.flatnonzero(mine.any(axis=1)):
            at = np.flatnonzero(mine[i])
            out[i, at] = which[rows[i, at] - self.start].astype(np.float32) @ queries[i]

    def fill_sparse(self, out: np.ndarray, sparse: SparseEncoder, queries: Sequence[str], rows: np.ndarray) -> None:
        """Write the tf-idf scores of the delta rows among ``rows`` [b, m] into ``out`` [b, m]."""
        mine = rows >= self.start
        if self.sparse is None or not mine.any():
            return
        at_q, at_c = np.nonzero(mine)
        q = sparse.transform([queries[i] for i in sorted(set(at_q.tolist()))])
        position = {qi: j for j, qi in enumerate(sorted(set(at_q.tolist())))}
        cand = self.sparse[rows[at_q, at_c] - self.start]
        rep = q[np.array([position[int(i)] for i in at_q], dtype=np.int64)]
        out[at_q, at_c] = np.asarray(cand.multiply(rep).sum(axis=1), dtype=np.float32).ravel()


def merge_top(scores: np.ndarray, rows: np.ndarray, removed: np.ndarray, extra: np.ndarray, start: int, m: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """One search's top ``m`` over base and delta: the base's list (``scores``, ``rows`` [b, m'], best first; -1
    rows none) without the rows taken back, merged with the delta rows' ``extra`` scores [b, n] (rows ``start`` ..),
    best first, equal scores by row (as every exact search orders them). [b, m], -1 / -inf padded."""
    b = len(rows)
    out_scores = np.full((b, m), -np.inf, dtype=np.float32)
    out_rows = np.full((b, m), -1, dtype=np.int64)
    delta_rows = np.arange(start, start + extra.shape[1], dtype=np.int64)
    for i in range(b):
        keep = rows[i] >= 0
        if len(removed):
            keep &= ~np.isin(rows[i], removed)
        all_rows = np.concatenate([rows[i][keep], delta_rows])
        all_scores = np.concatenate([scores[i][keep].astype(np.float32), extra[i].astype(np.float32)])
        order = np.lexsort((all_rows, -all_scores))[:m]
        out_rows[i, : len(order)] = all_rows[order]
        out_scores[i, : len(order)] = all_scores[order]
    return out_scores, out_rows
