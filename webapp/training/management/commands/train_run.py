"""python manage.py train_run --dictionary medic --collection ncbi-train [--method latte|hiprbert|fasttext|bne|dan]
[--word-vectors NAME] [--epochs N] [--max-queries N] [--wait]"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.core.queue import QueueUnavailable
from webapp.corpus.models import Collection
from webapp.training.base_encoders import get_base_encoder
from webapp.training.errors import RunError
from webapp.training.execution import run_training
from webapp.training.models import TrainingRun, WordVectorModel
from webapp.training.runs import start_run
from webapp.training.word_vectors import get_word_vectors
from webapp.vocab.models import Dictionary


class Command(BaseCommand):
    help = ("Start a training run (BioSyn, LATTE over the active index, HiPrBERT hierarchy pre-training of a base "
            "encoder, BNE or DAN over word vectors) on gold collections + curator decisions, or fastText word vectors "
            "on collections' documents (a worker on the gpu queue runs it).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dictionary", required=True, help="dictionary slug")
        parser.add_argument("--collection", action="append", default=[],
                            help="collection slug (repeatable; BioSyn, LATTE, BNE and DAN need a gold one, HiPrBERT takes "
                                 "their mentions as names, fastText trains on their documents)")
        parser.add_argument("--extra-dictionary", action="append", default=[],
                            help="HiPrBERT: another dictionary to pre-train on (repeatable)")
        parser.add_argument("--eval-collection", help="gold collection slug to evaluate the trained model on")
        parser.add_argument("--method", choices=TrainingRun.Method.values,
                            help="biosyn (default), latte (a re-ranker over the active index), hiprbert (a base encoder), "
                                 "fasttext (word vectors), bne or dan (name encoders over word vectors)")
        parser.add_argument("--epochs", type=int, help="epochs (BioSyn default: the scope's, 10 on a GPU, 1 for the CPU "
                                                       "student; LATTE: 8; the most for BNE and DAN)")
        parser.add_argument("--word-vectors", help="BNE, DAN: name of the word-vector model to start from (default: "
                                                   "train fastText on the run's texts first)")
        parser.add_argument("--max-queries", type=int, help="train on the first N queries only (smoke runs)")
        parser.add_argument("--skip-pretrain", action="store_true", help="no synonym pre-training pass")
        parser.add_argument("--base-model", default="", help="local Hugging Face folder (default: the base model)")
        parser.add_argument("--base-encoder", help="name of a HiPrBERT base encoder to start from")
        parser.add_argument("--params", default="{}", help='more hyperparameters as JSON, e.g. \'{"topk": 10}\'')
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the run until it ends")
        mode.add_argument("--inline", action="store_true", help="train in this process instead of on a worker")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            dictionary = Dictionary.objects.get(slug=opts["dictionary"])
        except Dictionary.DoesNotExist:
            raise CommandError(f"no dictionary {opts['dictionary']!r}") from None
        collections = [self._collection(slug) for slug in opts["collection"]]
        evaluation = self._collection(opts["eval_collection"]) if opts["eval_collection"] else None
        try:
            params = json.loads(opts["params"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--params is not JSON: {exc}") from exc
        if not isinstance(params, dict):
            raise CommandError("--params must be a JSON object")
        epochs_key = "max_epochs" if opts["method"] == TrainingRun.Method.DAN else "epochs"
        for key, option in ((epochs_key, "epochs"), ("max_queries", "max_queries")):
            if opts[option] is not None:
                params[key] = opts[option]
        if opts["skip_pretrain"]:
            params["skip_pretrain"] = True
        extra = []
        for slug in opts["extra_dictionary"]:
            try:
                extra.append(Dictionary.objects.get(slug=slug))
            except Dictionary.DoesNotExist:
                raise CommandError(f"no dictionary {slug!r}") from None
        try:
            base_encoder = get_base_encoder(opts["base_encoder"]) if opts["base_encoder"] else None
            word_vectors = get_word_vectors(opts["word_vectors"]) if opts["word_vectors"] else None
            run = start_run(dictionary, collections, params, base_model=opts["base_model"], eval_collection=evaluation,
                            send=not opts["inline"], method=opts["method"], base_encoder=base_encoder,
                            extra_dictionaries=extra, word_vectors=word_vectors)
        except (RunError, QueueUnavailable) as exc:  # not queued: the run is failed with the reason
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"training run {run.pk} queued")
        if opts["inline"]:
            run_training(run.pk)
        elif opts["wait"]:
            self._follow(run.pk)
        else:
            return
        run.refresh_from_db()
        if run.state != TrainingRun.State.SUCCEEDED:
            raise CommandError(f"training run {run.pk} {run.state}: {run.error}")
        if run.method == TrainingRun.Method.FASTTEXT:
            vectors = WordVectorModel.objects.filter(run=run).first()
            made = (f"word vectors {vectors} ({vectors.words} words of dimension {vectors.dim}; train_run --method bne "
                    f"--word-vectors {vectors})" if vectors else "word vectors")
        elif run.index_version_id:
            made = f"encoder {run.encoder}, index {run.index_version_id} (ready; promote_index {run.index_version_id} to serve it)"
        else:
            made = (f"encoder {run.encoder}, a base encoder in {run.encoder.artifact_path if run.encoder else '?'} "
                    f"(train_run --base-encoder {run.encoder}, build_index --encoder {run.encoder})")
        self.stdout.write(self.style.SUCCESS(
            f"training run {run.pk} succeeded: {made}"
            f"{', metrics ' + json.dumps(run.metrics) if run.metrics else ''}"
        ))

    def _collection(self, slug: str) -> Collection:
        try:
            return Collection.objects.get(slug=slug)
        except Collection.DoesNotExist:
            raise CommandError(f"no collection {slug!r}") from None

    def _follow(self, run_id: int) -> None:
        last = ""
        while True:
            run = TrainingRun.objects.get(pk=run_id)
            line = f"  {run.state} {run.phase} epoch {run.epoch}/{run.epochs} step {run.step}/{run.total_steps}"
            if run.loss_history:
                line += f" loss {run.loss_history[-1]['loss']:.4f}"
            if line != last:
                self.stdout.write(line)
                last = line
            if run.is_finished:
                return
            time.sleep(1.0)
