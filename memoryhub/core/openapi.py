"""OpenAPI post-processing: every /api/ operation documents the error envelope it can answer.

The envelope ({"error": {code, message, details}}, memoryhub/core/api_errors.py) is the same for
every route, so it is added here once instead of in each view's extend_schema: clients and the
schema fuzzer (tests/reliability) then see every status code the server really sends.
"""

from __future__ import annotations

from typing import Any

ERROR_COMPONENT = "ErrorEnvelope"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "description": "Stable, machine-readable."},
                "message": {"type": "string"},
                "details": {
                    "description": "Field errors, limits or ids; {} when there is nothing more."
                },
            },
        }
    },
}
# Status → when it happens. 404 also stands for "not yours": outsiders learn nothing.
ALWAYS = {
    "400": "Invalid input (field errors in details).",
    "401": "No or bad credentials.",
    "403": "The role or token may not do this.",
    "404": "No such resource, or not visible to the caller.",
    "429": "Too many requests; retry after the Retry-After header.",
    "503": "The database is unavailable (restarting); retry after the Retry-After header.",
}
WITH_BODY = {
    "409": "Conflicts with the current state.",
    "413": "The body or a field is over its limit.",
    "415": "Unsupported content type.",
}


def only_api(endpoints: list[Any], **kwargs: Any) -> list[Any]:
    """PREPROCESSING_HOOKS: /api/ only. The Hindsight-compatible routes have a document of
    their own (/v1/openapi.json, memoryhub/integrations/hindsight/openapi.py)."""
    return [e for e in endpoints if e[0].startswith("/api/")]


def add_error_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components[ERROR_COMPONENT] = ERROR_SCHEMA
    ref = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes = ALWAYS | (WITH_BODY if method in {"post", "put", "patch"} else {})
            responses = operation["responses"]
            for code, description in codes.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result
