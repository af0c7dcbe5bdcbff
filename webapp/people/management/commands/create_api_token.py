"""``manage.py create_api_token USER``: issue a named API token from the shell and print its key (shown once)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from webapp.people.tokens import TokenError, issue_token
from webapp.projects.models import Project


class Command(BaseCommand):
    help = "Issue a named API token for USER and print its key (it is stored hashed and never shown again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="manage.py create_api_token", help="what the token is for")
        parser.add_argument("--days", type=int, default=None,
                            help="days until it expires (0: never; default: settings.API_TOKEN_DAYS)")
        parser.add_argument("--read-only", action="store_true", help="GET only: writes get 403")
        parser.add_argument("--project", default=None, help="slug of the one project it may reach")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user is called {options['username']!r}")
        project = None
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"no project is called {options['project']!r}")
        extra: dict[str, Any] = {}
        if options["days"] is not None:
            if options["days"] < 0:
                raise CommandError("--days is 0 (never expires) or more")
            extra["expires_at"] = timezone.now() + timedelta(days=options["days"]) if options["days"] else None
        try:
            issued = issue_token(user, options["name"], read_only=options["read_only"], project=project, **extra)
        except TokenError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(issued.key)
