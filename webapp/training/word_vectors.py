"""Word-vector models: the word vectors BNE and DAN runs start from, trained by a fastText run or uploaded.

A :class:`WordVectorModel` row stands for a complete folder saved by
:class:`linker.encoders.wordvec.WordVectors` under ``ARTIFACT_ROOT``. An admin's ``.vec``/``.bin`` file is
read with :meth:`WordVectors.from_file` (which refuses a malformed, truncated or empty file, or a dimension
other than the one asked for, naming the file and the fault), saved as such a folder, and only then recorded:
a refused file leaves no row and no folder.

Where the file is read: in the request up to :data:`SYNC_LIMIT_BYTES` (a few MB read in well under a
second), on a worker above it (a real vocabulary is hundreds of MB; a request would time out), as a
:class:`WordVectorUpload` job that the models page follows. Either way one function,
:func:`import_word_vectors`, does the reading and the recording.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.utils import timezone
from django.utils.text import slugify

from linker.encoders.wordvec import WordVectors, WordVectorsError
from webapp.artifacts.local import ensure_local
from webapp.artifacts.manifests import is_available, publish
from webapp.core.queue import QueueUnavailable, enqueue, job_task_id
from webapp.core.uploads import new_upload_folder
from webapp.jobs import lifecycle
from webapp.jobs.lease import JobLease
from webapp.training.errors import RunError
from webapp.training.models import TrainingRun, WordVectorModel, WordVectorUpload
from webapp.training.services import concept_records
from webapp.vocab.models import Dictionary

logger = logging.getLogger(__name__)
VECTORS_FILE = "vectors.kv"  # what WordVectors.is_folder looks for: here, or listed in the artifact store

__all__ = [
    "SYNC_LIMIT_BYTES", "UploadOutcome", "WordVectorRow", "check_word_vectors", "dictionary_names",
    "get_word_vectors", "import_word_vectors", "run_upload", "upload_word_vectors", "word_vector_models",
    "word_vector_rows",
]

# Files up to this size are read in the request; larger ones on a worker.
SYNC_LIMIT_BYTES = 4 * 1024 * 1024
SUFFIXES = (".vec", ".bin", ".txt")
WORD_VECTORS_KIND = "word-vectors"  # config.json "kind", as the linker's fasttext artifact writes it


def word_vector_models() -> QuerySet[WordVectorModel]:
    """Every word-vector model a BNE or DAN run may start from, newest first."""
    return WordVectorModel.objects.select_related("run", "dictionary").order_by("-created_at", "-id")


def describe(vectors: WordVectorModel) -> str:
    """A choice's label: name, size, where they came from."""
    return f"{vectors.name} ({vectors.words} words × {vectors.dim}; {vectors.source_label})"


def get_word_vectors(name: str) -> WordVectorModel:
    """The word-vector model called ``name``, or a RunError saying why a run cannot start from it."""
    vectors = WordVectorModel.objects.filter(name=name).first()
    if vectors is None:
        raise RunError(f"no word-vector model named {name!r}")
    check_word_vectors(vectors)
    return vectors


def check_word_vectors(vectors: WordVectorModel) -> None:
    if not _present(vectors):
        raise RunError(f"word vectors {vectors.name!r}: their folder {vectors.artifact_path} is gone")


def dictionary_names(dictionary: Dictionary) -> list[str]:
    """Every name of the dictionary's latest release (preferred names and synonyms), as written."""
    version = dictionary.latest_version()
    if version is None:
        return []
    return [name for record in concept_records(version) for name in record.all_names()]


# --- uploads -----------------------------------------------------------------------------------------------


def _safe_file_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name or "").name).lstrip(".")
    return cleaned or "upload.vec"


def default_name(file_name: str) -> str:
    """A free model name from a file name: "BioWordVec 200d.vec" -> biowordvec-200d (then -2, -3 ...)."""
    base = slugify(Path(file_name).stem)[:100] or "word-vectors"
    name, n = base, 1
    while WordVectorModel.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def check_upload_request(file_name: str, name: str) -> None:
    """What can be refused before a byte is stored: the file's type and a taken name."""
    if Path(file_name).suffix.lower() not in SUFFIXES:
        raise RunError(f"{file_name}: expected a word-vector file ending in .vec, .txt (word2vec text) or .bin "
                       "(fastText or word2vec binary)")
    if WordVectorModel.objects.filter(name=name).exists():
        raise RunError(f"a word-vector model named {name!r} exists already: choose another name")


def _store(upload: UploadedFile) -> Path:
    """The upload on the shared artifact volume (a worker may read it), in a folder of its own."""
    path = new_upload_folder("word-vectors") / _safe_file_name(upload.name or "")
    try:
        with open(path, "wb") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
        publish(path)  # the worker that reads it may be on another host (webapp.artifacts)
    except BaseException:
        _discard(path)
        raise
    return path


