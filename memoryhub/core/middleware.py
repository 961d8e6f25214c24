"""Request guards: NUL characters, the API's body size limit and a JSON envelope for unhandled
API errors."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from memoryhub.core.api_errors import (
    DATABASE_RETRY_AFTER_SECONDS,
    database_unavailable_body,
    error_response,
)

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


# Machine endpoints that validate their own input and answer in their own error shapes: the
# REST API and the Hindsight-compatible API (MCP is served beside Django, memoryhub.asgi).
MACHINE_PREFIXES = (API_PREFIX, "/v1/")


class NulCharacterMiddleware:
    """Refuse a NUL character in the path, and in the query of a page, with 400: PostgreSQL
    cannot store or even compare text containing one, so a lookup by it would fail with a 500.
    The APIs validate their query parameters themselves and answer in their own error shapes;
    the REST API's path is checked here, in its envelope."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path
        if path.startswith(API_PREFIX):
            if "\x00" in path:
                return error_response(
                    400, "malformed_request", "The path contains a NUL character."
                )
        elif not path.startswith(MACHINE_PREFIXES) and (
            "\x00" in path
            or any(
                "\x00" in key or any("\x00" in value for value in values)
                for key, values in request.GET.lists()
            )
        ):
            return HttpResponseBadRequest("The address contains a NUL character.")
        return self.get_response(request)


class ApiBodySizeLimitMiddleware:
    """Reject oversized API bodies with 413 before anything reads them.

    DRF's JSON parser reads the raw stream, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE does not
    protect it; the declared Content-Length is checked here instead. A view may raise its own
    limit with a `max_body_bytes` attribute (transcript imports are streamed).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], *args: Any
    ) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            return error_response(400, "malformed_request", "Invalid Content-Length header.")
        view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
        limit = getattr(view_class, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
        if length > limit:
            return error_response(
                413,
                "payload_too_large",
                f"Request body is {length} bytes; the limit is {limit} bytes.",
                {"limit_bytes": limit},
            )
        return None


class ApiExceptionMiddleware:
    """Turn exceptions nobody handled under /api/ into a 500 envelope (never an HTML page)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, OperationalError | InterfaceError):
            response = JsonResponse(database_unavailable_body(), status=503)
            response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
            return response
        logger.exception("Unhandled error on %s %s", request.method, request.path)
        return error_response(500, "server_error", "Internal server error.")
