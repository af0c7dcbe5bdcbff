"""Command line: ``python -m linker build-index | train | train-word-vectors | pretrain-hierarchy | train-rerank |
train-tagger | evaluate | calibrate | link | detect``
(files in, files out).

argparse lives only here and in :mod:`linker.cli.configs` (the training sub-commands' flags -> their recipe
configs). Each sub-command is two functions: one adds its flags (``_train``), one runs it (``_run_train``): its
flags -> the typed ``*_main`` function of its stage's module -> the JSON summary printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from linker.cli.common import DEVICE_HELP, parse_types
from linker.cli.configs import fast_config, hierarchy_config, rerank_config, tagger_config, train_config
from linker.cli.index import build_index_main
from linker.cli.inference import calibrate_main, detect_main, evaluate_main, link_main
from linker.cli.training import (
    pretrain_hierarchy_main,
    train_main,
    train_rerank_main,
    train_tagger_main,
    train_word_vectors_main,
)
from linker.data import DICTIONARY_FORMATS
from linker.detect.merge import RULES
from linker.index_kinds import KINDS
from linker.methods.tagger import TaggerRecipeConfig
from linker.rerank.model import LatteConfig
from linker.rerank.training import RerankTrainingConfig
from linker.train import SCOPES, BioSynConfig, TrainerConfig

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m linker", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_build_index, _train, _train_word_vectors, _pretrain_hierarchy, _train_rerank,
                _train_tagger, _evaluate, _calibrate, _link, _detect):
        add(sub)
    return parser


def _build_index(sub: Any) -> None:
    p = sub.add_parser("build-index", help="dictionary (+ training mentions) -> artifact folder")
    p.add_argument("--dictionary", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--encoder", help="encoder folder (default: the base model)")
    p.add_argument("--merge-train", nargs="*", default=[], help="PubTator files whose mentions join the dictionary")
    p.add_argument("--mention-types", help="comma-separated, e.g. Disease")
    p.add_argument("--index", default="auto", choices=list(KINDS),
                   help="auto: flat (exact) below a million names, else an HNSW graph with a float16 copy; ivfpq: "
                        "product-quantised codes for tens of millions of names")
    p.add_argument("--hnsw-storage", choices=["flat", "sq8"], default="flat", help="sq8: the graph's vectors as int8")
    p.add_argument("--vector-dtype", choices=["auto", "float32", "float16"], default="auto",
                   help="the kept copy of the vectors (pair scores, re-ranking of quantised candidates); auto: float16 "
                        "from a million names")
    p.add_argument("--sparse-weight", type=float,
                   help="λ, the weight of tf-idf beside the dense score (default: the --encoder artifact's trained λ, "
                        "else 1.0)")
    p.add_argument("--dense-scale", type=float, help="default: the --encoder artifact's, else 20.0")
    p.add_argument("--prior-weight", type=float,
                   help="weight of the concept prior log(1 + n) (default: the --encoder artifact's trained weight, "
                        "with its concept prior, else 0.0)")
    p.add_argument("--sparse-only", action="store_true")
    p.add_argument("--quantize", action="store_true")
    p.add_argument("--first-stage", help="a fast encoder (BNE/DAN artifact or encoder folder) searched before --encoder")
    p.add_argument("--cascade", choices=["exact", "off"], default="exact",
                   help="with --first-stage: exact: the transformer encodes only queries that are not a dictionary "
                        "name; off: every query")
    p.add_argument("--no-sparse-search", action="store_true",
                   help="tf-idf scores the dense candidates only (no search over all names; faster)")
    p.add_argument("--device", help=DEVICE_HELP)
    p.set_defaults(run=_run_build_index)


def _train(sub: Any) -> None:
    p = sub.add_parser("train", help="train a linker (BioSyn, BNE or DAN) -> artifact folder")
    p.add_argument("--method", choices=["biosyn", "bne", "dan"], default="biosyn",
                   help="biosyn: synonym pre-training + BioSyn (transformer); bne: BiLSTM over characters and word "
                        "vectors; dan: deep averaging network over word vectors")
    p.add_argument("--dictionary", required=True)
    p.add_argument("--train", nargs="+", required=True, help="PubTator training files")
    p.add_argument("--out", required=True)
    p.add_argument("--mention-types")
    p.add_argument("--base-model")
    p.add_argument("--epochs", type=int, help="BioSyn epochs (default: the scope's, see linker.train.SCOPE_DEFAULTS)")
    p.add_argument("--pretrain-pairs", type=int, help="synonym pairs for pre-training (0: all; default: the scope's)")
    p.add_argument("--skip-pretrain", action="store_true")
    p.add_argument("--max-queries", type=int, default=0, help="train on the first N queries only (smoke tests)")
    p.add_argument("--log", help="append JSON progress lines here")
    p.add_argument("--scope", choices=["auto", *SCOPES], default="auto",
                   help="full: the paper (GPU); student: the paper on a 3-layer student of the base model (CPU); "
                        "head: frozen transformer + projection head; auto: full on CUDA, else student")
    p.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    p.add_argument("--feature-cache", default="var/cache/features", help="folder for frozen-transformer features")
    p.add_argument("--layers", help="keep these base-model layers, e.g. 0,2,5 (default: the scope's)")
    p.add_argument("--lr", type=float, help="transformer learning rate (default: the scope's)")
    p.add_argument("--pretrain-epochs", type=int, help="default: the scope's")
    p.add_argument("--topk", type=int, help=f"BioSyn candidates per query (default {BioSynConfig.topk}, the paper's)")
    p.add_argument("--batch-size", type=int, help=f"BioSyn queries per batch (default {BioSynConfig.batch_size})")
    p.add_argument("--prior-weight", type=float, default=1e-3, help="weight of the concept prior log(1 + n)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if there is one)")
    w = p.add_argument_group("bne and dan")
    w.add_argument("--word-vectors", help="a word-vector folder (train-word-vectors) or a .vec/.bin file "
                                          "(default: fastText trained on the training documents and names first)")
    w.add_argument("--texts", nargs="*", default=[], help="more text for that fastText (PubTator or plain lines)")
    w.add_argument("--dev", nargs="*", default=[], help="PubTator files to stop on (default: a share of the pairs)")
    w.add_argument("--patience", type=int, help="epochs without dev gain before stopping")
    w.add_argument("--max-minutes", type=float, help="stop after this much training time")
    w.add_argument("--objectives", help="BNE: comma-separated of syn,def,ctx (default: all three)")
    w.add_argument("--level", type=int, help="DAN: 0 concepts (linking); L >= 1 ancestors at level L as classes")
    w.add_argument("--bne-size", choices=["paper", "fast"], default="paper",
                   help="BNE: the paper's recurrent states (200/200) or smaller ones (50/100) that encode ~2x faster")
    w.add_argument("--epoch-names", type=int, help="BNE: anchors per epoch (default: every name)")
    w.add_argument("--negatives", type=int, help="BNE: in-batch negatives per anchor and objective (the paper: 1)")
    p.set_defaults(run=_run_train)


def _train_word_vectors(sub: Any) -> None:
    p = sub.add_parser("train-word-vectors", help="fastText word vectors on documents and names -> folder")
    p.add_argument("--text", nargs="*", default=[], help="PubTator files or plain text files (a text a line)")
    p.add_argument("--dictionary", nargs="*", default=[], help="dictionaries whose names and definitions join")
    p.add_argument("--out", required=True)
    p.add_argument("--dim", type=int, default=200)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log", help="append JSON progress lines here")
    p.set_defaults(run=_run_train_word_vectors)


def _pretrain_hierarchy(sub: Any) -> None:
    p = sub.add_parser("pretrain-hierarchy", help="HiPrBERT pre-training on dictionaries' hierarchies -> base encoder folder")
    p.add_argument("--dictionary", action="append", required=True,
                   help="a dictionary with a hierarchy (MEDIC TSV, OBO); repeat for several")
    p.add_argument("--corpus", action="append", default=[],
                   help="PubTator training file whose mentions join the dictionary that resolves their ids")
    p.add_argument("--synonyms", action="append", default=[],
                   help="'ID||mention' lines or a .tar.gz of them (test/ folders skipped): a synonyms-only source")
    p.add_argument("--out", required=True)
    p.add_argument("--base-model", help="local Hugging Face folder (default: the shipped MiniLM)")
    p.add_argument("--scope", choices=["auto", "full", "student"], default="auto",
                   help="full: the whole model, the paper (GPU); student: its 3-layer student (CPU); auto: by device")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int, help="names per batch (default: 256 full, 128 student)")
    p.add_argument("--max-batches", type=int, help="batches per epoch (0: all; default: all full, 1000 student)")
    p.add_argument("--lr", type=float)
    p.add_argument("--layers", help="keep these base-model layers, e.g. 0,2,5 (default: the scope's)")
    p.add_argument("--distances", choices=["hierarchy", "synonym"],
                   help="hierarchy: the paper; synonym: the same batches with synonymy only (the baseline)")
    p.add_argument("--holdout", type=float, default=0.0, help="share of concepts held out and scored at the end")
    p.add_argument("--seed", type=int, default=TrainerConfig.seed, help="draws the batches and initialises torch")
    p.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    p.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    p.add_argument("--log", help="append JSON progress lines here")
    p.set_defaults(run=_run_pretrain_hierarchy)


def _train_rerank(sub: Any) -> None:
    p = sub.add_parser("train-rerank", help="a LATTE re-ranker over a linker artifact -> artifact folder")
    p.add_argument("--dictionary", required=True, help="the dictionary the base artifact was built from")
    p.add_argument("--train", nargs="+", required=True, help="PubTator training files")
    p.add_argument("--base", required=True, help="the linker artifact to re-rank over")
    p.add_argument("--out", required=True)
    p.add_argument("--mention-types")
    p.add_argument("--types-from", help="a dictionary file whose known types apply by concept id")
    p.add_argument("--dev", nargs="*", default=[], help="PubTator files scored after every epoch")
    p.add_argument("--epochs", type=int, default=RerankTrainingConfig.epochs)
    p.add_argument("--latent-types", type=int, default=LatteConfig.latent_types, help="K (the paper's 2048)")
    p.add_argument("--hidden", type=int, default=LatteConfig.hidden, help="BiLSTM width per direction")
    p.add_argument("--top-k", type=int, default=10, help="candidates re-ranked per mention part")
    p.add_argument("--known-type-weight", type=float, default=RerankTrainingConfig.known_type_weight,
                   help="0 trains without known types (the paper's LATTE-NKT)")
    p.add_argument("--part-weight", type=float, default=RerankTrainingConfig.part_weight,
                   help="weight of f's and g's own ranking losses (0, the default: they learn only through r, "
                        "which starts at the retriever's order; see linker.rerank.training)")
    p.add_argument("--without", action="append", default=[], choices=["match", "latent", "features"],
                   help="ablation: drop f (cross-attention), g (latent types) or the retriever's features")
    p.add_argument("--paper", action="store_true", help="the paper's sizes (two 512-d BiLSTM layers; a GPU job)")
    p.add_argument("--threads", type=int, default=TrainerConfig.num_threads)
    p.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    p.add_argument("--log", help="append JSON progress lines here")
    p.set_defaults(run=_run_train_rerank)


def _train_tagger(sub: Any) -> None:
    p = sub.add_parser("train-tagger", help="a mention tagger (BIO token classifier) on PubTator files -> folder")
    p.add_argument("--train", action="append", required=True, help="PubTator training file; repeat for several")
    p.add_argument("--dev", action="append", default=[], help="PubTator file scored after every epoch (the best "
                                                                "epoch is kept); repeat for several")
    p.add_argument("--mention-type", action="append", default=[],
                    help="keep mentions of this type (e.g. Disease); repeat for several (default: all)")
    p.add_argument("--out", required=True)
    p.add_argument("--dictionary", action="append", default=[],
                    help="dictionary whose names (with the training mentions) the tagger reads as features; "
                         "repeat for several (default: none, the tagger reads the text alone)")
    p.add_argument("--dictionary-format", help="the dictionaries' format (default: sniffed)")
    p.add_argument("--no-dictionary-features", action="store_true",
                    help="read the text alone even when --dictionary is given")
    p.add_argument("--base-model", help="local Hugging Face folder (default: the shipped MiniLM)")
    p.add_argument("--epochs", type=int, help=f"default {TaggerRecipeConfig.epochs}")
    p.add_argument("--lr", type=float, help=f"default {TaggerRecipeConfig.lr}")
    p.add_argument("--batch-size", type=int, help=f"windows per batch (default {TaggerRecipeConfig.batch_size})")
    p.add_argument("--max-length", type=int, help=f"subword tokens per window (default {TaggerRecipeConfig.max_length})")
    p.add_argument("--stride", type=int, help=f"tokens consecutive windows share (default {TaggerRecipeConfig.stride})")
    p.add_argument("--max-documents", type=int, help="train on the first N documents only (quick runs)")
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=int, help=f"torch CPU threads (default {TaggerRecipeConfig.num_threads})")
    p.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    p.add_argument("--log", help="append JSON progress lines here")
    p.set_defaults(run=_run_train_tagger)


def _evaluate(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="Acc@k of an artifact on PubTator gold mentions")
    p.add_argument("--artifact", required=True)
    p.add_argument("--eval", nargs="+", required=True)
    p.add_argument("--mention-types")
    p.add_argument("--mode", choices=["hybrid", "dense", "sparse"])
    p.add_argument("--no-rerank", action="store_true", help="score the retriever alone even with a re-ranker")
    p.add_argument("--device", help=DEVICE_HELP)
    p.set_defaults(run=_run_evaluate)


def _calibrate(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="fit an artifact's top-1 confidence (and NIL threshold) on held-out gold")
    p.add_argument("--artifact", required=True)
    p.add_argument("--gold", nargs="+", required=True, help="PubTator files with gold mentions (not the training data)")
    p.add_argument("--mention-types")
    p.add_argument("--nil", help="a file of mentions that have no concept, one a line (teaches the NIL threshold)")
    p.add_argument("--device", help=DEVICE_HELP)
    p.set_defaults(run=_run_calibrate)


def _link(sub: Any) -> None:
    p = sub.add_parser("link", help="link mentions of PubTator or one-mention-a-line files -> JSON lines")
    p.add_argument("--artifact", required=True)
    p.add_argument("inputs", nargs="+")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--output", help="default: stdout")
    p.add_argument("--device", help=DEVICE_HELP)
    p.set_defaults(run=_run_link)


def _detect(sub: Any) -> None:
    p = sub.add_parser("detect", help="find mentions in PubTator or plain text files (a document a line) -> JSON lines")
    p.add_argument("--in", dest="inputs", action="append", required=True, help="a .PubTator or .txt file; repeat")
    p.add_argument("--tagger", help="a tagger folder (train-tagger)")
    p.add_argument("--dictionary", action="append", default=[], help="a dictionary whose names the matcher finds")
    p.add_argument("--dictionary-format", choices=list(DICTIONARY_FORMATS), help="default: from the file")
    p.add_argument("--rule", choices=list(RULES), default="tagger-first", help="how tagger and matcher spans merge")
    p.add_argument("--batch-size", type=int, default=16, help="tagger windows per batch")
    p.add_argument("--device", help="cpu, cuda ... (default: cuda if there is one)")
    p.add_argument("--out", required=True, help="the JSON-lines file to write")
    p.set_defaults(run=_run_detect)


# What a user's input causes (a missing or unreadable file, a malformed dictionary, an artifact that does not fit,
# a dictionary without a hierarchy): the linker raises these with a message naming the input and the fault.
USER_ERRORS = (OSError, ValueError)
USAGE_ERROR = 2  # argparse's exit status for a bad command line


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command. A fault in the user's input ends it with that message on one line and exit status 2,
    not a traceback (``LINKER_TRACEBACK=1`` shows the traceback too); anything else is a bug and keeps its
    traceback."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.run(args)
    except USER_ERRORS as exc:
        if os.environ.get("LINKER_TRACEBACK"):
            raise
        print(f"{parser.prog} {args.command}: error: {user_message(exc)}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"{parser.prog} {args.command}: interrupted", file=sys.stderr)
        return 130
    if result is not None:  # None: the sub-command wrote its output itself
        print(json.dumps(result, indent=2, default=str))
    return 0


def user_message(exc: BaseException) -> str:
    """The message of a user-input fault: an OS error as "PATH: what" (not "[Errno 2] ..."), else its own text."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror[:1].lower()}{exc.strerror[1:]}"
    return str(exc) or type(exc).__name__


