"""``manage.py export_collection SLUG --format jsonl --out FILE|-``: a collection's documents streamed to a file."""

from __future__ import annotations

import gc
import sys
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import ID_FORMS, LINK_CHOICES
from webapp.corpus.models import Collection, Document
from webapp.curation.export import export_documents, stream_documents, streams


class Command(BaseCommand):
    help = (
        "Write every document of collection SLUG to a file (or - for standard output), as the API's export does. "
        "JSON Lines, BioC XML, PubTator and PubAnnotation are written as they are read, a batch of documents at a time "
        "in one snapshot of the database (documents written meanwhile are not in it); brat and text zips are written whole."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug", help="The collection's slug.")
        parser.add_argument("--format", dest="fmt", choices=list(FORMATS), default="jsonl", help="The file format (default: jsonl).")
        parser.add_argument("--out", required=True, help="The file to write, or - for standard output.")
        parser.add_argument("--suggestions", action="store_true", help="Also write the best model suggestion where no gold or curated link exists.")
        parser.add_argument("--ids", choices=list(ID_FORMS), default="dictionary", help="The form of every concept id (default: dictionary).")
        parser.add_argument("--links", choices=list(LINK_CHOICES), default="decided", help="Which links (default: decided).")

    def handle(self, *args: Any, **opts: Any) -> None:
        # What start-up loaded (Django, the apps, torch through the training models: some 300,000 objects) is kept
        # out of the garbage collector's full passes, which otherwise walked it all again and again as the export
        # made its rows: a third of the export's time.
        gc.freeze()
        collection = Collection.objects.filter(slug=opts["slug"]).first()
        if collection is None:
            raise CommandError(f"no collection {opts['slug']!r}")
        documents = Document.objects.filter(collection=collection)
        options = {"suggestions": opts["suggestions"], "ids": opts["ids"], "links": opts["links"], "stem": collection.slug}
        try:
            if streams(opts["fmt"]):
                chunks = stream_documents(documents, opts["fmt"], **options).chunks
            else:
                chunks = iter([export_documents(documents, opts["fmt"], **options).content])
            out = sys.stdout.buffer if opts["out"] == "-" else open(opts["out"], "wb")  # noqa: SIM115
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        started, size = time.perf_counter(), 0
        try:
            for chunk in chunks:
                out.write(chunk)
                size += len(chunk)
        finally:
            if out is not sys.stdout.buffer:
                out.close()
            else:
                out.flush()
        self.stderr.write(f"{collection.slug}: {size:,} bytes of {opts['fmt']} in {time.perf_counter() - started:.2f} s")
