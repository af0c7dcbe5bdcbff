"""Word vectors as a training method (``fasttext``), and what the word-vector encoders (BNE, DAN) share:
where their word vectors come from, the dev pairs they stop on, and the linker they publish.

The ``fasttext`` artifact is a word-vector folder (:class:`linker.encoders.wordvec.WordVectors`) with a
``config.json`` saying so; BNE and DAN runs start from one (``TrainingInputs.word_vectors``) or, without
one, train fastText on their own texts first. A user's ``.vec``/``.bin`` file is read the same way.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from linker.config import LinkerConfig
from linker.dictionary import NameTable
from linker.encoders.base import NameEncoder
from linker.encoders.wordvec import FastTextConfig, WordVectors, WordVectorsError
from linker.linker import Linker
from linker.methods.base import WORD_VECTORS, Method, Report, RunContext, TrainingCallbacks, TrainingInputs
from linker.methods.word_vector_params import FastTextParams, fasttext_config
from linker.retrieval import RetrievalConfig

__all__ = [
    "FastTextRecipeConfig", "FASTTEXT", "WORD_VECTORS_KIND", "word_vectors_config", "corpus_texts", "word_vectors_for",
    "split_dev_pairs", "normalization_accuracy", "publish_fast_linker", "names_per_second",
]

WORD_VECTORS_KIND = "word-vectors"  # config.json "kind" of a fasttext artifact


@dataclass
class FastTextRecipeConfig:
    """fastText settings and whether the dictionary's names join the corpus (they are most of the words a
    name encoder will meet; documents add the contexts)."""

    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    include_names: bool = True


def corpus_texts(inputs: TrainingInputs, include_names: bool = True) -> list[str]:
    """The run's free texts, then each distinct dictionary name once."""
    texts = [t for t in inputs.texts if t and t.strip()]
    if include_names:
        texts.extend(dict.fromkeys(inputs.table.raw_names))
    return texts


def _load_given(path: Path, expected_dim: int | None) -> WordVectors:
    if path.is_dir():
        if not WordVectors.is_folder(path):
            raise WordVectorsError(f"{path}: not a word-vector folder")
        vectors = WordVectors.load(path)
        if expected_dim is not None and vectors.dim != expected_dim:
            raise WordVectorsError(f"{path}: vectors of dimension {vectors.dim}, but {expected_dim} are needed")
        return vectors
    return WordVectors.from_file(path, expected_dim)


def word_vectors_for(
    inputs: TrainingInputs, fasttext: FastTextConfig, callbacks: TrainingCallbacks,
    expected_dim: int | None = None,
) -> WordVectors:
    """``inputs.word_vectors`` (a saved folder or a .vec/.bin file) when given, else fastText trained on the
    run's texts and the dictionary's names. ``expected_dim``: refuse vectors of another dimension."""
    callbacks.phase("word-vectors")
    if inputs.word_vectors is not None:
        vectors = _load_given(Path(inputs.word_vectors), expected_dim)
        callbacks.log(f"word vectors from {inputs.word_vectors}: {len(vectors)} words of dimension {vectors.dim}")
        return vectors
    texts = corpus_texts(inputs)
    callbacks.log(f"training fastText on {len(texts)} texts (no word vectors given)")
    started = time.perf_counter()

    def on_epoch(done: int, total: int) -> None:
        if callbacks.on_epoch_end is not None:
            callbacks.on_epoch_end({"phase": "word-vectors", "epoch": done, "epochs": total,
                                    "elapsed_s": time.perf_counter() - started})

    return WordVectors.train(texts, fasttext, on_epoch)


