"""LATTE as a training method: a re-ranker trained over a linker, published as that linker plus ``rerank/``.

Steps: load the base linker (``inputs.base_artifact``; without one, a zero-shot hybrid index of the
dictionary with the training mentions merged), retrieve cross-fitted candidates for every training mention
(:mod:`linker.rerank.examples`), train the re-ranker (:mod:`linker.rerank.training`), describe its latent
types by the dictionary's names, and save the linker with the re-ranker inside.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from linker.config import LinkerConfig
from linker.linker import Linker
from linker.methods.base import Method, Report, RunContext, TrainingCallbacks, TrainingInputs
from linker.methods.latte_params import LatteParams
from linker.rerank.context import DEFAULT_WINDOW_WORDS
from linker.rerank.model import LatteConfig
from linker.rerank.reranker import RerankerSettings
from linker.rerank.training import RerankTrainingConfig

__all__ = ["LATTE", "LatteRecipeConfig", "latte_config", "train_latte_artifact", "base_linker"]


@dataclass(frozen=True)
class LatteRecipeConfig:
    """The CPU default trains over NCBI's 5.1K training mentions in about 14 minutes on 2 shared cores
    (bench/RESULTS.md); on a GPU ``paper()`` gives the paper's sizes (two 512-d BiLSTM layers)."""

    model: LatteConfig = field(default_factory=LatteConfig)
    training: RerankTrainingConfig = field(default_factory=RerankTrainingConfig)
    top_k: int = 10
    window_words: int = DEFAULT_WINDOW_WORDS
    folds: int = 5
    device: str | None = None  # None: CUDA when there is one, else the CPU
    max_mentions: int | None = None  # a cap on training mention parts (tests, quick runs)
    # Each dictionary name's pooled encoding is stored with the re-ranker (linker.rerank.name_vectors) up to this
    # many distinct names: CTD MEDIC's 75K took 150 s and 38 MB on 2 cores; UMLS-size dictionaries (millions) would
    # take hours and gigabytes, and their panels encode candidate names as before. 0: never.
    name_vectors_max: int = 500_000

    @classmethod
    def paper(cls) -> LatteRecipeConfig:
        return cls(model=LatteConfig(hidden=512, lstm_layers=2, encoder="bilstm"),
                   training=RerankTrainingConfig(lr=1e-4, epochs=20))


def base_linker(inputs: TrainingInputs, callbacks: TrainingCallbacks) -> Linker:
    """The linker to re-rank over: the given artifact, or a zero-shot index with the training names merged."""
    if inputs.base_artifact is not None:
        return Linker.load(inputs.base_artifact, strict_rerank=False)
    from linker.encoders.transformer import TransformerEncoder

    callbacks.phase("index")
    table = inputs.table.copy()
    table.add(inputs.pairs)
    linker = Linker.build(table, TransformerEncoder(inputs.base_model or None), LinkerConfig(text=table.cfg),
                          metadata=dict(inputs.metadata) | {"method": "zero-shot hybrid (LATTE base)"},
                          progress=callbacks.on_index)
    linker.set_concept_prior(dict(inputs.concept_counts))
    return linker