def _discard(path: Path) -> None:
    """Remove a stored upload and its folder."""
    shutil.rmtree(path.parent, ignore_errors=True)


@dataclass(frozen=True)
class UploadOutcome:
    """What an upload became: the word vectors (read in the request) or the job reading them on a worker."""

    word_vectors: WordVectorModel | None = None
    job: WordVectorUpload | None = None


def upload_word_vectors(
    upload: UploadedFile, name: str = "", expected_dim: int | None = None, dictionary: Dictionary | None = None,
    user: Any = None, queue: str | None = None,
) -> UploadOutcome:
    """Store an admin's uploaded file and read it: in the request when small (a RunError names the file and
    the fault, and nothing is left), else on a worker (the job says how it went)."""
    file_name = Path(upload.name or "upload.vec").name
    name = name or default_name(file_name)
    check_upload_request(file_name, name)
    if not upload.size:
        raise RunError(f"{file_name}: the file is empty")
    path = _store(upload)
    user = user if getattr(user, "pk", None) else None
    if path.stat().st_size <= SYNC_LIMIT_BYTES:
        try:
            return UploadOutcome(word_vectors=import_word_vectors(path, name, file_name, expected_dim, dictionary, user))
        finally:
            _discard(path)
    try:
        with transaction.atomic():
            job = WordVectorUpload.objects.create(
                name=name, file_name=file_name, path=str(path), size=path.stat().st_size, expected_dim=expected_dim,
                dictionary=dictionary, created_by=user,
            )
            # The default queue: reading a file must not wait behind a long run on the gpu queue.
            enqueue("tasks.training.word_vectors_upload_task", job.pk, queue=queue or "default",
                    task_id=job_task_id(job), on_failure=partial(_unqueued, job.pk))
    except BaseException:
        _discard(path)
        raise
    return UploadOutcome(job=job)


def _unqueued(job_id: int, exc: QueueUnavailable) -> None:
    job = WordVectorUpload.objects.filter(pk=job_id, state=WordVectorUpload.State.QUEUED).first()
    if job is not None:
        _discard(Path(job.path))
        WordVectorUpload.objects.filter(pk=job_id).update(state=WordVectorUpload.State.FAILED, error=str(exc),
                                                          finished_at=timezone.now())


def import_word_vectors(
    path: Path, name: str, file_name: str = "", expected_dim: int | None = None,
    dictionary: Dictionary | None = None, user: Any = None,
) -> WordVectorModel:
    """Read a user's word-vector file, save it as a folder under ``ARTIFACT_ROOT/word-vectors/`` and record it.

    A file :meth:`WordVectors.from_file` refuses is a RunError naming the file (as the admin knows it) and
    the fault; the folder appears complete with its row, or neither does."""
    file_name = file_name or path.name
    try:
        vectors = WordVectors.from_file(path, expected_dim)
    except WordVectorsError as exc:
        raise RunError(str(exc).replace(str(path), file_name)) from exc
    except MemoryError as exc:  # a binary header announcing more vectors than any memory holds ("1e9 1e9")
        raise RunError(f"{file_name}: not a readable word-vector file: its header announces more vectors than fit "
                       "in memory") from exc
    coverage = vectors.coverage(dictionary_names(dictionary)) if dictionary is not None else None
    folder = Path(settings.ARTIFACT_ROOT) / "word-vectors" / name
    partial_folder = folder.with_name(folder.name + ".partial")
    description = vectors.describe() | {"file": file_name}
    published = False
    try:
        if folder.exists():
            raise RunError(f"{folder} exists already: choose another name")
        shutil.rmtree(partial_folder, ignore_errors=True)
        vectors.save(partial_folder)
        payload = {"kind": WORD_VECTORS_KIND, "words": len(vectors), "dim": vectors.dim, "name_coverage": coverage,
                   "source": description, "dictionary": dictionary.slug if dictionary is not None else None}
        (partial_folder / "config.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        with transaction.atomic():
            row = WordVectorModel.objects.create(
                name=name, source=WordVectorModel.Source.UPLOADED, file_name=file_name, words=len(vectors),
                dim=vectors.dim, subwords=vectors.has_subwords, dictionary=dictionary, name_coverage=coverage,
                artifact_path=str(folder), config=description, created_by=user,
            )
            partial_folder.rename(folder)
            published = True
            publish(folder)  # in the row's transaction (the PostgreSQL store): both are there, or neither
    except IntegrityError as exc:
        raise RunError(f"a word-vector model named {name!r} exists already: choose another name") from exc
    finally:
        shutil.rmtree(partial_folder, ignore_errors=True)
        if published and not WordVectorModel.objects.filter(name=name, artifact_path=str(folder)).exists():
            shutil.rmtree(folder, ignore_errors=True)  # renamed, then the transaction failed to commit
    return row


def run_upload(job_id: int) -> str:
    """A worker reads a large upload (``tasks.training.word_vectors_upload_task``); the stored file goes either way.
    Run under the upload's lease (webapp.jobs.lease): a worker that dies leaves it to the job sweep, which fails it
    and removes the file, instead of "checking" for ever."""
    with JobLease(job_id) as lease:
        if not lease.held:
            logger.warning("word-vector upload %s: another worker runs it (or the sweep is failing it); left to it", job_id)
            return "taken"
        return _run_leased_upload(job_id)


def _run_leased_upload(job_id: int) -> str:
    if not lifecycle.take(job_id):  # a re-delivered task of a finished job (one whose worker died runs again)
        return WordVectorUpload.objects.get(pk=job_id).state
    job = WordVectorUpload.objects.get(pk=job_id)
    path = ensure_local(job.path)  # the web host that stored it may be another machine
    try:
        vectors = import_word_vectors(path, job.name, job.file_name, job.expected_dim, job.dictionary, job.created_by)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, RunError) else f"{job.file_name}: {type(exc).__name__}: {exc}"
        if not isinstance(exc, RunError):
            logger.exception("word-vector upload %s failed", job.pk)
        lifecycle.fail(job.pk, reason)
        return WordVectorUpload.State.FAILED
    finally:
        _discard(path)
    with transaction.atomic():
        WordVectorUpload.objects.filter(pk=job.pk).update(word_vectors=vectors)
        lifecycle.succeed(job.pk)
    return WordVectorUpload.State.SUCCEEDED


