"""A tiny LATTE re-ranker trained on the demo collection, registered as the demo dictionary's active index.

Shared by the curation panel's integration and browser tests. Training takes a minute or two on a CPU (MiniLM's frozen token
states, a 16-unit BiLSTM, 16 latent types); the artifact is cached per test session in ``cache`` and a fresh
IndexVersion row points at it in each test's database. The demo data are deterministic, so the cached
artifact fits every test's dictionary.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from linker.config import LinkerConfig
from linker.linker import Linker
from linker.recipe import LatteRecipeConfig, TrainingCallbacks, TrainingInputs, prior_counts, train
from linker.rerank import MentionSpan
from linker.rerank.model import LatteConfig
from linker.rerank.results import LinkedMention
from linker.rerank.training import RerankTrainingConfig
from webapp.corpus.models import Collection, Mention
from webapp.linking.models import IndexVersion
from webapp.training.dataset import gold_documents
from webapp.training.services import activate_index, concept_records
from webapp.vocab.models import Concept, DictionaryVersion

LATTE = LatteRecipeConfig(
    model=LatteConfig(hidden=16, latent_types=16),
    # Confident known types; no held-out fold (the demo's few documents): the last epoch serves and ranks, where a
    # fold kept the retriever's order and the panel would show the retriever's ranking with the re-ranker's types.
    training=RerankTrainingConfig(epochs=40, batch_size=8, lr=1e-2, min_type_count=1, holdout_share=0.0),
    top_k=5,
    folds=3,
)


def demo_concept_types(version: DictionaryVersion) -> dict[str, tuple[str, ...]]:
    """Each concept's known types (the demo's MEDIC slims), as the re-ranker learns them."""
    out: dict[str, list[str]] = {}
    through = Concept.known_types.through.objects.filter(concept__version=version)
    for cid, label in through.values_list("concept__concept_id", "knowntype__label").order_by("concept__concept_id", "knowntype__label"):
        out.setdefault(cid, []).append(label)
    return {cid: tuple(labels) for cid, labels in out.items()}


def train_demo_latte(cache: Path, collection: Collection) -> Path:
    """The LATTE artifact folder for the demo collection: trained once into ``cache``, then reused."""
    folder = cache / "latte"
    if (folder / "rerank" / "model.pt").exists():
        return folder
    from linker.encoders import TransformerEncoder

    assert collection.dictionary is not None
    version = collection.dictionary.latest_version()
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    base = Linker.build(concept_records(version), TransformerEncoder(), LinkerConfig())
    base.save(cache / "base")
    docs = gold_documents([collection.pk])
    inputs = TrainingInputs(
        table=base.table.copy(), pairs=[], concept_counts=prior_counts(docs, base.table), out=folder,
        documents=docs, concept_types=demo_concept_types(version), base_artifact=cache / "base",
    )
    trained, _ = train("latte", inputs, LATTE, TrainingCallbacks())
    return Path(trained)


def activate_artifact(version: DictionaryVersion, folder: Path) -> IndexVersion:
    """An index version serving ``folder`` for the dictionary, made active (the previous one retired)."""
    index = IndexVersion.objects.create(
        dictionary=version.dictionary, dictionary_version=version, artifact_path=str(folder), state=IndexVersion.State.READY
    )
    return activate_index(index.pk)


def corrupted_copy(folder: Path, out: Path) -> Path:
    """A copy of the artifact whose re-ranker weights are junk: the linker refuses it and ranks by the retriever."""
    shutil.copytree(folder, out)
    (out / "rerank" / "model.pt").write_bytes(b"not a checkpoint")
    return out


def linked(linker: Linker, mention: Mention, k: int = 10) -> LinkedMention:
    return linker.link_in_context([MentionSpan(mention.text, mention.start, mention.end)], mention.document.text, k=k)[0]


def mention_with_a_conflict(linker: Linker, collection: Collection, top1: bool = False) -> tuple[Mention, LinkedMention]:
    """A mention (first in document order) whose re-ranked candidates include a type conflict (at rank 1 with ``top1``)."""
    for mention in Mention.objects.filter(document__collection=collection).select_related("document").order_by("document_id", "start"):
        result = linked(linker, mention)
        typing = result.typing or []
        if (typing[:1] if top1 else typing) and any(t.type_conflict for t in (typing[:1] if top1 else typing)):
            return mention, result
    raise AssertionError("the demo re-ranker predicts no type conflict for any mention")
