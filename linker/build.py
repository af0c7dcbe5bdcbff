"""Building a linker's search structures over its name table: the tf-idf matrix, the dense index of the encoder's
vectors, and a fast first stage's index beside it (:meth:`linker.linker.Linker.build` assembles the linker from
them). Everything stays in memory: nothing is written until the linker is saved."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from linker.config import LinkerConfig
from linker.device import device_label
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.transformer import TransformerEncoder, cached_features
from linker.index import DenseIndex
from linker.pgvector_index import build_index
from linker.retrieval import FirstStage, encode_names
from linker.sparse import SparseEncoder

__all__ = ["BUILD_PHASES", "BuildProgress", "SearchStructures", "build_search", "encoding_device"]

# ``progress(phase, done, total)`` of :func:`build_search`: each phase is reported when it starts (done = 0) and as
# it advances; "encode" and "first-stage" count distinct names. It may raise to stop the build (nothing is written:
# the build keeps everything in memory).
BuildProgress = Callable[[str, int, int], None]
BUILD_PHASES = ("tf-idf", "encode", "first-stage", "faiss")


@dataclass
class SearchStructures:
    """What retrieval searches, built over one name table's rows."""

    sparse: SparseEncoder
    index: DenseIndex | None  # None without an encoder: sparse search only
    first_stage: FirstStage | None
    # Build timings (sparse_build_s, dense_build_s, first_stage_build_s), where and in what batches the names were
    # encoded (encode_device, encode_batch_size), and how many names there are.
    metadata: dict[str, Any] = field(default_factory=dict)


def encoding_device(encoder: NameEncoder) -> torch.device:
    """Where ``encoder.encode`` computes: a transformer's model (the CPU for its int8 copy), else the device of the
    module's weights (BNE and DAN, kept on the CPU unless a trainer moved them)."""
    if isinstance(encoder, TransformerEncoder):
        return encoder.encode_device
    if isinstance(encoder, torch.nn.Module):
        first = next(encoder.parameters(), None)
        if first is not None:
            return first.device
    return torch.device("cpu")


def build_search(
    table: NameTable,
    encoder: NameEncoder | None,
    config: LinkerConfig,
    feature_cache: str | Path | None = None,
    first_stage_encoder: NameEncoder | None = None,
    progress: BuildProgress | None = None,
) -> SearchStructures:
    """Fit tf-idf on the table's names and encode them into a dense index (no encoder: sparse only); with a
    ``first_stage_encoder`` (and an encoder), index its vectors too. The arguments are those of
    :meth:`linker.linker.Linker.build`."""
    meta: dict[str, Any] = {}

    def start(name: str, total: int) -> None:
        if progress is not None:
            progress(name, 0, total)

    def reporting(name: str) -> Callable[[int, int], None] | None:  # encode_names reports its own start
        return None if progress is None else (lambda done, of: progress(name, done, of))

    t0 = time.perf_counter()
    start("tf-idf", len(table))
    # Without tf-idf search (sparse_search off) tf-idf only scores the dense candidates: no name matrix kept.
    keep_matrix = encoder is None or config.retrieval.sparse_search
    sparse = SparseEncoder().fit(table.names, keep_matrix=keep_matrix)
    meta["sparse_build_s"] = time.perf_counter() - t0
    index: DenseIndex | None = None
    if encoder is not None:
        t0 = time.perf_counter()
        vectors = _encode_table(table, encoder, config, meta, feature_cache, start, reporting("encode"))
        start("faiss", len(vectors))
        index = build_index(vectors, config.index)
        meta["dense_build_s"] = time.perf_counter() - t0
    first_stage = None
    if first_stage_encoder is not None and encoder is not None:
        t0 = time.perf_counter()
        fast = encode_names(first_stage_encoder, table.names, batch_size=config.encode_batch_size,
                            progress=reporting("first-stage"))
        start("faiss", len(fast))
        first_stage = FirstStage(first_stage_encoder, build_index(fast, config.index))
        meta["first_stage_build_s"] = time.perf_counter() - t0
    meta["names"] = len(table)
    return SearchStructures(sparse, index, first_stage, meta)


def _encode_table(
    table: NameTable,
    encoder: NameEncoder,
    config: LinkerConfig,
    meta: dict[str, Any],
    feature_cache: str | Path | None,
    start: Callable[[str, int], None],
    progress: Callable[[int, int], None] | None,
) -> np.ndarray:
    """The dense vectors of the table's names; records in ``meta`` where they were encoded and in what batches."""
    transformer = encoder if isinstance(encoder, TransformerEncoder) else None
    if transformer is not None and config.quantize and not transformer.quantized:
        transformer.quantize()
    meta["encode_device"] = device_label(encoding_device(encoder))
    meta["encode_batch_size"] = (transformer.run_batch_size(config.encode_batch_size) if transformer is not None
                                 else config.encode_batch_size)
    if feature_cache is not None and transformer is not None and not transformer.quantized:
        # The feature cache path reports no per-name progress.
        start("encode", len(table))
        feats = cached_features(transformer, table.names, feature_cache, config.encode_batch_size)
        return transformer.project_numpy(feats)
    return encode_names(encoder, table.names, batch_size=config.encode_batch_size, progress=progress)
