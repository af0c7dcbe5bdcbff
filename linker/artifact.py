"""A linker artifact on disk: one folder with everything a :class:`linker.linker.Linker` is made of, written and
read back part by part (``Linker.save`` and ``Linker.load`` assemble the linker)::

    config.json          versions, λ, dense scale, retrieval / index / text configs, counts
    encoder/             encoder.json (its kind) + a transformer's Hugging Face weights and tokenizer, or a
                         BNE/DAN encoder's weights and word vectors
    sparse/              tf-idf vocabulary, idf and the name matrix (none without tf-idf search)
    index/               faiss index, vectors, faiss-row -> name-row map (pgvector: the table's name, the rows)
    table/               name_table.json (names, raw names, concept ids, alt id map)
    first_stage/         optional fast encoder (BNE, DAN) and its index, searched before the transformer
    prior.json           concept prior from training annotations (a tie-breaker, see RetrievalConfig)
    rerank/              optional LATTE re-ranker (:mod:`linker.rerank`); refused with a reason when it does
                         not match this linker, which then ranks by the retriever alone
    calibration.json     optional (:mod:`linker.calibration`)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from linker.calibration import Calibration
from linker.config import LinkerConfig
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.registry import load_encoder
from linker.index import DenseIndex
from linker.pgvector_index import load_index
from linker.rerank.reranker import Reranker, RerankerError
from linker.retrieval import FirstStage
from linker.sparse import SparseEncoder

__all__ = ["ARTIFACT_FORMAT", "ArtifactParts", "read_artifact", "write_artifact"]

ARTIFACT_FORMAT = 1


@dataclass
class ArtifactParts:
    """The parts of one linker artifact, as they are written and as they were read."""

    table: NameTable
    sparse: SparseEncoder
    encoder: NameEncoder | None
    index: DenseIndex | None
    config: LinkerConfig
    metadata: dict[str, Any] = field(default_factory=dict)
    prior: dict[str, float] | None = None
    first_stage: FirstStage | None = None
    calibration: Calibration | None = None
    reranker: Reranker | None = None
    reranker_problem: str | None = None  # why the folder's re-ranker was refused, when it was


def write_artifact(folder: str | Path, parts: ArtifactParts) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts.table.save(folder / "table")
    parts.sparse.save(folder / "sparse")
    if parts.encoder is not None:
        parts.encoder.save(folder / "encoder")
    if parts.index is not None:
        parts.index.save(folder / "index")
    if parts.first_stage is not None:
        parts.first_stage.encoder.save(folder / "first_stage" / "encoder")
        parts.first_stage.index.save(folder / "first_stage" / "index")
    payload = {
        "format": ARTIFACT_FORMAT,
        "config": parts.config.to_dict(),
        "has_encoder": parts.encoder is not None,
        "names": len(parts.table),
        "concepts": len(parts.table.concepts),
        "metadata": parts.metadata,
    }
    (folder / "config.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (folder / "prior.json").write_text(json.dumps(parts.prior or {}, sort_keys=True) + "\n")
    if parts.reranker is not None:
        parts.reranker.save(folder / "rerank", parts.table)
    if parts.calibration is not None:
        parts.calibration.save(folder)


def read_artifact(
    folder: str | Path, quantize: bool | None = None, strict_rerank: bool = False,
    device: torch.device | str | None = None,
) -> ArtifactParts:
    """The parts of the artifact in ``folder``; the arguments are those of :meth:`linker.linker.Linker.load`.
    A re-ranker that does not fit the rest is left out and ``reranker_problem`` says why (``strict_rerank``:
    :class:`RerankerError` is raised)."""
    folder = Path(folder)
    payload = _read_config(folder)
    config = LinkerConfig.from_dict(payload["config"])
    if quantize is not None and quantize != config.quantize:
        # The index was encoded by the model as saved; a different precision would mismatch it.
        raise ValueError(f"{folder} was built with quantize={config.quantize}")
    table = NameTable.load(folder / "table")
    sparse = SparseEncoder.load(folder / "sparse", texts=table.names)
    encoder = index = None
    if payload.get("has_encoder"):
        encoder = load_encoder(folder / "encoder", quantize=config.quantize, device=device)
        index = load_index(folder / "index")
    first_stage = None
    if encoder is not None and (folder / "first_stage" / "encoder").is_dir():
        first_stage = FirstStage(load_encoder(folder / "first_stage" / "encoder"),
                                 load_index(folder / "first_stage" / "index"))
    prior_path = folder / "prior.json"
    prior = json.loads(prior_path.read_text()) if prior_path.exists() else None
    parts = ArtifactParts(table, sparse, encoder, index, config, dict(payload.get("metadata") or {}), prior,
                          first_stage, Calibration.load(folder))
    if (folder / "rerank").exists():
        try:
            parts.reranker = Reranker.load(folder / "rerank", encoder, table)
        except RerankerError as exc:
            if strict_rerank:
                raise
            parts.reranker_problem = str(exc)
    return parts


def _read_config(folder: Path) -> dict[str, Any]:
    """The artifact's config.json, refused with the reason when ``folder`` holds no linker artifact of this format."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such artifact folder")
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder}: not a linker artifact (no config.json)")
    payload: dict[str, Any] = json.loads((folder / "config.json").read_text())
    if "format" not in payload and "model_type" in payload:
        raise ValueError(f"{folder}: a transformer model folder (a base encoder), not a linker artifact: build an "
                         f"index with it first (python -m linker build-index --encoder {folder} ...)")
    if payload.get("format") != ARTIFACT_FORMAT:
        raise ValueError(f"{folder}: unsupported artifact format {payload.get('format')!r}")
    return payload
