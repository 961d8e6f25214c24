from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.core.exceptions import ApplicationError
from memoryhub.interchange import archive, formats
from memoryhub.interchange.management.commands._interchange import access_for
from projects.models import Role


class Command(BaseCommand):
    help = (
        "Import a MewCode workspace, Claude Code memory directory, meow-memory memory.db or "
        "oh-my-pi memory root (a directory, a zip/tar of one, or the single file) into a "
        "project, as a user. All or nothing; importing the same files again creates nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", required=True, choices=sorted(formats.FORMATS))
        parser.add_argument("--user", required=True, help="the importing user's username")

    def handle(self, *args: Any, **options: Any) -> str:
        access = access_for(options["slug"], options["user"], Role.MEMBER)
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        try:
            if path.is_dir():
                result = formats.interchange_import(
                    access=access, format=options["format"], tree=archive.read_directory(path)
                )
            else:
                with (
                    path.open("rb") as file,
                    archive.unpack_upload(file, filename=path.name) as unpacked,
                ):
                    result = formats.interchange_import(
                        access=access, format=options["format"], tree=unpacked.tree
                    )
        except ApplicationError as exc:
            raise CommandError(
                f"{exc.message}\n{json.dumps(exc.details, ensure_ascii=False)}"
            ) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        return (
            f"Imported {options['format']} into {options['slug']}: "
            f"created {json.dumps(result.created)}, unchanged {json.dumps(result.unchanged)}."
        )
