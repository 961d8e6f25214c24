from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.interchange import archive, formats
from memoryhub.interchange.management.commands._interchange import access_for


class Command(BaseCommand):
    help = (
        "Export what a user can see in a project as one format's files: into a directory, or "
        "with --archive into a zip or .tar.gz file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("out", type=Path, help="directory (or archive file with --archive)")
        parser.add_argument("--format", required=True, choices=sorted(formats.FORMATS))
        parser.add_argument("--user", required=True, help="whose view of the project to export")
        parser.add_argument("--archive", choices=archive.ARCHIVE_KINDS)

    def handle(self, *args: Any, **options: Any) -> str:
        from projects.models import Role

        access = access_for(options["slug"], options["user"], Role.VIEWER)
        files = formats.interchange_export(access=access, format=options["format"])
        out: Path = options["out"]
        if options["archive"]:
            with out.open("wb") as file:
                writer = archive.write_zip if options["archive"] == "zip" else archive.write_tar
                writer(files, file)
        else:
            if out.exists() and any(out.iterdir()):
                raise CommandError(f"{out} is not empty; export into a new directory.")
            archive.write_directory(files, out)
        return f"Exported {len(files)} files to {out}."
