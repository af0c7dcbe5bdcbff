"""``manage.py corpus_run COLLECTION [--documents unannotated] [--concepts D1,D2 | --concepts-file F] [--roots R]
[--types Disease] [--chunk-size 200] [--wait | --here]``: detect and link over a collection as a corpus run."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.models import Collection
from webapp.curation.corpus_runs.chunk import run_chunk
from webapp.curation.corpus_runs.jobs import CHUNK_DOCUMENTS, start_run
from webapp.curation.corpus_runs.scope import DOCUMENT_FILTERS, ScopeError, parse_scope
from webapp.curation.services.detection import DetectionUnavailable
from webapp.jobs.models import Job

POLL_S = 2.0


class Command(BaseCommand):
    help = ("Start a corpus run: detect mentions and link them over COLLECTION (or part of it), chunk by chunk on the "
            "workers, within an optional concept scope and mention types (docs/corpus-runs.md).")

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("collection", help="The collection's slug.")
        parser.add_argument("--documents", choices=list(DOCUMENT_FILTERS), default="all",
                            help="all (default), or unannotated: the documents without any mention yet.")
        parser.add_argument("--concepts", default="", help="Comma-separated concept ids its links may name.")
        parser.add_argument("--concepts-file", type=Path, help="A file of concept ids, one a line (a whitelist).")
        parser.add_argument("--roots", default="", help="Comma-separated subtree roots: every concept under one.")
        parser.add_argument("--types", default="", help="Comma-separated mention types it detects and links.")
        parser.add_argument("--chunk-size", type=int, default=CHUNK_DOCUMENTS, help="Documents per chunk (a task each).")
        how = parser.add_mutually_exclusive_group()
        how.add_argument("--wait", action="store_true", help="Wait for the workers to finish it, showing its progress.")
        how.add_argument("--here", action="store_true", help="Run its chunks in this process instead of on the workers.")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = Collection.objects.select_related("dictionary").filter(slug=options["collection"]).first()
        if collection is None:
            raise CommandError(f"no collection {options['collection']}")
        concepts = options["concepts"]
        if options["concepts_file"]:
            try:
                concepts += "," + ",".join(options["concepts_file"].read_text().split())
            except OSError as exc:
                raise CommandError(f"{options['concepts_file']}: {exc}") from exc
        try:
            scope = parse_scope({"documents": options["documents"], "concepts": concepts, "roots": options["roots"],
                                 "mention_types": options["types"]})
            run = start_run(collection, scope, chunk_size=options["chunk_size"], send=not options["here"])
        except (ScopeError, DetectionUnavailable) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"corpus run {run.pk}: {run.progress_total} documents in {run.arguments['chunks']} chunks "
                          f"({run.arguments['models']['detection']})")
        if options["here"]:
            for chunk in run.children.order_by("pk").values_list("pk", flat=True):
                run_chunk(chunk)
        elif options["wait"]:
            self._wait(run.pk)
        run.refresh_from_db()
        self.stdout.write(f"corpus run {run.pk}: {run.state}, {run.progress} of {run.progress_total} documents "
                          f"{run.error or ''}".rstrip())

    def _wait(self, pk: int) -> None:
        while True:
            run = Job.objects.get(pk=pk)
            if run.is_finished:
                return
            self.stdout.write(f"{run.state}: {run.progress} of {run.progress_total} documents, "
                              f"{run.progress_note or 'waiting for a worker'} {run.eta}".rstrip())
            time.sleep(POLL_S)
