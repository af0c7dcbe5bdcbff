"""python manage.py promote_index ID: the same atomic switch as activate_index (a name that reads as the step)."""

from __future__ import annotations

from webapp.training.management.commands.activate_index import Command as ActivateIndex


class Command(ActivateIndex):
    help = "Promote an index version (e.g. a training run's) to the active one of its dictionary, atomically."
