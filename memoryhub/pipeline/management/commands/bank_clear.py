from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline import services
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Delete a project's derived memories, artifacts and jobs (transcripts on request)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--confirm", required=True, help="the project's slug again")
        parser.add_argument("--include-transcripts", action="store_true")

    def handle(self, *args: Any, **options: Any) -> str:
        try:
            counts = services.bank_clear(
                project=project_for_command(options["slug"]),
                actor=Actor.for_system("cli"),
                confirm=options["confirm"],
                include_transcripts=options["include_transcripts"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        return "Deleted " + ", ".join(f"{n} {what}" for what, n in counts.items()) + "."
