from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.training.models import IndexVersion
from webapp.training.services import ActivationError, promote_index


class Command(BaseCommand):
    help = "Make an index version the active one of its dictionary (one atomic switch) and re-link open mentions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("index_id", type=int)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            index = promote_index(opts["index_id"])
        except IndexVersion.DoesNotExist:
            raise CommandError(f"no index version {opts['index_id']}") from None
        except ActivationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"{index.label} is active"))
