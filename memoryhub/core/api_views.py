"""Answers for requests under /api/ that no API view took: always the JSON error envelope."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.views import csrf
from django.views.decorators.csrf import csrf_exempt

from memoryhub.core.api_errors import error_response
from memoryhub.core.middleware import API_PREFIX


@csrf_exempt  # a POST by a token holder has no CSRF cookie: it must reach the envelope
def api_not_found(request: HttpRequest) -> HttpResponse:
    """Unknown API path. Agents often drop the trailing slash: when the path with one is an
    endpoint, that endpoint answers (any method, so a POST is not lost to a redirect)."""
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            pass
        else:
            if match.func is not api_not_found:
                return match.func(request, *match.args, **match.kwargs)
    return error_response(404, "not_found", f"No API endpoint at {request.path}.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the envelope under /api/, Django's page elsewhere."""
    if request.path.startswith(API_PREFIX):
        return error_response(403, "csrf_failed", f"CSRF verification failed: {reason}")
    return csrf.csrf_failure(request, reason=reason)