# --- one runner per sub-command: its flags -> its typed *_main function -> the JSON summary printed ------------


def _run_build_index(args: argparse.Namespace) -> Any:
    return build_index_main(args.dictionary, args.out, args.encoder, args.merge_train, parse_types(args.mention_types),
                            args.index, args.sparse_weight, args.dense_scale, sparse_only=args.sparse_only,
                            quantize=args.quantize, first_stage=args.first_stage, cascade=args.cascade,
                            sparse_search=not args.no_sparse_search, device=args.device, hnsw_storage=args.hnsw_storage,
                            vector_dtype=args.vector_dtype, prior_weight=args.prior_weight)


def _run_train(args: argparse.Namespace) -> Any:
    if args.method == "biosyn":
        result = train_main(args.dictionary, args.train, args.out, train_config(args), parse_types(args.mention_types),
                            args.base_model, args.log)
        return {k: v for k, v in result.items() if k not in ("pretrain", "biosyn")} | {
            "biosyn_last_epoch": result["biosyn"][-1] if result["biosyn"] else None}
    result = train_main(args.dictionary, args.train, args.out, fast_config(args), parse_types(args.mention_types),
                        log_file=args.log, method=args.method, dev=args.dev, texts=args.texts,
                        word_vectors=args.word_vectors)
    return {k: v for k, v in result.items() if k != "history"}


