from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.selectors import user_get
from memoryhub.backups import services
from memoryhub.core.exceptions import ApplicationError


class Command(BaseCommand):
    help = "Restore a backup FILE as a new project NEW_SLUG, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--as", dest="slug", required=True, help="the new project's slug")
        parser.add_argument("--owner", required=True, help="username of the new project's owner")

    def handle(self, *args: Any, file: str, slug: str, owner: str, **options: Any) -> None:
        user = user_get(username=owner)
        if user is None:
            raise CommandError(f"No user {owner!r}.")
        try:
            with Path(file).open("rb") as stream:
                report = services.project_restore(
                    stream=stream, slug=slug, owner=user, actor=Actor.for_system("bank_import")
                )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        except ValidationError as exc:  # the new slug
            raise CommandError(" ".join(exc.messages)) from None
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror or exc}") from None
        rows = ", ".join(f"{label} {n}" for label, n in report.rows.items() if n)
        self.stdout.write(f"Restored {report.project.slug}: {rows}")
        if report.users_created:
            self.stdout.write(f"Created users (no usable password): {report.users_created}")
