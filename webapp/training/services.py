"""Build index versions from the database and activate them atomically.

The linker package knows nothing of Django: this module reads concepts and names (curator synonyms
included) into ``linker`` records, builds a :class:`linker.linker.Linker`, and saves it as the index
version's artifact folder under ``ARTIFACT_ROOT/indexes/<id>/``.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.urls import reverse
from django.utils import timezone

from linker.data import ConceptRecord, Synonym
from webapp.artifacts.local import ensure_local
from webapp.artifacts.manifests import publish
from webapp.audit import actions
from webapp.audit.events import record
from webapp.core.queue import enqueue, job_task_id
from webapp.jobs import lifecycle
from webapp.linking.devices import batch_device
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.linking.vector_tables import drop_partial_table
from webapp.training.errors import RunError
from webapp.training.index_builds import check_index_build
from webapp.training.index_jobs import (
    build_ended,
    build_job_id,
    build_started,
    index_being_built,
    index_build_lock,
    new_build_job,
)
from webapp.training.index_progress import LINKER_PHASES, Echo, IndexBuildCancelled, IndexProgressRecorder
from webapp.training.job_caps import check_index_build_cap
from webapp.training.models import CANCELLED_BY_ADMIN
from webapp.training.signals import index_promoted
from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

if TYPE_CHECKING:  # the index build's (torch, faiss): imported where it runs, not when Django loads (issue #45)
    from linker.config import LinkerConfig
    from linker.linker import Linker

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]


def concept_records(version: DictionaryVersion) -> list[ConceptRecord]:
    """Every live concept of a dictionary version with all its names (dictionary, curator, training)."""
    names: dict[int, list[str]] = defaultdict(list)
    for concept_pk, text in Name.objects.filter(concept__version=version).values_list("concept_id", "text").iterator(chunk_size=20000):
        names[concept_pk].append(text)
    records = []
    rows = Concept.objects.filter(version=version, obsolete=False).values_list("pk", "concept_id", "preferred_name", "alt_ids")
    for pk, cid, preferred, alt_ids in rows.iterator(chunk_size=20000):
        records.append(
            ConceptRecord(
                concept_id=cid,
                preferred_name=preferred,
                synonyms=tuple(Synonym(t) for t in names.get(pk, []) if t != preferred),
                alt_ids=tuple(alt_ids or ()),
            )
        )
    return records


def index_folder(index: IndexVersion) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "indexes" / str(index.pk)


def _encoder_and_config(encoder: EncoderModel | None) -> tuple[Any, LinkerConfig]:
    """The encoder of an EncoderModel: a linker artifact (its encoder, of any kind, and λ) or an encoder folder
    (a Hugging Face one, or any kind :func:`linker.encoders.base.load_encoder` reads by its encoder.json), on the
    CPU."""
    from linker.config import LinkerConfig

    if encoder is None:
        return None, LinkerConfig()
    from linker.encoders.registry import load_encoder

    folder = ensure_local(encoder.artifact_path)  # fetched when a worker on another host trained it
    config_file = folder / "config.json"
    if (folder / "encoder").is_dir() and config_file.exists():
        payload = json.loads(config_file.read_text())
        return load_encoder(folder / "encoder"), LinkerConfig.from_dict(payload.get("config", {}))
    if not folder.is_dir():
        raise FileNotFoundError(f"encoder {encoder.name}: {folder} is not a folder")
    return load_encoder(folder), LinkerConfig()


def _with_index_kind(config: LinkerConfig, records: list[ConceptRecord], say: Progress) -> LinkerConfig:
    """``config`` with the pgvector index kind where the dictionary has LINKER_PGVECTOR_FROM names or more and the
    kind was left to the size (auto): its vectors then live in this database, not in every web process."""
    threshold = settings.LINKER_PGVECTOR_FROM
    names = sum(1 + len(r.synonyms) for r in records)
    if not threshold or config.index.kind != "auto" or names < threshold:
        return config
    say(f"{names:,} names: the index goes into PostgreSQL (pgvector HNSW; LINKER_PGVECTOR_FROM={threshold:,})")
    return replace(config, index=replace(config.index, kind="pgvector"))


def _first_stage(index: IndexVersion, encoder: Any, config: LinkerConfig) -> tuple[Any, LinkerConfig]:
    """The fast encoder of ``index.first_stage`` and the transformer's config (its λ kept) with the "exact" cascade.

    Checked again here, on the loaded encoders: the row may predate a folder being replaced."""
    assert index.first_stage is not None
    if encoder is None or getattr(encoder, "kind", "") != "transformer":
        kind = getattr(encoder, "kind", "no") if encoder is not None else "no"
        raise ValueError(f"a first stage stands in front of a transformer, and this index has {kind} encoder")
    fast, _ = _encoder_and_config(index.first_stage)
    if getattr(fast, "kind", "") not in ("bne", "dan"):
        raise ValueError(f"first stage {index.first_stage.name}: {index.first_stage.artifact_path} holds a "
                         f"{getattr(fast, 'kind', 'transformer')} encoder, not BNE or DAN")
    return fast, replace(config, retrieval=replace(config.retrieval, cascade="exact"))


def _carry_concept_prior(encoder: EncoderModel | None, linker: Linker, say: Progress) -> None:
    """A linker artifact's trained concept prior, of the concepts this dictionary version has, goes with its λ, dense
    scale and prior weight (:func:`_encoder_and_config` carries those): a prior weight over no prior ranks as 0.0
    would. The build says which weights it scores with, the artifact's or the defaults."""
    from linker.scoring import scoring_for

    scoring = scoring_for(ensure_local(encoder.artifact_path) if encoder is not None else None)
    known = set(linker.table.concepts)
    prior = {cid: value for cid, value in scoring.concept_prior.items() if cid in known}
    linker.retriever.concept_prior = prior  # a fresh linker no one ranks with yet: set in place
    scoring = replace(scoring, retrieval=linker.config.retrieval, concept_prior=prior)
    say(f"scoring with {scoring.describe()}")