def _run_train_word_vectors(args: argparse.Namespace) -> Any:
    from linker.encoders.wordvec import FastTextConfig
    from linker.recipe import FastTextRecipeConfig

    fasttext = FastTextConfig(dim=args.dim, epochs=args.epochs, min_count=args.min_count, workers=args.threads)
    return train_word_vectors_main(args.out, args.text, args.dictionary, FastTextRecipeConfig(fasttext), args.log)


def _run_pretrain_hierarchy(args: argparse.Namespace) -> Any:
    return pretrain_hierarchy_main(args.dictionary, args.out, hierarchy_config(args), args.corpus, args.synonyms,
                                   args.base_model, args.log)


def _run_train_rerank(args: argparse.Namespace) -> Any:
    return train_rerank_main(args.dictionary, args.train, args.base, args.out, rerank_config(args),
                             parse_types(args.mention_types), args.types_from, args.dev, args.log)


def _run_train_tagger(args: argparse.Namespace) -> Any:
    return train_tagger_main(args.train, args.out, tagger_config(args), args.dev, set(args.mention_type) or None,
                             args.base_model, args.log, args.dictionary, args.dictionary_format)


def _run_evaluate(args: argparse.Namespace) -> Any:
    return evaluate_main(args.artifact, args.eval, parse_types(args.mention_types), args.mode,
                         rerank=not args.no_rerank, device=args.device)


def _run_calibrate(args: argparse.Namespace) -> Any:
    return calibrate_main(args.artifact, args.gold, parse_types(args.mention_types), nil_file=args.nil,
                          device=args.device)


def _run_link(args: argparse.Namespace) -> Any:
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            return {"written": link_main(args.artifact, args.inputs, fh, args.k, args.device)}
    # The links went to stdout: the count goes to stderr, so stdout stays JSON lines only.
    print(json.dumps({"written": link_main(args.artifact, args.inputs, sys.stdout, args.k, args.device)}),
          file=sys.stderr)
    return None


def _run_detect(args: argparse.Namespace) -> Any:
    if not args.tagger and not args.dictionary:
        raise SystemExit("detect needs --tagger, --dictionary, or both")
    with open(args.out, "w", encoding="utf-8") as fh:
        return detect_main(args.inputs, fh, args.tagger, args.dictionary, args.dictionary_format, args.rule,
                           args.batch_size, args.device)
