from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from projects.models import ProjectMembership


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print only the token on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--project", help="restrict the token to this project slug")
        parser.add_argument("--read-only", action="store_true")
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> str:
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        project = None
        if options["project"]:
            membership = (
                ProjectMembership.objects.select_related("project")
                .filter(user=user, project__slug=options["project"])
                .first()
            )
            if membership is None:
                raise CommandError(f"{user.username} is not a member of {options['project']!r}.")
            project = membership.project
        _, raw = token_create(
            user=user,
            name=options["name"],
            project=project,
            read_only=options["read_only"],
            actor=Actor.for_system("cli"),
        )
        return raw
