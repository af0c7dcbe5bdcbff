"""``build-index``: a dictionary (and training mentions) encoded into a linker artifact, no training.

An index built with a trained linker artifact as its encoder scores as that linker was trained to: its λ (the
sparse weight BioSyn learns), dense scale and concept-prior weight, and its concept prior, are carried unless a
flag sets one (:func:`linker.scoring.scoring_for`). A bare encoder folder has no trained weights: the defaults of
:class:`~linker.retrieval.RetrievalConfig` then. The summary and a line on stderr say which were used.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from linker.cli.common import read_docs
from linker.config import LinkerConfig
from linker.data import iter_dictionary
from linker.device import choose_device
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.registry import load_encoder
from linker.encoders.transformer import TransformerEncoder
from linker.index_kinds import IndexConfig
from linker.linker import Linker
from linker.scoring import scoring_for
from linker.text import Preprocessor, TextConfig

__all__ = ["build_index_main", "encoder_folder"]


def build_index_main(
    dictionary: str | Path,
    out: str | Path,
    encoder_path: str | Path | None = None,
    merge_train: Sequence[str | Path] = (),
    mention_types: set[str] | None = None,
    index_kind: str = "auto",
    sparse_weight: float | None = None,
    dense_scale: float | None = None,
    sparse_only: bool = False,
    quantize: bool = False,
    first_stage: str | Path | None = None,
    cascade: str = "exact",
    sparse_search: bool = True,
    device: str | None = None,
    hnsw_storage: str = "flat",
    vector_dtype: str = "auto",
    prior_weight: float | None = None,
) -> dict[str, Any]:
    """An artifact folder from a dictionary file (+ training mentions merged) and an encoder folder (any kind;
    a linker artifact stands for its encoder). ``first_stage``: a fast encoder (BNE, DAN) indexed in front of
    the transformer, with the transformer encoding only what ``cascade`` says. A transformer encodes on
    :func:`linker.device.choose_device` (``device``, else LINKER_DEVICE, else CUDA where there is one).
    ``sparse_weight``, ``dense_scale``, ``prior_weight``: None keeps a linker artifact's trained value (else the
    default); see :func:`linker.scoring.scoring_for`."""
    from linker.protocol import training_pairs

    text_cfg = TextConfig()
    table = NameTable.from_records(iter_dictionary(dictionary), text_cfg)
    merged = 0
    if merge_train:
        merged = len(table.add(training_pairs(read_docs(merge_train), table, Preprocessor(text_cfg), mention_types)))
    encoder: NameEncoder | None = None
    if not sparse_only:
        target = choose_device(device)
        encoder = load_encoder(encoder_folder(encoder_path), device=target) if encoder_path else TransformerEncoder()
        if isinstance(encoder, TransformerEncoder):
            encoder.place(target)
    fast = load_encoder(encoder_folder(first_stage)) if first_stage and encoder is not None else None
    scoring = scoring_for(encoder_path, sparse_weight, dense_scale, prior_weight)
    known = set(table.concepts)  # the trained prior of the concepts this dictionary has
    scoring = replace(scoring, concept_prior={cid: v for cid, v in scoring.concept_prior.items() if cid in known})
    print(f"build-index: scoring with {scoring.describe()}", file=sys.stderr, flush=True)
    config = LinkerConfig(
        text=text_cfg,
        retrieval=replace(scoring.retrieval, sparse_search=sparse_search,
                          cascade="exact" if fast is not None and cascade == "exact" else "off"),
        index=IndexConfig(kind=index_kind, hnsw_storage=hnsw_storage, vector_dtype=vector_dtype),  # type: ignore[arg-type]
        quantize=quantize,
    )
    t0 = time.perf_counter()
    linker = Linker.build(table, encoder, config, metadata={"dictionary": str(dictionary), "merged_train": merged},
                          first_stage_encoder=fast)
    elapsed = time.perf_counter() - t0
    linker.retriever.concept_prior = dict(scoring.concept_prior)  # a fresh linker no one ranks with yet: set in place
    linker.save(out)
    return {"names": len(table), "merged_train_names": merged, "build_s": elapsed, "names_per_s": len(table) / elapsed,
            "encode_device": linker.metadata.get("encode_device"),
            "encode_batch_size": linker.metadata.get("encode_batch_size"), "scoring": scoring.summary()}


def encoder_folder(path: str | Path) -> Path:
    """An encoder folder, or a linker artifact's ``encoder/``."""
    path = Path(path)
    if (path / "config.json").exists() and (path / "encoder").is_dir():
        return path / "encoder"
    return path

