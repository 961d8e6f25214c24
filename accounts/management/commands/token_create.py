from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts import selectors
from accounts.actors import Actor
from accounts.services import token_create
from projects import selectors as project_selectors


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print only the token on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--project", help="restrict the token to this project slug")
        parser.add_argument("--read-only", action="store_true")
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> str:
        user = selectors.user_get(username=options["user"])
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        project = None
        if options["project"]:
            project = project_selectors.project_of_member(user=user, slug=options["project"])
            if project is None:
                raise CommandError(f"{user.username} is not a member of {options['project']!r}.")
        _, raw = token_create(
            user=user,
            name=options["name"],
            project=project,
            read_only=options["read_only"],
            actor=Actor.for_system("cli"),
        )
        return raw
