"""What every Hindsight route shares: token authentication (Bearer or the raw token, as
Hindsight accepts), read-only tokens, the body limit and Hindsight's error shape,
{"detail": …} with FastAPI's status codes (422 for an invalid body or query, located in
"body" or "query" as FastAPI locates it)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from django.http import Http404
from rest_framework import authentication, exceptions, permissions, serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.actors import Actor, actor_of
from accounts.models import ApiToken, User
from memoryhub.core.exceptions import ApplicationError, PayloadTooLarge
from memoryhub.core.parsers import JsonParser

logger = logging.getLogger(__name__)


class HindsightTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>` or `Authorization: <token>`, like Hindsight."""

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        scheme, _, rest = header.partition(" ")
        raw = rest.strip() if scheme.lower() == "bearer" else header
        # The bank in the URL is usually the project's slug: its membership is read in the
        # token's statement (used once, by the request's first project_access).
        bank_id = ((getattr(request, "parser_context", None) or {}).get("kwargs") or {}).get(
            "bank_id"
        )
        token = account_selectors.token_find_usable(
            raw=raw, project_slug=bank_id if isinstance(bank_id, str) else None
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid API key")
        account_services.token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memoryhub"'


class TokenLimits(permissions.BasePermission):
    """Authenticated; a read-only token may only read (recall and reflect read by POST)."""

    message = "This token is read-only."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.user, User):
            raise exceptions.NotAuthenticated("Missing API key")
        token = request.auth
        if isinstance(token, ApiToken) and token.read_only:
            return request.method in permissions.SAFE_METHODS or getattr(view, "post_reads", False)
        return True


class Text(serializers.CharField):
    """A string field that takes only JSON strings, like Hindsight's pydantic models (a number
    is not coerced: 422 string_type), where DRF's CharField turns 5 into "5"."""

    default_error_messages = {"string_type": "Input should be a valid string"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("string_type")
        return str(super().to_internal_value(data))


class QueryValidationError(exceptions.ValidationError):
    """Invalid query parameters: FastAPI locates them in "query", not "body"."""


def query_error(name: str, message: str, code: str) -> QueryValidationError:
    """FastAPI's 422 for one query parameter; `code` is pydantic's error type."""
    return QueryValidationError({name: [exceptions.ErrorDetail(message, code=code)]})


def valid_query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.query_params)
    if not serializer.is_valid():
        raise QueryValidationError(serializer.errors)
    return dict(serializer.validated_data)


# pydantic's error types that our errors carry as their code; any other error is a value_error.
ERROR_TYPES = frozenset({"string_type", "int_parsing", "greater_than_equal"})


def _validation_detail(detail: Any, loc: tuple[str | int, ...] = ("body",)) -> list[dict[str, Any]]:
    """DRF's nested error dict → FastAPI's [{"loc", "msg", "type"}]."""
    if isinstance(detail, dict):
        return [e for key, value in detail.items() for e in _validation_detail(value, (*loc, key))]
    if isinstance(detail, list) and detail and not all(isinstance(d, str) for d in detail):
        return [e for i, value in enumerate(detail) for e in _validation_detail(value, (*loc, i))]
    messages = detail if isinstance(detail, list) else [detail]
    return [
        {
            "loc": list(loc),
            "msg": str(m),
            "type": code if (code := getattr(m, "code", None)) in ERROR_TYPES else "value_error",
        }
        for m in messages
    ]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    headers: dict[str, str] = {}
    status = 500
    detail: Any = "Internal server error"
    if isinstance(exc, ApplicationError):
        status, detail = exc.status_code, exc.message
    elif isinstance(exc, exceptions.ValidationError):
        where = "query" if isinstance(exc, QueryValidationError) else "body"
        status, detail = 422, _validation_detail(exc.detail, (where,))
    elif isinstance(exc, DjangoValidationError):
        messages = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        status, detail = 422, _validation_detail(messages)
    elif isinstance(exc, exceptions.ParseError):
        status, detail = 422, [{"loc": ["body"], "msg": str(exc.detail), "type": "json_invalid"}]
    elif isinstance(exc, DataError) and "NUL" in str(exc):
        status, detail = 400, "Text must not contain NUL (\\u0000) characters."
    elif isinstance(exc, Http404):
        status, detail = 404, str(exc) or "Not found"
    elif isinstance(exc, DjangoPermissionDenied):
        status, detail = 403, str(exc) or "Forbidden"
    elif isinstance(exc, exceptions.APIException):
        status, detail = exc.status_code, str(exc.detail)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            status, headers = 401, {"WWW-Authenticate": 'Bearer realm="memoryhub"'}
        wait = getattr(exc, "wait", None)  # Throttled: hindsight-client honours Retry-After
        if isinstance(exc, exceptions.Throttled) and wait is not None:
            headers = {"Retry-After": str(max(1, round(wait)))}
    else:
        logger.exception("Unhandled error on a Hindsight route", exc_info=exc)
    return Response({"detail": detail}, status=status, headers=headers)


class HindsightView(APIView):
    authentication_classes = [HindsightTokenAuthentication]
    permission_classes = [TokenLimits]
    parser_classes = [JsonParser]  # ours: the depth limit, 400 rather than 500 on hostile JSON
    renderer_classes = [JSONRenderer]
    post_reads = False  # True where POST only reads (recall, reflect)

    def get_exception_handler(self) -> Any:
        return exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        raw = request.META.get("CONTENT_LENGTH") or "0"
        length = int(raw) if raw.isdigit() else 0
        if length > settings.API_MAX_BODY_BYTES:
            raise PayloadTooLarge(
                f"Request body is {length} bytes; the limit is {settings.API_MAX_BODY_BYTES}."
            )
        super().initial(request, *args, **kwargs)

    @property
    def actor(self) -> Actor:
        return actor_of(self.request)


def valid(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class PublicView(HindsightView):
    """/health and /version: no token needed (Hindsight serves them openly too)."""

    authentication_classes: list[type[authentication.BaseAuthentication]] = []
    permission_classes = [permissions.AllowAny]
