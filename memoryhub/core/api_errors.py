"""One JSON error envelope for every 4xx/5xx under /api/: {"error": {code, message, details}}."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memoryhub.core.exceptions import ApplicationError

logger = logging.getLogger(__name__)

_DRF_CODES = {
    exceptions.ValidationError: "validation_error",
    exceptions.ParseError: "malformed_request",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
}


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(status_code: int, code: str, message: str, details: Any = None) -> JsonResponse:
    return JsonResponse(error_body(code, message, details), status=status_code)


def _django_validation_details(exc: DjangoValidationError) -> dict[str, Any]:
    if hasattr(exc, "error_dict"):
        return {field: [str(m) for m in msgs] for field, msgs in exc.message_dict.items()}
    return {"non_field_errors": [str(m) for m in exc.messages]}


DATABASE_RETRY_AFTER_SECONDS = 5


def database_unavailable_body() -> dict[str, Any]:
    return error_body("database_unavailable", "The database is unavailable; retry shortly.")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, OperationalError | InterfaceError):
        # Down, restarting or refusing connections: a retryable 503, not a 500.
        logger.warning("Database unavailable: %s", exc)
        return Response(
            database_unavailable_body(),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        return Response(
            error_body("validation_error", "Invalid input.", _django_validation_details(exc)),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, DataError):
        # The database refused a value the validation let through (NUL in text, an integer
        # out of range): bad input, and the transaction rolled back, so nothing was written.
        message = (
            "Text must not contain NUL (\\u0000) characters."
            if "NUL" in str(exc) or "\\u0000" in str(exc)  # in text, in JSON
            else "A value is out of range or malformed."
        )
        return Response(error_body("validation_error", message), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)

    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response  # unexpected: ApiExceptionMiddleware turns it into a 500 envelope
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "error")
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body(code, "Invalid input.", details)
    else:
        response.data = error_body(code, str(exc.detail))
    return response