def train_latte_artifact(
    inputs: TrainingInputs, config: LatteRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    import torch

    from linker.protocol import build_eval_set
    from linker.rerank.examples import cross_fitted_examples, examples_for
    from linker.rerank.results import latent_usage
    from linker.rerank.training import latent_type_summaries, train_reranker

    if not inputs.documents:
        raise ValueError("LATTE trains on mentions in their documents, and no annotated document was given")
    t0 = time.perf_counter()
    torch.set_num_threads(max(1, config.training.num_threads))
    base = base_linker(inputs, callbacks)
    if base.encoder is None:
        raise ValueError("LATTE reads the token states of the linker's transformer; this linker is sparse-only")
    report: Report = dict(inputs.metadata) | {
        "base_artifact": str(inputs.base_artifact) if inputs.base_artifact else "zero-shot hybrid",
        "top_k": config.top_k, "window_words": config.window_words, "folds": config.folds,
        "latent_types": config.model.latent_types, "hidden": config.model.hidden,
        "epochs": config.training.epochs, "lr": config.training.lr,
        "known_type_weight": config.training.known_type_weight, "part_weight": config.training.part_weight,
    }
    types = set(inputs.mention_types) if inputs.mention_types else None
    callbacks.phase("candidates")
    callbacks.log(f"cross-fitted candidates over {len(inputs.documents)} documents, {config.folds} folds")
    train = cross_fitted_examples(base, inputs.table, inputs.documents, config.top_k, config.window_words,
                                  types, config.folds, inputs.rejections,
                                  on_fold=lambda i, n: callbacks.log(f"fold {i}/{n} retrieved"))
    if config.max_mentions:
        train = train[: config.max_mentions]
    dev = []
    if inputs.dev_documents:
        dev_set = build_eval_set(inputs.dev_documents, base.table, base.preprocessor, types)
        dev = examples_for(base, dev_set, {d.pmid: d.text for d in inputs.dev_documents}, config.top_k,
                           config.window_words)
    report["candidates_s"] = time.perf_counter() - t0
    callbacks.phase("latte")
    settings = RerankerSettings(top_k=config.top_k, window_words=config.window_words)
    reranker, trained = train_reranker(base, train, dev, inputs.concept_types, config.model, settings, config.training,
                                       device=config.device, on_step=callbacks.on_step,
                                       on_epoch_end=callbacks.on_epoch_end, checkpoint_dir=folder / "checkpoints")
    report |= trained
    callbacks.phase("latent-types")
    t_names = time.perf_counter()
    distinct = len(set(base.table.raw_names))  # as candidates carry them (Candidate.name)
    if 0 < distinct <= config.name_vectors_max:
        reranker.store_name_vectors(base.table.raw_names)
    else:
        callbacks.log(f"no name vectors: {distinct} distinct names, more than name_vectors_max {config.name_vectors_max}")
    report["name_vectors"] = {"names": len(reranker.name_vectors or ()), "s": round(time.perf_counter() - t_names, 1)}
    reranker.latent_types = latent_type_summaries(reranker, base.table)
    report["latent_usage"] = latent_usage(reranker.latent_types)
    reranker.metadata = {k: v for k, v in report.items() if k not in ("latte",)}
    base.reranker, base.reranker_problem = reranker, None
    base.metadata = dict(base.metadata) | {"reranker": "latte"}
    report["total_s"] = time.perf_counter() - t0
    base.save(folder)
    if callbacks.evaluate is not None:
        callbacks.phase("evaluate")
        report["metrics"] = callbacks.evaluate(base)
    return report


def latte_config(params: LatteParams, context: RunContext) -> LatteRecipeConfig:
    """The recipe's config for a person's parameters."""
    model = replace(LatteConfig(), hidden=params.hidden, lstm_layers=params.lstm_layers,
                    latent_types=params.latent_types)
    training = replace(RerankTrainingConfig(), epochs=params.epochs, lr=params.lr, batch_size=params.batch_size,
                       known_type_weight=params.known_type_weight, min_type_count=params.min_type_count,
                       part_weight=params.part_weight, progress_bar=False)
    return LatteRecipeConfig(model=model, training=training, top_k=params.top_k, window_words=params.window_words,
                             folds=params.folds, device=context.device or None, max_mentions=params.max_mentions or None)


LATTE: Method[LatteRecipeConfig] = Method(
    name="latte", config_class=LatteRecipeConfig, train=train_latte_artifact,
    description="LATTE re-ranker over the hybrid retriever's top-k: cross-attention, latent and known types",
    label="LATTE (re-ranker with latent and known types)",
    summary="LATTE: a re-ranker over the active model", params=LatteParams,
    configure=latte_config,
)