# --- trained by a run ----------------------------------------------------------------------------------------


def record_trained(run: TrainingRun, folder: Path, report: dict[str, Any]) -> WordVectorModel:
    """A fastText run's word vectors (the caller holds the run's row lock, in its transaction)."""
    source = report.get("fasttext") or {}
    return WordVectorModel.objects.create(
        name=f"fasttext-run-{run.pk}", source=WordVectorModel.Source.TRAINED, words=int(report.get("words", 0)),
        dim=int(report.get("dim", 0)), subwords=True, dictionary=run.dictionary,
        name_coverage=report.get("name_coverage"), artifact_path=str(folder),
        config={k: v for k, v in report.items() if k not in ("metrics",)} | {"params": run.params, "fasttext": source},
        run=run, created_by=run.created_by,
    )


# --- what a BNE or DAN run measured -----------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderScore:
    """One figure of a BNE/DAN run's report, beside the word vectors' own (the mean word vector of a name)."""

    label: str
    value: float
    baseline: float | None = None


def encoder_scores(config: dict[str, Any]) -> tuple[list[EncoderScore], dict[str, Any]]:
    """The dev scores a BNE or DAN run stopped on (with the mean-word-vector baseline) and how it stopped."""
    scores: list[EncoderScore] = []
    metric = str(config.get("stopping_metric") or "")
    if config.get("best_dev_acc") is not None:
        scores.append(EncoderScore("dev Acc@1 (dense only)", float(config["best_dev_acc"]), config.get("baseline_dev_acc")))
    if metric and metric != "best_dev_acc" and isinstance(config.get(metric), (int, float)):
        scores.append(EncoderScore(metric.replace("_", " "), float(config[metric]), config.get(f"baseline_{metric}")))
    if isinstance(config.get("validation_hypernym_mrr"), (int, float)):
        scores.append(EncoderScore("validation hypernym MRR", float(config["validation_hypernym_mrr"]),
                                   config.get("baseline_validation_hypernym_mrr")))
    facts = {k: config[k] for k in ("best_epoch", "stopped", "names_per_s", "dev_pairs", "dev_source") if k in config}
    return scores, facts


# --- the models page -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WordVectorRow:
    """One word-vector model as the models page lists it, with the runs that started from it."""

    vectors: WordVectorModel
    runs: int
    folder_exists: bool


def word_vector_rows(limit: int = 50) -> list[WordVectorRow]:
    models = list(word_vector_models().annotate(run_count=Count("training_runs"))[:limit])
    return [WordVectorRow(m, getattr(m, "run_count", 0), _present(m)) for m in models]


def _present(vectors: WordVectorModel) -> bool:
    """Whether a run could start from them: their folder is here, or in the artifact store (made on another host)."""
    return WordVectors.is_folder(vectors.artifact_path) or is_available(vectors.artifact_path, VECTORS_FILE)


def recent_uploads(limit: int = 10) -> Iterable[WordVectorUpload]:
    """The uploads checked on a worker that are under way or failed (succeeded ones are word vectors now)."""
    return WordVectorUpload.objects.exclude(state=WordVectorUpload.State.SUCCEEDED).select_related("dictionary")[:limit]
