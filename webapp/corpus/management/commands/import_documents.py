"""``manage.py import_documents PATH --collection ncbi-train [--format text]``: a file of documents, in one transaction
(PubMed XML, BioC, JSON Lines and PubAnnotation: a batch per transaction, webapp.corpus.batch_import)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.formats import FORMATS
from webapp.corpus.formats.services import import_documents
from webapp.vocab.management.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Import the documents of a file (PubTator by default, with its gold mentions; or any format of --format) into "
        "COLLECTION (created if new). Documents already in the collection are skipped with a warning (BioC, JSON Lines, "
        "PubAnnotation, PubMed XML: unchanged, or replaced where the file changed their text); documents "
        "without mentions (plain text) are queued for mention detection."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="The file, e.g. ../shared/data/ncbi-disease/NCBItrainset_corpus.txt")
        parser.add_argument("--collection", required=True, help="Collection slug (created if new).")
        parser.add_argument("--title", help="Title of a new collection (default: the slug).")
        parser.add_argument(
            "--dictionary", help="Dictionary slug whose latest version the gold ids resolve against, e.g. medic."
        )
        parser.add_argument(
            "--format", dest="fmt", choices=list(FORMATS), default="pubtator",
            help="The file's format (default: pubtator). 'text': a .txt file is one document, a .zip or .tar.gz of .txt "
                 "files one document per file.",
        )

        parser.add_argument(
            "--force", action="store_true",
            help="PubMed XML, BioC, JSON Lines or PubAnnotation: also replace or delete documents with curators' "
                 "decisions or gold annotations whose text the file changes (default: keep them).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with progress_bar("documents", enabled=options["verbosity"] > 0) as progress:
            try:
                report = import_documents(
                    options["path"],
                    options["fmt"],
                    collection_slug=options["collection"],
                    title=options["title"],
                    dictionary_slug=options["dictionary"],
                    progress=progress,
                    force=options["force"],
                )
            except (ValueError, FileNotFoundError) as exc:  # ParseError and FormatError are ValueErrors: "path:line: message"
                raise CommandError(str(exc)) from exc
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(report.message)
