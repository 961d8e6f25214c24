from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.memories.services import memory_reindex
from projects.models import Project


class Command(BaseCommand):
    help = "Rebuild the search index (postings) of all memories, or of one project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="project slug (default: every project)")

    def handle(self, *args: Any, **options: Any) -> str:
        project = None
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
        return f"Reindexed {memory_reindex(project=project)} memories."
