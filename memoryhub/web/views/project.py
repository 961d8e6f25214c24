from __future__ import annotations

from django.http import HttpRequest
from django.template.response import TemplateResponse

from memoryhub.web.access import project_view
from projects.selectors import ProjectAccess


@project_view()
def dashboard(request: HttpRequest, access: ProjectAccess) -> TemplateResponse:
    return TemplateResponse(request, "web/project/dashboard.html", {})
