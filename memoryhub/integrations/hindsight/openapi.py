"""The OpenAPI document of the Hindsight-compatible routes (GET /v1/openapi.json).

A document of their own, not part of /api/schema/: these routes follow Hindsight's API
(hindsight-client 1.1.0), with its {"detail": …} errors and 422 for an invalid body, and only
the subset MemoryHub serves. The operations are described on the views (extend_schema); this
module adds the error answers every route can give, so clients and the schema fuzzer
(tests/reliability/test_schema_fuzz.py) see every status code the server really sends.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework import serializers
from rest_framework.permissions import AllowAny

PREFIXES = ("/v1/", "/health", "/version")

DETAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {
            "description": "A message, or for 422 FastAPI's [{loc, msg, type}] list.",
            "anyOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["loc", "msg", "type"],
                        "properties": {
                            "loc": {"type": "array"},
                            "msg": {"type": "string"},
                            "type": {"type": "string"},
                        },
                    },
                },
            ],
        }
    },
}
ERRORS = {
    "400": "Bad input the validation cannot name a field for (NUL in text).",
    "401": "No or bad token.",
    "403": "The role or a read-only token may not do this.",
    "404": "No such bank or item, or one the caller may not see.",
    "413": "The body is over API_MAX_BODY_BYTES.",
    "415": "Unsupported content type (send JSON).",
    "422": "Invalid body or parameters: FastAPI's detail list.",
    "429": "Too many requests; retry after the Retry-After header.",
    "503": "The database is unavailable; retry shortly.",
}
PUBLIC = {"/health", "/version"}


def only_hindsight(endpoints: list[Any], **kwargs: Any) -> list[Any]:
    """PREPROCESSING_HOOKS: the Hindsight routes, without this document's own route."""
    return [e for e in endpoints if e[0].startswith(PREFIXES) and e[0] != "/v1/openapi.json"]


def add_detail_errors(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """POSTPROCESSING_HOOKS: Hindsight's error answers on every operation."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["HindsightError"] = DETAIL_SCHEMA
    ref = {"$ref": "#/components/schemas/HindsightError"}
    for path, item in result.get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for code, description in ERRORS.items():
                if path in PUBLIC and code in ("401", "403", "404", "422"):
                    continue
                operation["responses"].setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result


schema_view = SpectacularJSONAPIView.as_view(
    # Open like /health and /version: no token read, so none is refused.
    authentication_classes=[],
    permission_classes=[AllowAny],
    urlconf="memoryhub.integrations.hindsight.urls",
    custom_settings={
        "TITLE": "MemoryHub — Hindsight-compatible API",
        "DESCRIPTION": "The subset of Hindsight's API (hindsight-client 1.1.0) MemoryHub serves; "
        "a bank is a project.",
        "VERSION": "1.1.0",
        "SCHEMA_PATH_PREFIX": r"/v1/default",
        "PREPROCESSING_HOOKS": ["memoryhub.integrations.hindsight.openapi.only_hindsight"],
        "POSTPROCESSING_HOOKS": [
            "drf_spectacular.hooks.postprocess_schema_enums",
            "memoryhub.integrations.hindsight.openapi.add_detail_errors",
        ],
    },
)


# --- shapes the views answer -------------------------------------------------------------------


def obj(name: str, fields: dict[str, serializers.Field]) -> Any:
    from drf_spectacular.utils import inline_serializer

    return inline_serializer(name, fields)


def page_of(name: str, item: type[serializers.Field], key: str = "items") -> Any:
    return obj(
        name,
        {
            key: serializers.ListField(child=item()),
            "total": serializers.IntegerField(),
            "limit": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
        },
    )
