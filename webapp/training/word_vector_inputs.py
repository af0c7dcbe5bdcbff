"""The inputs of the word-vector methods, read from the database.

fastText trains on free text: the documents of the run's collections (``Document.text``, title and abstract)
and, when asked, the definitions of the dictionary's concepts; the recipe adds the dictionary's names
itself (``include_names``). BNE and DAN train on the same snapshot as BioSyn (gold links of the chosen
collections plus curator accepts and relinks up to the run's snapshot, :mod:`webapp.training.dataset`), with
the same concept prior; they start from the run's word vectors or, without them, from fastText trained on
those texts. Their early stopping holds out a hashed share of the training texts (the linker's
``split_dev_pairs``): the evaluation collection stays unseen until the end. DAN at a level >= 1 learns the
ancestors at that level of a dictionary's hierarchy, read as HiPrBERT runs read it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from linker.dictionary import NameTable
from linker.hierarchy.graph import HierarchySource
from linker.recipe import TrainingInputs
from linker.text import TextConfig
from webapp.artifacts.local import ensure_local
from webapp.corpus.models import Document
from webapp.training.dataset import dictionary_table, training_inputs
from webapp.training.errors import RunError
from webapp.training.hierarchy_inputs import check_has_hierarchy, dictionary_source
from webapp.training.models import TrainingExample, TrainingRun
from webapp.vocab.models import Concept, Dictionary

__all__ = ["encoder_inputs", "fasttext_inputs", "hierarchy_dictionary", "run_texts"]


def run_texts(run: TrainingRun, include_definitions: bool) -> tuple[list[str], dict[str, int]]:
    """The documents of the run's collections, then the definitions of its dictionary's latest release when
    asked; and how many of each."""
    ids = list(run.collections.values_list("pk", flat=True))
    documents = list(
        Document.objects.filter(collection_id__in=ids).order_by("pk").values_list("text", flat=True).iterator(chunk_size=2000)
    ) if ids else []
    definitions: list[str] = []
    version = run.dictionary.latest_version()
    if include_definitions and version is not None:
        definitions = list(
            Concept.objects.filter(version=version, obsolete=False).exclude(definition="").order_by("pk")
            .values_list("definition", flat=True).iterator(chunk_size=5000)
        )
    return documents + definitions, {"documents": len(documents), "definitions": len(definitions)}


def fasttext_inputs(run: TrainingRun, out: Path) -> TrainingInputs:
    """fastText's inputs: the texts, and the dictionary's names (joined by the recipe; its coverage is of them)."""
    table = dictionary_table(run)
    texts, counts = run_texts(run, bool(run.params.get("include_definitions", True)))
    if not texts and not run.params.get("include_names", True):
        raise RunError("no text to train word vectors on: choose collections, or let the dictionary's names or "
                       "definitions join")
    return TrainingInputs(
        table=table, pairs=(), concept_counts={}, out=out, texts=texts,
        metadata={"training_run": run.pk, "dictionary": run.dictionary.slug,
                  "collections": sorted(run.collections.values_list("slug", flat=True)), **counts},
    )


def hierarchy_dictionary(run: TrainingRun) -> Dictionary:
    """The dictionary whose hierarchy a DAN run learns at its level: ``params["hierarchy"]`` or its own."""
    pk = int(run.params.get("hierarchy") or 0) or run.dictionary_id
    found = Dictionary.objects.filter(pk=pk).first()
    if found is None:
        raise RunError(f"dictionary {pk} was deleted after the run was queued")
    return found


def encoder_inputs(
    run: TrainingRun, table: NameTable, examples: list[TrainingExample], out: Path
) -> tuple[TrainingInputs, dict[str, Any]]:
    """BNE's or DAN's inputs (BioSyn's pairs and prior, the word vectors or the texts to train them on, DAN's
    hierarchy) and what to say about them in the run's log."""
    inputs = training_inputs(run, table, examples, out)
    said: dict[str, Any] = {"pairs": len(inputs.pairs)}
    metadata = dict(inputs.metadata)
    word_vectors: Path | None = None
    texts: list[str] = []
    if run.word_vectors is not None:
        word_vectors = ensure_local(run.word_vectors.artifact_path)
        metadata["word_vectors"] = run.word_vectors.name
        said["word_vectors"] = run.word_vectors.name
    else:
        texts, counts = run_texts(run, bool(run.params.get("include_definitions", True)))
        said |= counts
        metadata["word_vectors"] = None
    hierarchies: list[HierarchySource] = []
    if run.method == TrainingRun.Method.DAN and int(run.params.get("level") or 0) >= 1:
        dictionary = hierarchy_dictionary(run)
        version = check_has_hierarchy(dictionary)
        source, _ = dictionary_source(dictionary, version, TextConfig())
        hierarchies.append(source)
        metadata["hierarchy"] = dictionary.slug
        said["hierarchy"] = f"{dictionary.slug} ({source.edge_count} parent links)"
    inputs = dataclasses.replace(inputs, texts=texts, word_vectors=word_vectors, hierarchies=hierarchies,
                                 metadata=metadata)
    return inputs, said
