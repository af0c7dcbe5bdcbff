"""The training sub-commands: ``train`` (BioSyn, BNE, DAN), ``train-word-vectors``, ``pretrain-hierarchy``,
``train-rerank`` (LATTE) and ``train-tagger``. Each turns files into :class:`linker.recipe.TrainingInputs` and runs
the method's recipe (:func:`linker.recipe.train`), so the command line trains exactly what a web run trains."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from linker.cli.common import logged_callbacks, read_docs, read_texts
from linker.data import iter_dictionary
from linker.dictionary import NameTable
from linker.methods.hiprbert_params import HiPrBERTRecipeConfig
from linker.methods.latte import LatteRecipeConfig
from linker.methods.tagger import TaggerRecipeConfig
from linker.text import Preprocessor, TextConfig

__all__ = ["train_main", "train_word_vectors_main", "pretrain_hierarchy_main", "train_rerank_main", "train_tagger_main"]


def train_main(
    dictionary: str | Path,
    train: Sequence[str | Path],
    out: str | Path,
    config: Any = None,
    mention_types: set[str] | None = None,
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
    method: str = "biosyn",
    dev: Sequence[str | Path] = (),
    texts: Sequence[str | Path] = (),
    word_vectors: str | Path | None = None,
) -> dict[str, Any]:
    """The files as the recipe's inputs, then :func:`linker.recipe.train` (``method``: biosyn, bne, dan): an
    artifact folder with the training mentions merged in, and its report. ``dev``: PubTator files the
    word-vector encoders stop on; ``texts`` (PubTator or plain text) and ``word_vectors`` (a folder or a
    .vec/.bin file) are what BNE and DAN start from. DAN above level 0 reads the dictionary's hierarchy."""
    from linker.protocol import training_pairs
    from linker.recipe import TrainingInputs, get_method, prior_counts
    from linker.recipe import train as train_recipe

    entry = get_method(method)
    records = list(iter_dictionary(dictionary))
    table = NameTable.from_records(records, TextConfig())
    docs = read_docs(train)
    hierarchies = []
    level = int(getattr(config, "level", 0) or 0)
    if method == "dan" and level > 0:
        from linker.hierarchy.graph import HierarchySource
        from linker.hierarchy.sources import source_name

        hierarchies = [HierarchySource.from_records(source_name(dictionary), records, table.cfg)]
    inputs = TrainingInputs(
        table=table, pairs=training_pairs(docs, table, Preprocessor(table.cfg), mention_types),
        concept_counts=prior_counts(docs, table, mention_types), out=Path(out), base_model=base_model,
        metadata={"dictionary": str(dictionary), "train": [str(t) for t in train]},
        mention_types=frozenset(mention_types) if mention_types else None, dev_documents=read_docs(dev),
        texts=[*(f"{d.title} {d.abstract}" for d in docs), *read_texts(texts),
               *(r.definition for r in records if r.definition)],
        word_vectors=Path(word_vectors) if word_vectors else None, hierarchies=hierarchies,
    )
    callbacks = logged_callbacks(log_file)
    _, report = train_recipe(method, inputs, config if config is not None else entry.config_class(), callbacks)
    return report


