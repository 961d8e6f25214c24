"""The ASGI application `make run`, docker compose and the tests serve: /mcp (and /mcp/…) goes
to the MCP server's streamable HTTP app, everything else to Django.

Run by gunicorn with uvicorn's worker class. The lifespan events go to the MCP app, whose
session manager must run for as long as the process serves requests (Django has no lifespan).

Django's own views are all synchronous, so Django is served through its WSGI handler on a
fixed pool of threads (a2wsgi) rather than through its ASGI handler. The ASGI handler runs each
request in a new thread and hops between that thread and the event loop at every middleware
that is not async-capable: per request it cost a new database connection (thread-local
connections never outlive their thread) and ~4 ms of CPU. On the fixed pool each thread keeps
its connection for DATABASE_CONN_MAX_AGE, as a WSGI worker does.
"""

import gc
import os

from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from starlette.types import Receive, Scope, Send

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

# Requests beyond WEB_THREADS at once wait for a free thread (each keeps one DB connection).
django_application = WSGIMiddleware(get_wsgi_application(), workers=settings.WEB_THREADS)  # type: ignore[arg-type]

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
