"""Per-project settings (maintainers): review_required and the recall, sessions, pipeline and
llm sections as forms. Saving goes through projects.services.project_update — the service
of PATCH /api/v1/projects/{slug}/ — so the same section validators refuse the same values,
and the same audit event is written."""

from __future__ import annotations

from typing import Any

from django import forms as django_forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline.conf import PipelineConfig
from memoryhub.recall.conf import RecallConfig
from memoryhub.sessions.conf import SessionConfig
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import render, service_errors
from projects import services
from projects.models import Project, Role
from projects.selectors import ProjectAccess

SECTIONS: dict[str, type[django_forms.Form]] = {
    "review_required": forms.ReviewSettingsForm,
    "recall": forms.section_form_class(RecallConfig, RecallConfig()),
    "sessions": forms.section_form_class(SessionConfig, SessionConfig()),
    "pipeline": forms.section_form_class(PipelineConfig, PipelineConfig()),
    "llm": forms.LlmSettingsForm,
}
TITLES = {
    "review_required": gettext_lazy("Review"),
    "recall": gettext_lazy("Recall ranking"),
    "sessions": gettext_lazy("Sessions"),
    "pipeline": gettext_lazy("Pipeline"),
    "llm": gettext_lazy("LLM"),
}


def _initial(project: Project, section: str) -> dict[str, Any]:
    current = project.settings.get(section)
    if section == "review_required":
        return {"review_required": bool(current)}
    return forms.section_initial(current if isinstance(current, dict) else {})


def _forms(
    project: Project, bound: tuple[str, django_forms.Form] | None = None
) -> list[tuple[str, Any, django_forms.Form]]:
    out = []
    for name, form_class in SECTIONS.items():
        form = (
            bound[1]
            if bound and bound[0] == name
            else form_class(initial=_initial(project, name), prefix=name)
        )
        out.append((name, TITLES[name], form))
    return out


@project_view(Role.MAINTAINER)
def settings_page(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, "web/admin/settings.html", {"sections": _forms(access.project)})


@require_POST
@project_view(Role.MAINTAINER)
def settings_save(request: HttpRequest, access: ProjectAccess, section: str) -> HttpResponse:
    if section not in SECTIONS:
        raise Http404("Unknown settings section.")
    form = SECTIONS[section](request.POST, prefix=section)
    if form.is_valid():
        value = form.section_value()  # type: ignore[attr-defined]
        new = {k: v for k, v in access.project.settings.items() if k != section}
        if value not in ({}, False):
            new[section] = value
        try:
            services.project_update(access=access, changes={"settings": new})
        except ApplicationError as exc:
            service_errors(form, exc)
        else:
            messages.success(
                request, _("%(section)s settings saved.") % {"section": TITLES[section]}
            )
            return redirect("web:settings", slug=access.project.slug)
    return render(
        request,
        "web/admin/settings.html",
        {"sections": _forms(access.project, (section, form)), "open_section": section},
        status=400,
    )