def _carry_reranker(encoder: EncoderModel | None, linker: Linker, say: Progress) -> None:
    """An index built with a linker artifact that holds a LATTE re-ranker (``python -m linker train-rerank``)
    keeps it when it fits this dictionary version and encoder; otherwise the index serves the retriever's
    ranking and the build says why."""
    rerank = ensure_local(encoder.artifact_path) / "rerank" if encoder is not None else None
    if rerank is None or not rerank.is_dir():
        return
    from linker.rerank import Reranker, RerankerError

    try:
        linker.reranker = Reranker.load(rerank, linker.encoder, linker.table)
        say("the artifact's LATTE re-ranker is carried over")
    except RerankerError as exc:
        say(f"the artifact's re-ranker is not used: {exc}")


def create_index_version(
    version: DictionaryVersion, encoder: EncoderModel | None, user: Any = None, first_stage: EncoderModel | None = None,
    activate: bool = False,
) -> IndexVersion:
    """A ``building`` index version (``activate``: to be activated once built, kept on the row so that a build queued
    again still is); :class:`webapp.training.index_builds.IndexBuildError` (a RunError) names what does not fit (a
    first stage that is not BNE/DAN, of another dictionary, or without a transformer to stand in front of; an
    encoder whose folder is gone)."""
    check_index_build(version.dictionary, encoder, first_stage)
    return IndexVersion.objects.create(
        dictionary=version.dictionary, dictionary_version=version, encoder=encoder, first_stage=first_stage,
        created_by=user, activate_when_built=activate, build=new_build_job(user),
    )


@transaction.atomic
def queue_index_build(
    dictionary: Dictionary, encoder: EncoderModel | None, user: Any = None, queue: str | None = None,
    first_stage: EncoderModel | None = None, activate: bool = False,
) -> IndexVersion:
    """A ``building`` index version of the dictionary's latest release with ``encoder`` (and ``first_stage`` in front
    of it), built on the gpu queue after commit (``build_index --queue`` from a page); with ``activate``, activated
    once built and the open mentions of the dictionary's collections re-linked (:func:`promote_index`)."""
    version = dictionary.latest_version()
    if version is None:
        raise RunError(f"dictionary {dictionary.slug!r} has no imported release")
    check_index_build_cap(user, dictionary)
    index = create_index_version(version, encoder, user if getattr(user, "pk", None) else None, first_stage, activate)
    enqueue("tasks.indexing.build_index_task", index.pk, activate, queue=queue, task_id=job_task_id(index.build),
            on_failure=partial(_unqueued, index.pk))
    return index


def _unqueued(index_id: int, exc: Exception) -> None:
    IndexVersion.objects.filter(pk=index_id, state=IndexVersion.State.BUILDING).update(
        state=IndexVersion.State.FAILED, error=str(exc), finished_at=Now())
    build_ended(IndexVersion.objects.get(pk=index_id))