def train_word_vectors_artifact(
    inputs: TrainingInputs, config: FastTextRecipeConfig, callbacks: TrainingCallbacks, folder: Path
) -> Report:
    """fastText on the run's texts (and the dictionary's names): a word-vector folder."""
    if inputs.word_vectors is not None:
        raise ValueError("the fasttext method trains word vectors; it does not take them as input")
    t0 = time.perf_counter()
    vectors = word_vectors_for(inputs, config.fasttext, callbacks)
    seconds = time.perf_counter() - t0
    vectors.save(folder)
    report: Report = dict(inputs.metadata) | {
        "kind": WORD_VECTORS_KIND,
        "words": len(vectors),
        "dim": vectors.dim,
        "texts": len(inputs.texts),
        "names": len(set(inputs.table.raw_names)) if config.include_names else 0,
        "sentences": vectors.source.get("sentences"),
        "tokens": vectors.source.get("tokens"),
        "fasttext": asdict(config.fasttext),
        "train_s": seconds,
        "name_coverage": vectors.coverage(inputs.table.raw_names),
    }
    (folder / "config.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report


def word_vectors_config(params: FastTextParams, context: RunContext) -> FastTextRecipeConfig:
    """The recipe's config for a person's parameters (``include_definitions`` is the caller's: it gathers the texts)."""
    return FastTextRecipeConfig(fasttext=fasttext_config(params.dim, params.epochs, params.window, params.min_count),
                                include_names=params.include_names)


FASTTEXT: Method[FastTextRecipeConfig] = Method(
    name="fasttext", config_class=FastTextRecipeConfig, train=train_word_vectors_artifact,
    description="fastText word vectors (gensim) on documents and dictionary names, for the BNE and DAN encoders",
    label="Word vectors (fastText)", summary="Word vectors (fastText): for BNE and DAN runs to start from",
    params=FastTextParams, configure=word_vectors_config, output=WORD_VECTORS,
)


# --- shared by the word-vector encoders ---------------------------------------------------------------------


def _dev_pairs_of_documents(inputs: TrainingInputs) -> list[tuple[str, str]]:
    from linker.protocol import training_pairs
    from linker.text import Preprocessor

    types = set(inputs.mention_types) if inputs.mention_types is not None else None
    return training_pairs(inputs.dev_documents, inputs.table, Preprocessor(inputs.table.cfg), types)


def split_dev_pairs(
    inputs: TrainingInputs, share: float = 0.1, seed: int = 13
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(training pairs, dev pairs) for early stopping: the dev documents' mentions when there are any;
    else a share of the distinct mention texts, chosen by a hash of the text (every pair of a held-out
    text is held out, so a dev mention is never a training name)."""
    pairs = list(dict.fromkeys(inputs.pairs))
    if inputs.dev_documents:
        return pairs, _dev_pairs_of_documents(inputs)

    def held(text: str) -> bool:
        digest = hashlib.sha1(f"{seed}:{text}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < share

    train = [p for p in pairs if not held(p[0])]
    dev = [p for p in pairs if held(p[0])]
    return train, dev


def normalization_accuracy(encoder: NameEncoder, table: NameTable, pairs: Sequence[tuple[str, str]]) -> float:
    """Dense-only Acc@1 of (normalised mention, concept id) pairs against the table's names: the mention's
    nearest name by cosine must belong to its concept (0.0 for no pairs)."""
    if not pairs:
        return 0.0
    names = table.names
    distinct = list(dict.fromkeys(names))
    name_vecs = encoder.encode(distinct, batch_size=4096)
    concepts_of: dict[str, set[str]] = {}
    for name, cid in zip(names, table.concept_ids, strict=True):
        concepts_of.setdefault(name, set()).add(cid)
    queries = list(dict.fromkeys(m for m, _ in pairs))
    query_vecs = encoder.encode(queries, batch_size=4096)
    best: dict[str, int] = {}
    for start in range(0, len(queries), 1024):
        scores = query_vecs[start : start + 1024] @ name_vecs.T
        for offset, column in enumerate(np.argmax(scores, axis=1)):
            best[queries[start + offset]] = int(column)
    hits = sum(cid in concepts_of[distinct[best[m]]] for m, cid in pairs)
    return hits / len(pairs)


def names_per_second(encoder: NameEncoder, names: Sequence[str], batch_size: int = 4096) -> float:
    """Encoding speed over ``names`` (distinct, as an index build sees them), measured once."""
    distinct = list(dict.fromkeys(names))
    started = time.perf_counter()
    encoder.encode(distinct, batch_size=batch_size)
    return len(distinct) / max(time.perf_counter() - started, 1e-9)


def publish_fast_linker(
    inputs: TrainingInputs, encoder: NameEncoder, callbacks: TrainingCallbacks, folder: Path, report: Report,
    method: str, prior_weight: float = 1e-3,
) -> Report:
    """The training pairs merged into the dictionary, the hybrid linker built over ``encoder`` with the
    concept prior, saved into ``folder``; ``callbacks.evaluate`` scores it (``report["metrics"]``)."""
    callbacks.phase("index")
    t0 = time.perf_counter()
    report["merged_train_names"] = len(inputs.table.add(inputs.pairs))
    report["prior_concepts"] = sum(1 for n in inputs.concept_counts.values() if n > 0)
    retrieval = RetrievalConfig(prior_weight=prior_weight)
    training = {k: v for k, v in report.items() if k not in ("history",)}
    linker = Linker.build(inputs.table, encoder, LinkerConfig(text=inputs.table.cfg, retrieval=retrieval),
                          metadata=dict(inputs.metadata) | {"method": method, "training": training,
                                                            "merged_train_names": report["merged_train_names"]},
                          progress=callbacks.on_index)
    linker.set_concept_prior(dict(inputs.concept_counts))
    report["index_build_s"] = time.perf_counter() - t0
    linker.save(folder)
    if callbacks.evaluate is not None:
        callbacks.phase("evaluate")
        report["metrics"] = callbacks.evaluate(linker)
    return report
