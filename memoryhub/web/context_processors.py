from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from memoryhub.web.access import role_flags
from memoryhub.web.nav import project_nav


def web(request: HttpRequest) -> dict[str, Any]:
    """Project navigation and role flags for pages behind @project_view."""
    access = getattr(request, "access", None)
    if access is None:
        return {}
    active = request.resolver_match.url_name if request.resolver_match else ""
    return {
        "access": access,
        "project": access.project,
        "project_nav": project_nav(access),
        "nav_active": active,
        **role_flags(access),
    }
