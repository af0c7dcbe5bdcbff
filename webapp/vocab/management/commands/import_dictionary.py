"""``manage.py import_dictionary PATH --slug medic``: one dictionary file as a new version, in one transaction."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from linker.data import DICTIONARY_FORMATS
from webapp.vocab.importers import import_dictionary
from webapp.vocab.management.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Import a dictionary (MEDIC TSV, DNorm/BioSyn text or OBO, gzipped or not) as a new version of the "
        "dictionary SLUG. The same file or release imported again is reported and not duplicated."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="The dictionary file, e.g. ../shared/data/medic/CTD_diseases.tsv.gz")
        parser.add_argument("--slug", required=True, help="Dictionary to add the version to (created if new).")
        parser.add_argument("--title", help="Title of the dictionary (default: the slug in capitals).")
        parser.add_argument("--format", dest="fmt", choices=DICTIONARY_FORMATS, help="Default: sniffed from the file.")
        parser.add_argument("--release", help="Release label (default: from the file header, else name + checksum).")
        parser.add_argument(
            "--include-obsolete", action="store_true", help="OBO: import obsolete terms too, flagged obsolete."
        )
        parser.add_argument("--user", help="Username recorded as the importer.")

    def handle(self, *args: Any, **options: Any) -> None:
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user {options['user']!r}")
        with progress_bar("concepts", enabled=options["verbosity"] > 0) as progress:
            try:
                report = import_dictionary(
                    options["path"],
                    dictionary_slug=options["slug"],
                    title=options["title"],
                    fmt=options["fmt"],
                    release=options["release"],
                    include_obsolete=options["include_obsolete"],
                    user=user,
                    progress=progress,
                )
            except (ValueError, FileNotFoundError) as exc:  # ParseError is a ValueError: "path:line: message"
                raise CommandError(str(exc)) from exc
        for warning in report.warnings:
            if warning != report.message:
                self.stderr.write(f"warning: {warning}")
        self.stdout.write(report.message)
