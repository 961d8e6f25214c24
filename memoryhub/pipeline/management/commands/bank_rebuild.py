from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline import services
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Clear derived data and replay every session of a project (on a worker, or --now)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--confirm", required=True, help="the project's slug again")
        parser.add_argument("--now", action="store_true", help="run here instead of a worker")

    def handle(self, *args: Any, **options: Any) -> str:
        try:
            job = services.bank_rebuild_start(
                project=project_for_command(options["slug"]),
                actor=Actor.for_system("cli"),
                confirm=options["confirm"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        if options["now"]:
            outcome = services.rebuild_run(job_id=job.pk)
            job.refresh_from_db()
            return f"Rebuild {outcome}: {job.detail or job.last_error}"
        return f"Rebuild queued (job {job.pk}); follow it with bank_stats or the API."
