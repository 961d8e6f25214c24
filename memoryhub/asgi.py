"""The ASGI application `make run`, docker compose and the tests serve: /mcp (and /mcp/…) goes
to the MCP server's streamable HTTP app, everything else to Django.

Run by gunicorn with uvicorn's worker class. The lifespan events go to the MCP app, whose
session manager must run for as long as the process serves requests (Django has no lifespan).
"""

import gc
import os

from django.core.asgi import get_asgi_application
from starlette.types import Receive, Scope, Send

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

django_application = get_asgi_application()

# Imported after Django is set up: the MCP server is built on its models.
from memoryhub.integrations.mcp.http import McpHttpApp, is_mcp_path  # noqa: E402

mcp_application = McpHttpApp()


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan" or (scope["type"] == "http" and is_mcp_path(scope["path"])):
        await mcp_application(scope, receive, send)
    else:
        await django_application(scope, receive, send)  # type: ignore[arg-type]


# Everything loaded so far lives as long as the process: keep the collector from rescanning it
# (full collections otherwise add ~100 ms spikes to request latency).
gc.freeze()
