from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryhub.memories.services import memory_reindex
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Rebuild the search index (postings) of all memories, or of one project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="project slug (default: every project)")

    def handle(self, *args: Any, **options: Any) -> str:
        project = project_for_command(options["project"]) if options["project"] else None
        return f"Reindexed {memory_reindex(project=project)} memories."
