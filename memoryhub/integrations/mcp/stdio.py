"""The stdio transport: one agent, one process, one token (`manage.py mcp_stdio` or the
`memoryhub-mcp` console script)."""

from __future__ import annotations

import os
import sys

import anyio
from django.http import Http404

from memoryhub.integrations.mcp.caller import Caller, authenticate, pinned_project
from memoryhub.integrations.mcp.server import build_server

TOKEN_ENV = "MEMORYHUB_TOKEN"


class StartError(Exception):
    """Why the stdio server cannot start (printed on stderr; stdout belongs to the protocol)."""


def stdio_caller(token: str, project: str | None) -> Caller:
    actor = authenticate(token) if token else None
    if actor is None:
        raise StartError(f"Pass a valid MemoryHub token (--token or ${TOKEN_ENV}).")
    try:
        return Caller(actor=actor, project=pinned_project(actor, project))
    except Http404:
        raise StartError(f"Project {project!r} not found.") from None


def serve(caller: Caller) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    anyio.run(build_server(stdio_caller=caller).run_stdio_async)


def main() -> None:
    """Console script: memoryhub-mcp [--token T] [--project P], with the server's settings
    from the environment (DATABASE_URL, …) as for manage.py."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "mcp_stdio", *sys.argv[1:]])
