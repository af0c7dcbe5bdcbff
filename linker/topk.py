"""Exact top-k of each column of a [rows, queries] score matrix, by block-max pruning.

Shared by the sparse (tf-idf) and the dense (flat inner-product) searches: both produce a score for every
name and query, and a plain ``argpartition`` over 73K names per query costs more than the product itself.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "top_k_columns", "padded_rows"]

# Rows per block for the block-max pruning.
BLOCK = 64


def padded_rows(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`BLOCK` (the row count ``top_k_columns`` expects)."""
    return -(-n // BLOCK) * BLOCK


def top_k_columns(by_name: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top k of each column of a [N_padded, b] score matrix (N_padded a multiple of BLOCK).

    Block-max pruning, exact: the k largest scores of a query lie in at most k blocks of BLOCK rows, and
    those blocks are among the k blocks with the largest maxima. So we reduce each block to its maximum (one
    contiguous pass, no transpose of the big matrix), keep the k best blocks per query, and select among
    their k * BLOCK scores. About 3x faster than an argpartition over all names.
    """
    n_pad, b = by_name.shape
    n_blocks = n_pad // BLOCK
    cols = np.arange(b)[:, None]
    block_max = top_blocks = None
    if k * 4 > n_blocks:
        rows = np.broadcast_to(np.arange(n_pad), (b, n_pad))
        cand = np.ascontiguousarray(by_name.T)
    else:
        block_max = by_name.reshape(n_blocks, BLOCK, b).max(axis=1).T  # [b, n_blocks]
        top_blocks = np.argpartition(-block_max, k - 1, axis=1)[:, :k]  # [b, k]
        rows = (top_blocks[:, :, None] * BLOCK + np.arange(BLOCK)).reshape(b, -1)  # [b, k * BLOCK]
        cand = by_name[rows, cols]
    part = np.argpartition(-cand, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(cand, part, axis=1)
    idx = np.take_along_axis(rows, part, axis=1)
    # Where rows tied on the k-th score straddle the cut (more of them among the candidates than were kept, or in
    # a block left out), keep the lowest rows of the tie.
    kth = vals.min(axis=1)  # [b]
    straddling = (cand == kth[:, None]).sum(axis=1) > (vals == kth[:, None]).sum(axis=1)
    if block_max is not None and top_blocks is not None:
        at_cut = block_max == kth[:, None]
        straddling |= at_cut.sum(axis=1) > np.take_along_axis(at_cut, top_blocks, axis=1).sum(axis=1)
    for j in np.flatnonzero(straddling):
        _lowest_rows_at_the_cut(by_name[:, j], kth[j], vals[j], idx[j])
    # lexsort: the last key is primary -> descending score, then ascending row index.
    order = np.lexsort((idx, -vals), axis=1)
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(idx, order, axis=1).astype(np.int64)


def _lowest_rows_at_the_cut(column: np.ndarray, kth: float, vals: np.ndarray, idx: np.ndarray) -> None:
    """A column's top k with its tie on the k-th score cut by row, the lowest kept (into ``vals``, ``idx``).

    argpartition cuts a tie anywhere; a search whose lists must not depend on how (a base index and a delta merged
    list what one index over all the names lists: linker.delta) needs the cut by row. Ties are exact equals:
    one name under several concepts has one vector."""
    better = np.flatnonzero(column > kth)
    keep = np.concatenate([better, np.flatnonzero(column == kth)[: len(vals) - len(better)]])
    vals[:] = column[keep]
    idx[:] = keep
