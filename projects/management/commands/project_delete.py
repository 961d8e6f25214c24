from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from memoryhub.core.exceptions import ApplicationError
from projects.commands import project_for_command
from projects.models import Role
from projects.selectors import ProjectAccess
from projects.services import project_delete


class Command(BaseCommand):
    help = (
        "Delete a project and everything in it, for good: memories and their history, sessions,"
        " jobs, files, memberships and the tokens limited to it. Back it up first"
        " (bank_export) if it may be wanted again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--confirm", required=True, help="the project's slug again")

    def handle(self, *args: Any, **options: Any) -> str:
        # The server's operator acts with an owner's rights.
        access = ProjectAccess(
            project=project_for_command(options["slug"]),
            role=Role.OWNER,
            actor=Actor.for_system("cli"),
        )
        try:
            deleted = project_delete(access=access, confirm=options["confirm"])
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        summary = ", ".join(f"{n} {what}" for what, n in deleted.items())
        return f"Deleted project {options['slug']}: {summary}."
