"""What every dashboard response needs because pages swap parts of themselves with htmx."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRedirect

from memoryhub.web.htmx import is_htmx


class HtmxPageMiddleware:
    """1. `Vary: HX-Request` on HTML: a page and the fragment htmx fetched at the same address
    are different documents, and without it the browser's Back showed the cached fragment,
    unstyled, in place of the page.
    2. A sign-in redirect answered to htmx (the session ended in another tab) becomes a
    redirect of the whole window, back to the page the person was on: htmx would otherwise
    follow it and swap the sign-in page into a card."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            patch_vary_headers(response, ("HX-Request",))
        if is_htmx(request) and response.status_code in (301, 302):
            login = resolve_url(settings.LOGIN_URL)
            if response.get("Location", "").startswith(login):
                page = request.htmx.current_url_abs_path or "/"  # type: ignore[attr-defined]
                return HttpResponseClientRedirect(f"{login}?{urlencode({'next': page})}")
        return response
