from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.linking.models import DetectorVersion
from webapp.training.detectors import DetectorActivationError, activate_detector


class Command(BaseCommand):
    help = "Make a mention detector version the active one of its dictionary (one atomic switch; the one before retires)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("detector_id", type=int)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            version = activate_detector(opts["detector_id"])
        except DetectorVersion.DoesNotExist:
            raise CommandError(f"no detector version {opts['detector_id']}") from None
        except DetectorActivationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"{version.label} is the active detector of {version.dictionary.slug}"))
