from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webapp.ops.artifact_gc import collect_artifacts


class Command(BaseCommand):
    help = ("Remove from the artifact store the manifests no row names any more and the blobs no manifest lists "
            "(both older than ARTIFACT_GC_GRACE_HOURS), and trim this host's cache (ARTIFACT_ROOT/cache/store). "
            "docs/artifacts.md")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cache-only", action="store_true",
                            help="Only this host's cache (a web host's cron; the store is collected by the beat task)")

    def handle(self, *args: Any, **opts: Any) -> None:
        done = collect_artifacts(store=not opts["cache_only"])
        for line in done.lines():
            self.stdout.write(line)
        self.stdout.write(f"{len(done.manifests)} manifests, {done.blobs} blobs and {len(done.cache)} cached folders "
                          "removed")
