from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.embeddings import providers, services
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Compute the embedding of every memory (of one project) that lacks a current one, with "
        "EMBEDDINGS_PROVIDER; memories written later are embedded by the worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", metavar="SLUG", help="only this project's memories")

    def handle(self, *args: Any, **options: Any) -> str:
        encoder = providers.encoder()
        if encoder is None:
            raise CommandError("EMBEDDINGS_PROVIDER is none: set it to local or openai first.")
        project = None
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
        try:
            result = services.embeddings_backfill(project=project)
        except providers.EmbeddingUnavailable as exc:
            raise CommandError(f"{encoder.key} is unavailable: {exc}") from exc
        return f"{result.embedded} embedded, {result.failed} failed ({encoder.key})."
