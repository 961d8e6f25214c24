"""request.htmx (django-htmx's middleware) for views typed with a plain HttpRequest."""

from __future__ import annotations

from django.http import HttpRequest


def is_htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def htmx_target(request: HttpRequest) -> str | None:
    """The id of the element htmx swaps into (hx-target), when it is an htmx request."""
    return request.htmx.target if is_htmx(request) else None  # type: ignore[attr-defined]
