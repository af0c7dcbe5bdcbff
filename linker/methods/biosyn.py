"""BioSyn (Sung et al., ACL 2020) as a training method: SapBERT-style synonym pre-training over the dictionary
(unless skipped), BioSyn over the training pairs, then a linker artifact with the pairs merged into the
dictionary, λ as learned, and the concept prior (:func:`linker.methods.base.prior_counts`).

The ``train_scope`` is resolved against the device once (``auto``: ``full`` on CUDA, ``student`` on a CPU);
every setting left ``None`` takes the scope's default (:data:`linker.train.SCOPE_DEFAULTS`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from linker.config import LinkerConfig
from linker.encoders.transformer import TransformerEncoder, model_depth
from linker.linker import Linker
from linker.methods.base import Method, Report, RunContext, TrainingCallbacks, TrainingInputs
from linker.methods.biosyn_params import BioSynParams
from linker.retrieval import RetrievalConfig
from linker.train import SCOPE_DEFAULTS, BioSynConfig, SynonymPretrainConfig, choose_device, resolve_scope

__all__ = ["BioSynRecipeConfig", "biosyn_config", "train_biosyn_artifact", "BIOSYN", "HISTORIES"]

HISTORIES = ("pretrain", "biosyn")  # the report's per-epoch histories (kept out of the artifact's config)


@dataclass
class BioSynRecipeConfig:
    """The BioSyn and pre-training hyperparameters and the run options around them.

    ``epochs``, ``lr``, ``pretrain_epochs``, ``pretrain_max_pairs`` and ``layers`` override the scope's
    defaults (``None``: the scope's); they win over the same fields of ``biosyn`` and ``pretrain``, whose
    ``train_scope`` is set too. Pre-training shares ``biosyn``'s threads and progress bar. ``feature_cache``
    (a folder for frozen-transformer features) is used by the ``head`` scope only.
    """

    biosyn: BioSynConfig = field(default_factory=BioSynConfig)
    pretrain: SynonymPretrainConfig = field(default_factory=SynonymPretrainConfig)
    scope: str = "auto"  # auto | full | student | head
    epochs: int | None = None
    lr: float | None = None
    pretrain_epochs: int | None = None
    pretrain_max_pairs: int | None = None  # 0: every synonym pair
    layers: tuple[int, ...] | None = None  # base-model layers kept
    # Synonym pre-training is skipped when asked, and always over a hierarchy pre-training base encoder
    # (a folder with hierarchy.json): that base was already trained on the dictionaries' synonyms (its d0 = 0
    # threshold) over far more pairs than this step's 20K on a CPU.
    skip_pretrain: bool = False
    max_queries: int = 0  # train on the first N queries only (0: all); smoke runs
    prior_weight: float = 1e-3
    device: str | None = None  # None: cuda if there is one, else cpu
    feature_cache: str | None = None

    def resolve(self) -> BioSynRecipeConfig:
        """A copy with the device and scope decided and every scope default filled in."""
        device = str(choose_device(self.device))
        scope = resolve_scope(self.scope, device)
        defaults = SCOPE_DEFAULTS[scope]
        cache = self.feature_cache if scope == "head" else None
        epochs = defaults.epochs if self.epochs is None else self.epochs
        lr = defaults.lr if self.lr is None else self.lr
        pretrain_epochs = defaults.pretrain_epochs if self.pretrain_epochs is None else self.pretrain_epochs
        max_pairs = defaults.pretrain_max_pairs if self.pretrain_max_pairs is None else self.pretrain_max_pairs
        biosyn = replace(self.biosyn, epochs=epochs, lr=lr, train_scope=scope, feature_cache=cache)
        pretrain = replace(self.pretrain, epochs=pretrain_epochs, max_pairs=max_pairs, train_scope=scope,
                           num_threads=biosyn.num_threads, progress_bar=biosyn.progress_bar, feature_cache=cache)
        return replace(self, biosyn=biosyn, pretrain=pretrain, scope=scope, device=device, epochs=epochs, lr=lr,
                       pretrain_epochs=pretrain_epochs, pretrain_max_pairs=max_pairs,
                       layers=defaults.layers if self.layers is None else tuple(self.layers))


def train_biosyn_artifact(
    inputs: TrainingInputs, config: BioSynRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    """Pre-training, BioSyn, the linker: writes the artifact into ``folder``; ``inputs.table`` gains the
    training pairs as names."""
    import torch

    from linker.pretrain import pretrain_synonyms

    cfg = config.resolve()
    torch.set_num_threads(max(1, cfg.biosyn.num_threads))
    if not cfg.skip_pretrain and _hierarchy_base(inputs.base_model):
        callbacks.log("the base encoder comes from hierarchy pre-training: synonym pre-training skipped")
        cfg = replace(cfg, skip_pretrain=True)
    layers = _layers_for(inputs.base_model or None, cfg.layers, callbacks)
    encoder = TransformerEncoder(inputs.base_model or None, max_length=cfg.biosyn.max_length, layers=layers)
    report = _settings(inputs, cfg, encoder)
    callbacks.log(f"training {report['training_pairs']} pairs, scope {cfg.scope} on {cfg.device}")
    t0 = time.perf_counter()
    if not cfg.skip_pretrain:
        callbacks.phase("synonym-pretrain")
        report["pretrain"] = pretrain_synonyms(encoder, inputs.table, cfg.pretrain, on_step=callbacks.on_step,
                                               on_epoch_end=callbacks.on_epoch_end, device=cfg.device)
    report["pretrain_s"] = time.perf_counter() - t0
    sparse_weight = _biosyn(encoder, inputs, cfg, callbacks, folder, report)
    report["train_total_s"] = time.perf_counter() - t0
    callbacks.phase("index")
    linker = _linker(encoder, inputs, cfg, sparse_weight, report, callbacks.on_index)
    linker.save(folder)
    if callbacks.evaluate is not None:
        callbacks.phase("evaluate")
        report["metrics"] = callbacks.evaluate(linker)
    return report


def _hierarchy_base(base_model: str | Path | None) -> bool:
    from linker.methods.hiprbert import MANIFEST

    return base_model is not None and (Path(base_model) / MANIFEST).is_file()


def _layers_for(base_model: str | Path | None, layers: tuple[int, ...] | None,
                callbacks: TrainingCallbacks) -> tuple[int, ...] | None:
    """The layers to keep of this base: all of a base that is already a student (a CPU hierarchy
    pre-training artifact has the student's 3 layers), else the scope's choice."""
    if layers is None:
        return None
    depth = model_depth(base_model)
    if max(layers) < depth:
        return layers
    callbacks.log(f"the base model has {depth} layers: all kept (it is already a student)")
    return None


def _settings(inputs: TrainingInputs, cfg: BioSynRecipeConfig, encoder: TransformerEncoder) -> Report:
    """What was trained with what: the head of the report."""
    return dict(inputs.metadata) | {
        "training_pairs": len(inputs.pairs),
        "hard_negative_pairs": len(inputs.negative_pairs),
        "negative_weight": cfg.biosyn.negative_weight,
        "base_model": str(encoder.model_path),
        "train_scope": cfg.scope,
        "scope": cfg.scope,  # the name bench/linking.py reads
        "device": cfg.device,
        "encoder_layers": encoder.num_layers,
        "epochs": cfg.biosyn.epochs,
        "lr": cfg.biosyn.lr,
        "skip_pretrain": cfg.skip_pretrain,
        "pretrain_epochs": 0 if cfg.skip_pretrain else cfg.pretrain.epochs,
        "pretrain_max_pairs": cfg.pretrain.max_pairs,
        "max_queries": cfg.max_queries,
        "prior_weight": cfg.prior_weight,
    }


def _biosyn(
    encoder: TransformerEncoder, inputs: TrainingInputs, cfg: BioSynRecipeConfig, callbacks: TrainingCallbacks,
    folder: Path, report: Report,
) -> float:
    """BioSyn over the training queries (checkpoints under ``folder``); returns the learned λ."""
    from linker.biosyn import make_training_queries, train_biosyn
    from linker.sparse import SparseEncoder

    callbacks.phase("biosyn")
    t0 = time.perf_counter()
    sparse = SparseEncoder().fit(inputs.table.names)
    queries = make_training_queries(inputs.pairs, inputs.table, dedupe=cfg.biosyn.dedupe_queries,
                                    negatives=inputs.negative_pairs)
    if cfg.max_queries:
        queries = queries[: cfg.max_queries]
    if not queries:
        raise ValueError("no training query resolves to a concept of the dictionary")
    report["training_queries"] = len(queries)
    report["queries_with_hard_negatives"] = sum(1 for q in queries if q.negatives)
    model, history = train_biosyn(encoder, inputs.table, sparse, queries, cfg.biosyn,
                                  checkpoint_dir=folder / "checkpoints", on_step=callbacks.on_step,
                                  on_epoch_end=callbacks.on_epoch_end, device=cfg.device)
    report["biosyn"] = history
    report["biosyn_s"] = time.perf_counter() - t0
    report["sparse_weight"] = float(model.sparse_weight.detach())
    return float(report["sparse_weight"])


def _linker(
    encoder: TransformerEncoder, inputs: TrainingInputs, cfg: BioSynRecipeConfig, sparse_weight: float,
    report: Report, progress: Callable[[str, int, int], None] | None = None,
) -> Linker:
    """The training pairs merged into the dictionary, the names encoded, λ and the concept prior set."""
    t0 = time.perf_counter()
    report["merged_train_names"] = len(inputs.table.add(inputs.pairs))
    report["prior_concepts"] = sum(1 for n in inputs.concept_counts.values() if n > 0)
    retrieval = RetrievalConfig(sparse_weight=sparse_weight, dense_scale=cfg.biosyn.dense_scale,
                                prior_weight=cfg.prior_weight)
    training: dict[str, Any] = {k: v for k, v in report.items() if k not in HISTORIES}
    linker = Linker.build(inputs.table, encoder, LinkerConfig(text=inputs.table.cfg, retrieval=retrieval),
                          metadata=dict(inputs.metadata) | {"method": "biosyn", "training": training,
                                                            "merged_train_names": report["merged_train_names"]},
                          feature_cache=cfg.biosyn.feature_cache, progress=progress)
    linker.set_concept_prior(dict(inputs.concept_counts))
    report["index_build_s"] = time.perf_counter() - t0
    return linker


def biosyn_config(params: BioSynParams, context: RunContext) -> BioSynRecipeConfig:
    """The recipe's config for a person's parameters; the scope-dependent ones at 0 stay the scope's."""
    scoped = ("epochs", "lr", "train_scope")
    biosyn = BioSynConfig(**{f.name: getattr(params, f.name) for f in fields(BioSynConfig)
                             if hasattr(params, f.name) and f.name not in scoped}, progress_bar=False)
    return BioSynRecipeConfig(
        biosyn=biosyn, scope=params.train_scope, epochs=params.epochs or None, lr=params.lr or None,
        pretrain_epochs=params.pretrain_epochs or None, pretrain_max_pairs=params.pretrain_max_pairs or None,
        skip_pretrain=params.skip_pretrain, max_queries=params.max_queries, prior_weight=params.prior_weight,
        device=context.device or None, feature_cache=context.cache,
    )


BIOSYN: Method[BioSynRecipeConfig] = Method(
    name="biosyn", config_class=BioSynRecipeConfig, train=train_biosyn_artifact,
    description="synonym pre-training (SapBERT-style) + BioSyn synonym marginalisation",
    label="BioSyn (synonym marginalisation)", summary="BioSyn: train the encoder on synonyms and mentions",
    params=BioSynParams, configure=biosyn_config, base_model=True,
)
