from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.ops.backup import backup
from webapp.ops.pgtools import ToolError


class Command(BaseCommand):
    help = ("Write one consistent archive (a tar) of the workbench: the database (pg_dump's custom format) and "
            "every artifact file it references, with a manifest of sha256 hashes. docs/backup.md")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", required=True, help="The archive to write, e.g. backups/workbench-2026-11-29.tar")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            backup(Path(opts["out"]), log=lambda line: self.stdout.write(line))
        except ToolError as e:
            raise CommandError(str(e)) from e