def train_word_vectors_main(
    out: str | Path,
    texts: Sequence[str | Path] = (),
    dictionaries: Sequence[str | Path] = (),
    config: Any = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """fastText word vectors on text files (PubTator documents or plain lines) and dictionaries' names and
    definitions: a word-vector folder that ``train --method bne|dan --word-vectors`` starts from."""
    from linker.recipe import FastTextRecipeConfig, TrainingInputs
    from linker.recipe import train as train_recipe

    table = NameTable(TextConfig())
    definitions: list[str] = []
    for path in dictionaries:
        records = list(iter_dictionary(path))
        table.add((name, r.concept_id) for r in records for name in r.all_names())
        definitions.extend(r.definition for r in records if r.definition)
    corpus = [*read_texts(texts), *definitions]
    inputs = TrainingInputs(table=table, pairs=(), concept_counts={}, out=Path(out), texts=corpus,
                            metadata={"texts": [str(t) for t in texts], "dictionaries": [str(d) for d in dictionaries]})
    callbacks = logged_callbacks(log_file)
    _, report = train_recipe("fasttext", inputs, config or FastTextRecipeConfig(), callbacks)
    return report


def pretrain_hierarchy_main(
    dictionaries: Sequence[str | Path],
    out: str | Path,
    config: HiPrBERTRecipeConfig | None = None,
    corpora: Sequence[str | Path] = (),
    synonym_files: Sequence[str | Path] = (),
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """HiPrBERT pre-training (:mod:`linker.methods.hiprbert`) over the dictionaries' synonyms and hierarchies,
    the corpora's mentions as names of their concepts and the synonym files' mention->concept pairs: a base
    encoder folder ``out`` for ``train --base-model`` and ``build-index --encoder``."""
    from linker.hierarchy.sources import sources_from_files
    from linker.recipe import TrainingInputs
    from linker.recipe import train as train_recipe

    sources, gained = sources_from_files(dictionaries, corpora, synonym_files)
    inputs = TrainingInputs(
        table=NameTable(), pairs=(), concept_counts={}, out=Path(out), base_model=base_model, hierarchies=sources,
        metadata={"dictionaries": [str(d) for d in dictionaries], "corpora": [str(c) for c in corpora],
                  "synonym_files": [str(f) for f in synonym_files], "corpus_names_added": gained},
    )
    callbacks = logged_callbacks(log_file)
    _, report = train_recipe("hiprbert", inputs, config or HiPrBERTRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "pretrain"} | {"last_epoch": (report.get("pretrain") or [None])[-1]}


def train_rerank_main(
    dictionary: str | Path,
    train: Sequence[str | Path],
    base: str | Path,
    out: str | Path,
    config: LatteRecipeConfig | None = None,
    mention_types: set[str] | None = None,
    types_from: str | Path | None = None,
    dev: Sequence[str | Path] = (),
    log_file: str | Path | None = None,
) -> dict[str, Any]:
    """A LATTE re-ranker over the linker artifact ``base`` (see :mod:`linker.methods.latte`): the artifact
    ``out`` is that linker with ``rerank/`` inside. Known types come from ``dictionary`` itself, or by
    concept id from ``types_from`` (e.g. CTD_diseases.tsv.gz for the 2012 MEDIC release, which has none)."""
    from linker.protocol import training_pairs
    from linker.recipe import TrainingInputs, prior_counts
    from linker.recipe import train as train_recipe
    from linker.rerank.known_types import known_types_of

    records = list(iter_dictionary(dictionary))
    table = NameTable.from_records(records, TextConfig())
    types = known_types_of(iter_dictionary(types_from) if types_from else records)
    concept_types = {primary: t for cid, t in types.items() if (primary := table.resolve_id(cid))}
    docs = read_docs(train)
    inputs = TrainingInputs(
        table=table, pairs=training_pairs(docs, table, Preprocessor(table.cfg), mention_types),
        concept_counts=prior_counts(docs, table, mention_types), out=Path(out), documents=docs,
        mention_types=frozenset(mention_types) if mention_types else None, concept_types=concept_types,
        base_artifact=Path(base), dev_documents=read_docs(dev),
        metadata={"dictionary": str(dictionary), "train": [str(t) for t in train], "base": str(base)},
    )
    callbacks = logged_callbacks(log_file)
    _, report = train_recipe("latte", inputs, config or LatteRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "latte"} | {"latte_last_epoch": (report.get("latte") or [None])[-1]}


def train_tagger_main(
    train: Sequence[str | Path],
    out: str | Path,
    config: TaggerRecipeConfig | None = None,
    dev: Sequence[str | Path] = (),
    mention_types: set[str] | None = None,
    base_model: str | Path | None = None,
    log_file: str | Path | None = None,
    dictionaries: Sequence[str | Path] = (),
    dictionary_format: str | None = None,
) -> dict[str, Any]:
    """A mention tagger (:mod:`linker.methods.tagger`) trained on the mentions of PubTator files (of
    ``mention_types``; None: all) -> the tagger folder ``out``; ``dev`` files are scored after every epoch.
    With ``dictionaries``, the tagger reads dictionary features over their names and the training mentions."""
    from linker.recipe import TrainingInputs
    from linker.recipe import train as train_recipe

    names = [name for d in dictionaries for record in iter_dictionary(d, dictionary_format)
             for name in record.all_names()]
    inputs = TrainingInputs(
        table=NameTable(), pairs=(), concept_counts={}, out=Path(out), base_model=base_model,
        documents=read_docs(train), dev_documents=read_docs(dev),
        mention_types=frozenset(mention_types) if mention_types else None, names=names,
        metadata={"train": [str(t) for t in train], "dev": [str(d) for d in dev],
                  "mention_types": sorted(mention_types or ()), "dictionaries": [str(d) for d in dictionaries]},
    )
    callbacks = logged_callbacks(log_file)
    _, report = train_recipe("tagger", inputs, config or TaggerRecipeConfig(), callbacks)
    return {k: v for k, v in report.items() if k != "history"}

