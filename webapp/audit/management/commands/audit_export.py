from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.audit.export import jsonl_lines
from webapp.audit.query import AuditFilter, AuditFilterForm, events


class Command(BaseCommand):
    help = ("Write the audit log as JSON Lines (one event a line, oldest first), with the audit page's filters; "
            "to a file with --output, else to standard output.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--actor", default="", help="A username, or 'system'.")
        parser.add_argument("--action", default="", help="An action (decision.made) or a kind of them (decision).")
        parser.add_argument("--object-type", default="")
        parser.add_argument("--object-id", default="")
        parser.add_argument("--from", dest="date_from", default="", help="From this day, YYYY-MM-DD (inclusive).")
        parser.add_argument("--to", dest="date_to", default="", help="To this day, YYYY-MM-DD (inclusive).")
        parser.add_argument("--output", "-o", default="", help="The file to write (default: standard output).")

    def handle(self, *args: Any, **opts: Any) -> None:
        form = AuditFilterForm({name: opts[name] for name in AuditFilterForm.base_fields})
        if not form.is_valid():
            raise CommandError(f"the filters are not valid: {AuditFilter.problems(form)}")
        lines = jsonl_lines(events(AuditFilter.of(form.cleaned_data)))
        count = 0
        out = open(opts["output"], "w", encoding="utf-8") if opts["output"] else sys.stdout
        try:
            for line in lines:
                out.write(line)
                count += 1
        finally:
            if opts["output"]:
                out.close()
        self.stderr.write(f"{count} audit events written to {opts['output'] or 'standard output'}")
