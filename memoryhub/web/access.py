"""Project access for HTML views: the same rule as the API (projects.selectors.project_access).

An outsider gets a 404 identical to a missing project's, a member whose role is too low a 403.
Views decorated with @project_view receive the ProjectAccess as `access` and find it on
`request.access`, where the navigation context processor reads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar
from zoneinfo import ZoneInfo

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.template.response import SimpleTemplateResponse
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import User
from projects.models import Role
from projects.selectors import ProjectAccess, project_access

P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponse)


def actor_for(request: HttpRequest) -> Actor:
    """The signed-in person acts as themself, with their project role (as their tokens do)."""
    user = request.user
    assert isinstance(user, User)  # every caller is behind login_required
    return Actor(user=user)


def access_for(request: HttpRequest, slug: str, min_role: Role = Role.VIEWER) -> ProjectAccess:
    """Http404 for outsiders and missing projects alike, PermissionDenied for a too-low role."""
    access = project_access(slug=slug, actor=actor_for(request), min_role=min_role)
    request.access = access  # type: ignore[attr-defined]
    return access


def project_view(
    min_role: Role = Role.VIEWER,
) -> Callable[
    [Callable[Concatenate[HttpRequest, ProjectAccess, P], R]],
    Callable[Concatenate[HttpRequest, str, P], HttpResponse],
]:
    """Decorate `view(request, access, **kwargs)`; the URL passes `slug`.

    Sign-in is required (anonymous visitors are redirected to the sign-in page).
    """

    def decorate(
        view: Callable[Concatenate[HttpRequest, ProjectAccess, P], R],
    ) -> Callable[Concatenate[HttpRequest, str, P], HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> R:
            access = access_for(request, slug, min_role)
            # Times on a project's pages, shown and typed, are in the project's time zone
            # (rendered here: a TemplateResponse would render after the zone is restored).
            with timezone.override(ZoneInfo(access.project.timezone)):
                response = view(request, access, *args, **kwargs)
                if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
                    response.render()
                return response

        return login_required(wrapper)

    return decorate


def role_flags(access: ProjectAccess) -> dict[str, Any]:
    """What the page may offer: templates hide every button the role cannot use."""
    return {
        "is_member": access.at_least(Role.MEMBER),
        "is_maintainer": access.at_least(Role.MAINTAINER),
        "is_owner": access.at_least(Role.OWNER),
    }
