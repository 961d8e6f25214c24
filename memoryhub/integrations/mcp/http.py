"""Streamable HTTP at /mcp (and /mcp/p/<slug>/), as an ASGI app beside Django's.

In front of the SDK's transport: the Host check Django applies (ALLOWED_HOSTS), MemoryHub token
authentication (401 with WWW-Authenticate, saying whether the token is missing or unusable in the
REST API's words), the REST API's rate limits (429 with Retry-After), and the project named
in the URL (404 when the token cannot see it, exactly as for a missing project). The Caller is
left in the ASGI scope, where every tool finds it on its request. Every refusal here is the REST
API's error envelope, {"error": {"code", "message", "details"}}, with its codes and messages.

Stateless mode with JSON responses: each POST stands alone, so any gunicorn worker can serve
any request (a session kept in one worker's memory would 404 on the next worker), and nothing
is held open that would slow a SIGTERM.
"""

from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http import Http404
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.actors import Actor
from accounts.throttling import TokenRateThrottle, UserRateThrottle
from memoryhub.core.api_errors import error_body
from memoryhub.integrations.mcp.caller import Caller, authenticate, pinned_project
from memoryhub.integrations.mcp.server import SCOPE_KEY, build_server
from memoryhub.recall.language import Language, accept_language

MCP_PATH = "/mcp"
# /mcp, /mcp/, /mcp/p/<slug>, /mcp/p/<slug>/
PATH_RE = re.compile(r"^/mcp(?:/p/(?P<slug>[^/]+))?/?$")


def is_mcp_path(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


# What the REST API answers for the same token (accounts.authentication): no more.
NOT_AUTHENTICATED = "Authentication credentials were not provided."
AUTHENTICATION_FAILED = "Invalid, expired or revoked token."
WWW_AUTHENTICATE = (b"www-authenticate", b'Bearer realm="memoryhub"')


class Throttled(Exception):
    def __init__(self, wait: float | None) -> None:
        self.wait = wait


class Unauthenticated(Exception):
    """No usable token: `code` and `message` say which, as the REST API does."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message


def _throttle(actor: Actor) -> None:
    """The REST API's rate limits (per token, per person), on the same counters: an agent's
    MCP requests and its REST requests share one budget."""
    request = SimpleNamespace(auth=actor.token, user=actor.user)
    for throttle in (TokenRateThrottle(), UserRateThrottle()):
        if not throttle.allow_request(request, None):  # type: ignore[arg-type]
            raise Throttled(throttle.wait())


def _caller(header: str, slug: str | None, language: Language | None) -> Caller:
    """The authenticated Caller; Unauthenticated without a usable token, Http404 for a project
    it cannot see, Throttled over the rate limit."""
    scheme, space, _ = header.strip().partition(" ")
    if not header.strip() or (space and scheme.lower() != "bearer"):
        # Nothing, or another scheme (Basic …): no MemoryHub token was sent, as REST says.
        raise Unauthenticated("not_authenticated", NOT_AUTHENTICATED)
    close_old_connections()
    try:
        actor = authenticate(header)
        if actor is None:  # unknown, expired or revoked, or its user deactivated: one answer
            raise Unauthenticated("authentication_failed", AUTHENTICATION_FAILED)
        _throttle(actor)
        return Caller(actor=actor, project=pinned_project(actor, slug), language=language)
    finally:
        close_old_connections()


async def _error(
    send: Send, status: int, code: str, message: str, headers: list[Any] | None = None
) -> None:
    """The REST API's error envelope (memoryhub.core.api_errors)."""
    payload = json.dumps(error_body(code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _host_allowed(host: str) -> bool:
    """Django's HttpRequest.get_host() rule, so /mcp answers the same hosts as the API."""
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


class McpHttpApp:
    """The ASGI app of /mcp: checks, then the SDK's streamable HTTP transport. Its lifespan
    starts the SDK's session manager (the host must route "lifespan" here)."""

    def __init__(self) -> None:
        self.server = build_server()
        # The SDK's own Host/Origin allowlist is off: the Host check below is Django's, with
        # the same ALLOWED_HOSTS, and every request carries a token a browser page lacks.
        self.transport: ASGIApp = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.transport(scope, receive, send)  # lifespan
            return
        match = PATH_RE.match(scope["path"])
        if match is None:
            await _error(send, 404, "not_found", "Not found. The MCP endpoint is /mcp.")
            return
        if not _host_allowed(_header(scope, b"host")):
            await _error(send, 400, "invalid_request", "Invalid Host header.")
            return
        if scope["method"] == "GET":
            # The spec's alternative to a server-to-client SSE stream. Stateless, the server
            # has nothing to push on one, and each held-open stream would delay a SIGTERM.
            await _error(send, 405, "method_not_allowed", "Use POST.", [(b"allow", b"POST")])
            return
        header = _header(scope, b"authorization")
        language = accept_language(_header(scope, b"accept-language"))
        try:
            caller = await sync_to_async(_caller, thread_sensitive=True)(
                header, match["slug"], language
            )
        except Unauthenticated as exc:
            # The MCP spec's answer to a request without a valid token: 401, WWW-Authenticate.
            await _error(send, 401, exc.code, exc.message, [WWW_AUTHENTICATE])
            return
        except Http404:
            # As for a missing project: an outsider cannot tell the two apart.
            await _error(send, 404, "not_found", "Project not found.")
            return
        except Throttled as exc:
            retry = [(b"retry-after", str(math.ceil(exc.wait)).encode())] if exc.wait else []
            message = str(exceptions.Throttled(exc.wait).detail)  # the REST API's words
            await _error(send, 429, "throttled", message, retry)
            return
        inner = dict(scope, path=MCP_PATH, raw_path=MCP_PATH.encode())
        inner[SCOPE_KEY] = caller
        await self.transport(inner, receive, send)