def build_index(index: IndexVersion, progress: Progress | None = None, echo: Echo | None = None) -> IndexVersion:
    """Build the artifact of a ``building`` index version; failures leave it ``failed`` with the reason, a build an
    admin cancelled (:func:`cancel_index_build`) ends ``cancelled`` (returned, not raised), and neither leaves a
    folder behind. One build of an index at a time: a second waits, then finds it built (or ended).

    ``progress`` gets messages ("2,000 concepts read from the database"); ``echo`` every progress report (phase,
    names done, names in all), unthrottled. The row gets them at most once a second (:mod:`index_progress`)."""
    with index_build_lock(index):
        state = IndexVersion.objects.filter(pk=index.pk).values_list("state", flat=True).first()
        if state != IndexVersion.State.BUILDING:
            index.refresh_from_db()
            build_ended(index)
            return index
        build_started(index)
        try:
            with IndexProgressRecorder(index.pk, echo=echo) as recorder:
                return _build(index, progress, recorder)
        finally:
            build_ended(index)


def _build(index: IndexVersion, progress: Progress | None, recorder: IndexProgressRecorder) -> IndexVersion:
    from linker.build import encoding_device
    from linker.device import device_label, encode_batch_size
    from linker.encoders.transformer import TransformerEncoder
    from linker.linker import Linker

    say = progress or (lambda message: None)
    started = time.perf_counter()
    folder = index_folder(index)
    tmp = folder.with_name(folder.name + ".partial")
    try:
        recorder(IndexVersion.Phase.READING)
        records = concept_records(index.dictionary_version)
        if not records:
            raise ValueError(f"{index.dictionary_version} has no concepts to index")
        say(f"{len(records):,} concepts read from the database")
        recorder(IndexVersion.Phase.LOADING)
        encoder, config = _encoder_and_config(index.encoder)
        if encoder is not None:
            # The batch device (LINKER_DEVICE: CUDA where there is one); BNE and DAN stay on the CPU.
            transformer = isinstance(encoder, TransformerEncoder)
            if transformer:
                encoder.place(batch_device())
            # A quantised linker's int8 copy runs on the CPU whatever the device (Linker.build makes it).
            where = "cpu" if transformer and config.quantize else encoding_device(encoder)
            run_batch = encode_batch_size(where, config.encode_batch_size) if transformer else config.encode_batch_size
            say(f"encoding names on {device_label(where)}, {run_batch:,} a batch")
        fast = None
        if index.first_stage_id is not None:
            fast, config = _first_stage(index, encoder, config)
            say(f"first stage {index.first_stage.name} ({index.first_stage.kind_label}): the transformer encodes only "
                "mentions that are not a dictionary name")
        config = _with_index_kind(config, records, say)
        linker = Linker.build(records, encoder, config, metadata={"index_version": index.pk}, first_stage_encoder=fast,
                              progress=lambda phase, done, total: recorder(LINKER_PHASES.get(phase, phase), done, total))
        say(f"{len(linker.table):,} names indexed")
        _carry_concept_prior(index.encoder, linker, say)
        _carry_reranker(index.encoder, linker, say)
        recorder(IndexVersion.Phase.SAVING)
        shutil.rmtree(tmp, ignore_errors=True)
        linker.save(tmp)
        recorder.check()  # the last moment a cancel can take effect: nothing is in place yet
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)  # the folder appears complete or not at all
        publish(folder)  # before the row says ready: every host can load a ready index (webapp.artifacts)
    except IndexBuildCancelled as exc:
        drop_partial_table(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        IndexVersion.objects.filter(pk=index.pk, state=IndexVersion.State.BUILDING).update(
            state=IndexVersion.State.CANCELLED, finished_at=Now(),
            error=f"{CANCELLED_BY_ADMIN} {exc.where}; nothing of it was kept")
        index.refresh_from_db()
        say(index.error)
        return index
    except BaseException as exc:  # an interrupted build (Ctrl-C on build_index) too: not left building, nor re-queued
        drop_partial_table(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        IndexVersion.objects.filter(pk=index.pk).update(
            state=IndexVersion.State.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=Now())
        raise
    IndexVersion.objects.filter(pk=index.pk).update(
        state=IndexVersion.State.READY,
        artifact_path=str(folder),
        name_count=len(linker.table),
        concept_count=len(linker.table.concepts),
        build_seconds=time.perf_counter() - started,
        error="",
        phase=IndexVersion.Phase.DONE,
        finished_at=Now(),
    )
    index.refresh_from_db()
    return index


def cancel_index_build(index_id: int) -> IndexVersion:
    """An admin's request to stop a build. One no builder has taken yet is cancelled at once (its task, when it comes,
    finds it so and does nothing); a running one is asked to stop, and does at its next progress report (between two
    batches of names, within a second or so): it ends ``cancelled``, nothing of it kept, never activated. An index
    that is no longer building stays as it is."""
    with transaction.atomic():
        index = IndexVersion.objects.select_for_update().get(pk=index_id)
        if index.state != IndexVersion.State.BUILDING:
            return index
        index.cancel_requested = True
        fields = ["cancel_requested"]
        # Taken for this transaction when free, so no build can start before the cancellation is committed.
        if not index_being_built(index):
            index.state, index.finished_at = IndexVersion.State.CANCELLED, timezone.now()
            index.error = f"{CANCELLED_BY_ADMIN} before a worker started it"
            fields += ["state", "finished_at", "error"]
        index.save(update_fields=fields)
        if index.state == IndexVersion.State.CANCELLED:
            lifecycle.stop_cancelled(build_job_id(index), index.error)
        else:
            lifecycle.request_cancel(build_job_id(index))
    return index


class ActivationError(ValueError):
    pass


@transaction.atomic
def activate_index(index_id: int, user: Any = None) -> IndexVersion:
    """Make an index the one its dictionary serves, retiring the previous one, in one transaction.

    The dictionary row is locked first so that two activations at once serialise; the partial unique
    index ``one_active_index_per_dictionary`` guarantees the outcome even if something bypasses this.
    """
    index = IndexVersion.objects.select_related("dictionary").get(pk=index_id)
    Dictionary.objects.select_for_update().get(pk=index.dictionary_id)
    index.refresh_from_db()
    if index.state == IndexVersion.State.ACTIVE:
        return index
    if index.state not in (IndexVersion.State.READY, IndexVersion.State.RETIRED):
        raise ActivationError(f"index {index.pk} is {index.state}; only a ready or retired index can be activated")
    now = timezone.now()
    previous = IndexVersion.objects.filter(dictionary_id=index.dictionary_id, state=IndexVersion.State.ACTIVE)
    replaced = list(previous.values_list("pk", flat=True))
    previous.update(state=IndexVersion.State.RETIRED, retired_at=now)
    before = {"state": index.state, "active_index": replaced[0] if replaced else None}
    index.state = IndexVersion.State.ACTIVE
    index.activated_at = now
    index.save(update_fields=["state", "activated_at"])
    record(actions.INDEX_ACTIVATED, actor=user, obj=index, label=index.label, before=before,
           after={"state": index.state, "dictionary": index.dictionary.slug}, link=reverse("training:models"))
    return index


def promote_index(index_id: int, user: Any = None) -> IndexVersion:
    """Activate an index (one atomic switch), then re-link the open mentions of its dictionary's collections.

    When the index serves another release than the one it replaces, the curator synonyms of the old release are
    carried over first. Requests in flight keep the Linker object they hold (the old index); new requests load the new one from
    the registry. The re-linking runs on a worker after commit and only touches open (pending or suggested)
    mentions: a curator's decision keeps the suggestions it was made on.
    """
    from webapp.corpus.detection import requeue_after_activation
    from webapp.corpus.models import Collection

    serving = IndexVersion.objects.filter(
        dictionary__index_versions__pk=index_id, state=IndexVersion.State.ACTIVE).values_list("dictionary_version_id", flat=True).first()
    index = activate_index(index_id, user=user)
    # A newer release starting to serve carries over the synonyms curators added to the old one since its import
    # (webapp.training.releases.carry_over_on_promotion; idempotent: nothing is copied twice), so none is lost.
    index_promoted.send(sender=IndexVersion, index=index, previous_version_id=serving)
    for collection_id in Collection.objects.filter(dictionary_id=index.dictionary_id).values_list("pk", flat=True):
        enqueue("tasks.curation.suggest_links_task", collection_id)
    # Documents whose mention detection failed for want of an index: their matcher can run now.
    requeue_after_activation(index.dictionary_id)
    return index
