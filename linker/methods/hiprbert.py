"""HiPrBERT (Cai et al., 2023) as a training method: hierarchy-aware contrastive pre-training of the base
transformer over the synonyms and hierarchies of every chosen dictionary (plus corpus mention->concept
pairs), written as a base-encoder artifact (a Hugging Face folder) that BioSyn runs and index builds start
from (``base_model``, ``LINKER_BASE_MODEL``, ``build-index --encoder``).

Scopes as for BioSyn: ``full`` (the paper: the whole 6-layer model, batch 256, every anchor once) on CUDA,
``student`` on a CPU: the 3-layer student of the base model (:data:`linker.train.STUDENT_LAYERS`) that the
CPU BioSyn default trains anyway, so a BioSyn run started from this artifact keeps all of its layers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from linker.encoders.transformer import TransformerEncoder
from linker.hierarchy.graph import HierarchySource, NoHierarchyError
from linker.hierarchy.training import HierarchyPretrainConfig
from linker.methods.base import BASE_ENCODER, Method, Report, RunContext, TrainingCallbacks, TrainingInputs
from linker.methods.hiprbert_params import HiPrBERTParams, HiPrBERTRecipeConfig

__all__ = ["hiprbert_config", "train_hiprbert_artifact", "HIPRBERT", "MANIFEST"]

MANIFEST = "hierarchy.json"  # what the base encoder was trained on; marks the folder as a base encoder


def _sources(inputs: TrainingInputs, cfg: HiPrBERTRecipeConfig) -> tuple[list[HierarchySource], dict[str, list[str]]]:
    """The training sources without their held-out concepts, and those concepts per source."""
    if not inputs.hierarchies:
        raise ValueError("hierarchy pre-training needs at least one dictionary with a hierarchy")
    flat = [s.name for s in inputs.hierarchies if s.hierarchical and not s.edge_count]
    if flat:
        raise NoHierarchyError.for_dictionary(flat[0], "no parent links")
    if not any(s.hierarchical for s in inputs.hierarchies):
        raise NoHierarchyError("hierarchy pre-training needs at least one dictionary with a hierarchy; only "
                               "synonym sources were given")
    sources, held = [], {}
    for source in inputs.hierarchies:
        kept, out = source.split(cfg.holdout_share, cfg.holdout_seed) if source.hierarchical else (source, [])
        sources.append(kept)
        held[source.name] = out
    return sources, held


def train_hiprbert_artifact(
    inputs: TrainingInputs, config: HiPrBERTRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    """Pre-train the base model on ``inputs.hierarchies`` and save it into ``folder`` (``inputs.table`` and
    ``inputs.pairs`` are not used: corpus pairs arrive as sources)."""
    import torch

    from linker.hierarchy.training import HierarchyPretrainTask
    from linker.train import Trainer

    cfg = config.resolve()
    sources, held = _sources(inputs, cfg)
    torch.set_num_threads(max(1, cfg.pretrain.num_threads))
    encoder = TransformerEncoder(inputs.base_model or None, max_length=cfg.pretrain.max_length, layers=cfg.layers)
    report: Report = dict(inputs.metadata) | {
        "scope": cfg.scope, "device": cfg.device, "encoder_layers": encoder.num_layers,
        "distances": cfg.pretrain.distances, "epochs": cfg.pretrain.epochs, "batch_size": cfg.pretrain.batch_size,
        "max_batches": cfg.pretrain.max_batches, "lr": cfg.pretrain.lr, "seed": cfg.pretrain.seed,
        "holdout_share": cfg.holdout_share,
        "sources": [_describe(s, len(held.get(s.name, ()))) for s in sources],
    }
    callbacks.log(f"hierarchy pre-training on {', '.join(s.name for s in sources)}: scope {cfg.scope} on {cfg.device}")
    callbacks.phase("hierarchy-pretrain")
    task = HierarchyPretrainTask(encoder, sources, cfg.pretrain)
    trainer = Trainer(cfg.pretrain, device=cfg.device, checkpoint_dir=folder / "checkpoints", on_step=callbacks.on_step,
                      on_epoch_end=callbacks.on_epoch_end, phase="hierarchy-pretrain")
    t0 = time.perf_counter()
    report["pretrain"] = trainer.fit(task)
    report["train_s"] = time.perf_counter() - t0
    report["batches_per_epoch"] = task.batches_per_epoch
    encoder.cpu().eval()
    if cfg.holdout_share > 0:
        callbacks.phase("evaluate")
        report["metrics"] = _held_out_metrics(encoder, inputs.hierarchies, held)
    encoder.save(folder)
    manifest = {"method": "hiprbert", "base_model": str(encoder.model_path), "holdout_seed": cfg.holdout_seed} | {
        k: v for k, v in report.items() if k not in ("pretrain", "metrics")}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return report


def _describe(source: HierarchySource, held_out: int) -> dict[str, Any]:
    return {"name": source.name, "concepts": len(source.names), "names": source.name_count,
            "edges": source.edge_count, "hierarchical": source.hierarchical, "held_out": held_out}


def _held_out_metrics(encoder: TransformerEncoder, sources: Any, held: dict[str, list[str]]) -> dict[str, float]:
    """The hierarchy scores on each source's held-out concepts, keyed ``<source>/<metric>``."""
    from linker.hierarchy.evaluation import held_out_pairs, hierarchy_scores

    metrics: dict[str, float] = {}
    for source in sources:
        if source.hierarchical and held.get(source.name):
            pairs = held_out_pairs(source, held[source.name], per_distance=500)
            scores = hierarchy_scores(lambda texts: encoder.encode(list(texts)), pairs)
            metrics |= {f"{source.name}/{k}": v for k, v in scores.items()}
    return metrics


def hiprbert_config(params: HiPrBERTParams, context: RunContext) -> HiPrBERTRecipeConfig:
    """The recipe's config for a person's parameters; the ``None``s stay the scope's defaults."""
    return HiPrBERTRecipeConfig(
        pretrain=HierarchyPretrainConfig(progress_bar=False), scope=params.train_scope, epochs=params.epochs,
        batch_size=params.batch_size, max_batches=params.max_batches, lr=params.lr, distances=params.distances,
        holdout_share=params.holdout_share, device=context.device or None,
    )


HIPRBERT: Method[HiPrBERTRecipeConfig] = Method(
    name="hiprbert", config_class=HiPrBERTRecipeConfig, train=train_hiprbert_artifact,
    description="hierarchy pre-training (HiPrBERT): a base encoder from the dictionaries' synonyms and hierarchies",
    label="Hierarchy pre-training (HiPrBERT)", title="HiPrBERT",
    summary="Hierarchy pre-training (HiPrBERT): a base encoder",
    params=HiPrBERTParams, configure=hiprbert_config, output=BASE_ENCODER, base_model=True,
)
