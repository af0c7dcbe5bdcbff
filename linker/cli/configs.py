"""The recipe configuration each training sub-command's flags make (over the method's defaults, or its scope's
for the flags not given). :mod:`linker.cli.parser` declares the flags; these read them."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from linker.methods.biosyn import BioSynRecipeConfig
from linker.methods.hiprbert_params import HiPrBERTRecipeConfig
from linker.methods.latte import LatteRecipeConfig
from linker.methods.tagger import TaggerRecipeConfig
from linker.train import BioSynConfig

__all__ = ["train_config", "fast_config", "hierarchy_config", "rerank_config", "tagger_config"]


def train_config(args: argparse.Namespace) -> BioSynRecipeConfig:
    """The train sub-command's flags; those not given take the scope's defaults (linker.train.SCOPE_DEFAULTS)."""
    defaults = BioSynConfig()
    return BioSynRecipeConfig(
        biosyn=BioSynConfig(num_threads=args.threads, topk=args.topk or defaults.topk,
                            batch_size=args.batch_size or defaults.batch_size),
        scope=args.scope, epochs=args.epochs, lr=args.lr, pretrain_epochs=args.pretrain_epochs,
        pretrain_max_pairs=args.pretrain_pairs, skip_pretrain=args.skip_pretrain, max_queries=args.max_queries,
        prior_weight=args.prior_weight, device=args.device or None, feature_cache=args.feature_cache,
        layers=tuple(int(x) for x in args.layers.split(",")) if args.layers else None,
    )


def fast_config(args: argparse.Namespace) -> Any:
    """The train flags that the BNE or DAN config has, over its defaults (the papers' settings)."""
    from dataclasses import fields

    from linker.recipe import get_method

    config = get_method(args.method).config_class()
    names = {f.name for f in fields(config)}
    given: dict[str, Any] = {
        "epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "patience": args.patience,
        "max_minutes": args.max_minutes, "threads": args.threads, "level": args.level, "device": args.device,
        "objectives": tuple(o.strip() for o in args.objectives.split(",")) if args.objectives else None,
        "negatives": args.negatives,
    }
    unknown = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None and k not in names
               and k not in ("threads", "device")]
    if unknown:
        raise SystemExit(f"{args.method} does not take {', '.join(unknown)}")
    if args.bne_size != "paper" or args.epoch_names is not None:
        if args.method != "bne":
            raise SystemExit(f"{args.method} does not take --bne-size or --epoch-names")
        from linker.encoders.bne import FAST_BNE

        given["bne"] = FAST_BNE if args.bne_size == "fast" else None
        given["epoch_names"] = args.epoch_names
    return replace(config, **{k: v for k, v in given.items() if v is not None and k in names})


def hierarchy_config(args: argparse.Namespace) -> HiPrBERTRecipeConfig:
    """The pretrain-hierarchy flags; those not given take the scope's defaults (linker.methods.hiprbert)."""
    from linker.hierarchy.training import HierarchyPretrainConfig

    return HiPrBERTRecipeConfig(
        pretrain=HierarchyPretrainConfig(num_threads=args.threads, seed=args.seed), scope=args.scope, epochs=args.epochs,
        batch_size=args.batch_size, max_batches=args.max_batches, lr=args.lr, distances=args.distances,
        holdout_share=args.holdout, device=args.device or None,
        layers=tuple(int(x) for x in args.layers.split(",")) if args.layers else None,
    )


def rerank_config(args: argparse.Namespace) -> LatteRecipeConfig:
    base = LatteRecipeConfig.paper() if args.paper else LatteRecipeConfig()
    model = replace(base.model, latent_types=args.latent_types, hidden=base.model.hidden if args.paper else args.hidden,
                    use_match="match" not in args.without, use_latent="latent" not in args.without,
                    use_features="features" not in args.without)
    training = replace(base.training, epochs=args.epochs, known_type_weight=args.known_type_weight,
                       part_weight=args.part_weight, num_threads=args.threads)
    return replace(base, model=model, training=training, top_k=args.top_k, device=args.device or None)


def tagger_config(args: argparse.Namespace) -> TaggerRecipeConfig:
    """The train-tagger flags given, over the recipe's CPU defaults."""
    given = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "max_length": args.max_length,
             "stride": args.stride, "max_documents": args.max_documents, "num_threads": args.threads,
             "device": args.device, "seed": args.seed,
             "dictionary_features": False if getattr(args, "no_dictionary_features", False) else None}
    return replace(TaggerRecipeConfig(), **{k: v for k, v in given.items() if v is not None})
