from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.integrations.mcp import stdio


class Command(BaseCommand):
    help = (
        "Serve MemoryHub's MCP tools over stdin/stdout for an agent that launches local "
        "servers. The token (--token or $MEMORYHUB_TOKEN) decides who acts; --project pins "
        "the project (else the token's own, or a `project` argument per call)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--token", default=os.environ.get(stdio.TOKEN_ENV, ""))
        parser.add_argument("--project", default=None, help="project slug")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            caller = stdio.stdio_caller(options["token"], options["project"])
        except stdio.StartError as exc:
            raise CommandError(str(exc)) from None
        # Nothing may be written to stdout but protocol messages: no summary line here.
        stdio.serve(caller)
