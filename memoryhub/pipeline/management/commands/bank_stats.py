from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryhub.pipeline import selectors
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Print a project's bank statistics as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> str:
        return json.dumps(
            selectors.bank_stats(project=project_for_command(options["slug"])), indent=2
        )
