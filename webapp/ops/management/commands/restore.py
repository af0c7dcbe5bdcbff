from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.ops.pgtools import ToolError
from webapp.ops.restore import RestoreError, restore


class Command(BaseCommand):
    help = ("Restore an archive written by `backup` into this EMPTY database and ARTIFACT_ROOT, checking every "
            "file's sha256; stored artifact paths are moved to this ARTIFACT_ROOT. docs/backup.md")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", help="The .tar written by `manage.py backup`.")

    def handle(self, *args: Any, **opts: Any) -> None:
        archive = Path(opts["archive"])
        if not archive.is_file():
            raise CommandError(f"{archive}: no such file")
        try:
            restore(archive, log=lambda line: self.stdout.write(line))
        except (RestoreError, ToolError) as e:
            raise CommandError(str(e)) from e
