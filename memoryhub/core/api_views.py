from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from memoryhub.core.api_errors import error_response


def api_not_found(request: HttpRequest) -> JsonResponse:
    return error_response(404, "not_found", f"No API endpoint at {request.path}.")
