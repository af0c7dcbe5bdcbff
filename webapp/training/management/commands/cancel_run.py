from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.training.models import TrainingRun
from webapp.training.runs import cancel_run


class Command(BaseCommand):
    help = "Cancel a training run: a queued run at once, a running one at its next progress report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id", type=int)

    def handle(self, *args: Any, **opts: Any) -> None:
        before = TrainingRun.objects.filter(pk=opts["run_id"]).values_list("state", flat=True).first()
        if before is None:
            raise CommandError(f"no training run {opts['run_id']}")
        if before in TrainingRun.TERMINAL_STATES:
            raise CommandError(f"training run {opts['run_id']} already {before}")
        run = cancel_run(opts["run_id"])
        if run.state == TrainingRun.State.CANCELLED:
            self.stdout.write(self.style.SUCCESS(f"training run {run.pk} cancelled"))
        elif run.state == TrainingRun.State.RUNNING:
            self.stdout.write(f"training run {run.pk}: cancel requested; it stops at its next progress report")
        else:
            raise CommandError(f"training run {run.pk} already {run.state}")
