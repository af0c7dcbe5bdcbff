"""python manage.py build_index --dictionary medic [--sparse-only | --model FOLDER | --encoder NAME] [--first-stage NAME]
[--activate] [--queue] [--progress-every SECONDS]

Built here, it prints where it is: each phase as it starts, and every few seconds while names are encoded the names
done of all, names/s and the time left ("encoding names: 34,560 / 76,012 (45%), 118 names/s, about 5 min 17 s left").
The index version's row gets the same progress (the models page shows it), and an admin can cancel it there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.artifacts.manifests import publish
from webapp.core.queue import QueueUnavailable, job_task_id, send_now
from webapp.corpus.models import Collection
from webapp.linking.models import EncoderModel, IndexVersion
from webapp.training.errors import RunError
from webapp.training.index_progress import ConsoleProgress
from webapp.training.services import build_index, create_index_version, promote_index
from webapp.vocab.models import Dictionary


class Command(BaseCommand):
    help = "Build a linker index (tf-idf + faiss) for a dictionary's latest release, optionally activating it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dictionary", required=True, help="dictionary slug")
        encoder = parser.add_mutually_exclusive_group()
        encoder.add_argument("--sparse-only", action="store_true", help="tf-idf retrieval only, no encoder")
        encoder.add_argument("--model", type=Path, help="a trained linker artifact or a local Hugging Face folder (default: the base model, zero-shot)")
        encoder.add_argument("--encoder", help="name of an existing EncoderModel")
        parser.add_argument(
            "--first-stage", metavar="NAME",
            help="a BNE or DAN encoder (an EncoderModel of the same dictionary) searched in front of the transformer: "
                 "it then encodes only mentions that are not a dictionary name; top candidates unchanged",
        )
        parser.add_argument("--activate", action="store_true", help="make it the dictionary's active index when built")
        parser.add_argument("--queue", action="store_true", help="build on a worker (gpu queue) instead of in this process")
        parser.add_argument("--progress-every", type=float, default=5.0, metavar="SECONDS",
                            help="while names are encoded, print the names done, names/s and time left this often "
                                 "(default 5)")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            dictionary = Dictionary.objects.get(slug=opts["dictionary"])
        except Dictionary.DoesNotExist:
            raise CommandError(f"no dictionary {opts['dictionary']!r}; import one first (import_dictionary)") from None
        version = dictionary.latest_version()
        if version is None:
            raise CommandError(f"dictionary {dictionary.slug!r} has no imported release")
        encoder = self._encoder(opts)
        first_stage = self._named(opts["first_stage"]) if opts["first_stage"] else None
        try:
            index = create_index_version(version, encoder, first_stage=first_stage, activate=opts["activate"])
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        if opts["queue"]:
            try:
                send_now("tasks.indexing.build_index_task", index.pk, opts["activate"], task_id=job_task_id(index))
            except QueueUnavailable as exc:
                IndexVersion.objects.filter(pk=index.pk, state=IndexVersion.State.BUILDING).update(
                    state=IndexVersion.State.FAILED, error=str(exc))
                raise CommandError(f"index {index.pk} failed: {exc}") from exc
            self.stdout.write(f"index {index.pk} queued on the gpu queue; the models page (/training/models/) shows "
                              "its progress")
            return
        stage = f", {index.first_stage_label}" if first_stage else ""
        self.stdout.write(f"building index {index.pk} for {version} with {encoder.name if encoder else 'sparse retrieval only'}{stage}")
        echo = ConsoleProgress(lambda line: self.stdout.write(f"  {line}"), every=max(0.0, opts["progress_every"]))
        try:
            index = build_index(index, progress=lambda m: self.stdout.write(f"  {m}"), echo=echo)
        except Exception as exc:
            raise CommandError(f"index {index.pk} failed: {exc}") from exc
        if index.state != IndexVersion.State.READY:  # cancelled from the models page meanwhile
            raise CommandError(f"index {index.pk} {index.get_state_display().lower()}: {index.error}")
        self.stdout.write(self.style.SUCCESS(
            f"index {index.pk} ready: {index.name_count:,} names, {index.build_seconds:.1f} s -> {index.artifact_path}"))
        if opts["activate"]:
            promote_index(index.pk)
            collections = Collection.objects.filter(dictionary=dictionary).count()
            relinking = (f"; the open mentions of its {collections} collection{'s' if collections != 1 else ''} are "
                         "re-linked on a worker") if collections else ""
            self.stdout.write(self.style.SUCCESS(f"index {index.pk} is now active for {dictionary.slug}{relinking}"))

    def _encoder(self, opts: dict[str, Any]) -> EncoderModel | None:
        if opts["sparse_only"]:
            return None
        if opts["encoder"]:
            return self._named(opts["encoder"])
        from linker.encoders.transformer import default_base_model

        folder: Path = (opts["model"] or default_base_model()).resolve()
        if not folder.is_dir():
            raise CommandError(f"--model {folder}: not a folder")
        is_artifact = (folder / "encoder").is_dir() and (folder / "config.json").exists()
        method = EncoderModel.Method.IMPORTED if is_artifact else EncoderModel.Method.ZERO_SHOT
        name = f"{method.replace('_', '-')}-{folder.name}"[:120].lower()
        encoder, _ = EncoderModel.objects.get_or_create(
            name=name, defaults={"method": method, "base_model": str(folder), "artifact_path": str(folder)}
        )
        if opts["model"]:  # a folder of this host's: a worker on another host fetches it from the artifact store
            publish(folder)
        return encoder

    @staticmethod
    def _named(name: str) -> EncoderModel:
        try:
            return EncoderModel.objects.get(name=name)
        except EncoderModel.DoesNotExist:
            raise CommandError(f"no encoder model named {name!r}") from None
