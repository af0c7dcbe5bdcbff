"""``manage.py import_dictionary PATH --slug medic``: one dictionary file as a new version, in one transaction."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from linker.data import DICTIONARY_FORMATS
from linker.umls import HIERARCHY_SOURCES
from webapp.vocab.importers import import_dictionary
from webapp.vocab.management.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Import a dictionary (MEDIC TSV, DNorm/BioSyn text or OBO, gzipped or not; a UMLS RRF release folder or .zip) "
        "as a new version of the "
        "dictionary SLUG. The same file or release imported again is reported and not duplicated."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="The dictionary file (or UMLS release), e.g. ../shared/data/medic/CTD_diseases.tsv.gz")
        parser.add_argument("--slug", required=True, help="Dictionary to add the version to (created if new).")
        parser.add_argument("--title", help="Title of the dictionary (default: the slug in capitals).")
        parser.add_argument("--format", dest="fmt", choices=DICTIONARY_FORMATS, help="Default: sniffed from the file.")
        parser.add_argument("--release", help="Release label (default: from the file header, else name + checksum).")
        parser.add_argument(
            "--include-obsolete", action="store_true", help="OBO: import obsolete terms too, flagged obsolete."
        )
        umls = parser.add_argument_group("UMLS release (a folder with META/MRCONSO.RRF ..., or a .zip of one)")
        umls.add_argument("--sab", help="Sources whose names are imported, e.g. MSH,OMIM,HPO (default: every source).")
        umls.add_argument("--language", help="Languages (LAT) whose names are imported, e.g. ENG,FRE (default: ENG).")
        umls.add_argument("--include-suppressed", action="store_true",
                          help="Import suppressed names and relationships too (SUPPRESS O, E or Y).")
        umls.add_argument("--umls-hierarchy", choices=HIERARCHY_SOURCES, default="auto",
                          help="auto (default): MRHIER.RRF where the release has it, else MRREL PAR/CHD; mrrel-broader "
                               "adds MRREL's RB/RN rows.")
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
                    sources=options["sab"],
                    languages=options["language"],
                    include_suppressed=options["include_suppressed"],
                    hierarchy=options["umls_hierarchy"],
                    user=user,
                    progress=progress,
                )
            except (ValueError, FileNotFoundError) as exc:  # ParseError is a ValueError: "path:line: message"
                raise CommandError(str(exc)) from exc
        for warning in report.warnings:
            if warning != report.message:
                self.stderr.write(f"warning: {warning}")
        self.stdout.write(report.message)
