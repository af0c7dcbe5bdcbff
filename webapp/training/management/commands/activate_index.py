from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.linking.models import IndexVersion
from webapp.training.services import ActivationError, promote_index


class Command(BaseCommand):
    help = ("Make an index version the active one of its dictionary (one atomic switch) and re-link open mentions; "
            "through the dictionary's promotion gate when it has one.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("index_id", type=int)
        parser.add_argument("--skip-gate", action="store_true",
                            help="Switch even when the dictionary's promotion gate refuses the index (an admin's override).")

    def handle(self, *args: Any, **opts: Any) -> None:
        from webapp.training.gate import GateRefused, promote_through_gate

        try:
            index = promote_index(opts["index_id"]) if opts["skip_gate"] else promote_through_gate(opts["index_id"])[0]
        except IndexVersion.DoesNotExist:
            raise CommandError(f"no index version {opts['index_id']}") from None
        except GateRefused as exc:
            waiting = " (the missing evaluations are queued: try again once they are done)" if exc.verdict.waiting else ""
            raise CommandError(f"index {opts['index_id']} was not promoted: the promotion gate refuses it: {exc}{waiting}; "
                               "--skip-gate overrides it") from exc
        except ActivationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"{index.label} is active"))
