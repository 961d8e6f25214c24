from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.backups import selectors
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Write a project's full backup (gzip'd JSON Lines) to FILE; '-' for stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file")

    def handle(self, *args: Any, slug: str, file: str, **options: Any) -> None:
        project = project_for_command(slug)
        if file == "-":
            for chunk in selectors.backup_gzip_chunks(project=project):
                self.stdout.buffer.write(chunk)  # type: ignore[attr-defined]
            return
        try:
            with Path(file).open("wb") as out:
                for chunk in selectors.backup_gzip_chunks(project=project):
                    out.write(chunk)
        except OSError as exc:
            raise CommandError(f"Cannot write {file}: {exc.strerror or exc}") from None
        self.stderr.write(f"Wrote {file}")
