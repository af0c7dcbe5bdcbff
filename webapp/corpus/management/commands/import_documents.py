"""``manage.py import_documents PATH --collection ncbi-train``: a PubTator file with gold mentions, in one transaction."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.importers import import_pubtator
from webapp.vocab.management.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Import the documents and gold mentions of a PubTator file into COLLECTION (created if new). "
        "Documents already in the collection are skipped with a warning."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="The PubTator file, e.g. ../shared/data/ncbi-disease/NCBItrainset_corpus.txt")
        parser.add_argument("--collection", required=True, help="Collection slug (created if new).")
        parser.add_argument("--title", help="Title of a new collection (default: the slug).")
        parser.add_argument(
            "--dictionary", help="Dictionary slug whose latest version the gold ids resolve against, e.g. medic."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with progress_bar("documents", enabled=options["verbosity"] > 0) as progress:
            try:
                report = import_pubtator(
                    options["path"],
                    collection_slug=options["collection"],
                    title=options["title"],
                    dictionary_slug=options["dictionary"],
                    progress=progress,
                )
            except (ValueError, FileNotFoundError) as exc:  # ParseError is a ValueError: "path:line: message"
                raise CommandError(str(exc)) from exc
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(report.message)
