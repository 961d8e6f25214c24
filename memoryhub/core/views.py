from __future__ import annotations

from django.http import HttpRequest
from django.template.response import TemplateResponse

from projects.models import ProjectMembership


def home(request: HttpRequest) -> TemplateResponse:
    memberships = (
        ProjectMembership.objects.filter(user=request.user).select_related("project")
        if request.user.is_authenticated
        else ProjectMembership.objects.none()
    )
    return TemplateResponse(request, "core/home.html", {"memberships": memberships})
