from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.services import user_get_or_create
from memoryhub.core.exceptions import ApplicationError
from projects.services import project_create


class Command(BaseCommand):
    help = "Create a project (memory bank) owned by USERNAME, creating that user if missing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--owner", default="admin", help="owner username (default: admin)")
        parser.add_argument("--timezone", default="UTC")

    def handle(self, *args: Any, **options: Any) -> str:
        actor = Actor.for_system("cli")
        try:
            owner, created, password = user_get_or_create(username=options["owner"], actor=actor)
            project = project_create(
                slug=options["slug"],
                name=options["name"],
                owner=owner,
                timezone=options["timezone"],
                actor=actor,
            )
        except (ApplicationError, ValidationError) as exc:
            raise CommandError(str(getattr(exc, "message", exc))) from exc
        if created:
            self.stderr.write(f"Created user {owner.username} with password: {password}")
        return f"Created project {project.slug} owned by {owner.username}"
