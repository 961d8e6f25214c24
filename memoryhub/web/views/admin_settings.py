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
from memoryhub.llm.config import OFFLINE, resolve_config
from memoryhub.llm.errors import LlmMisconfigured
from memoryhub.pipeline.conf import PipelineConfig, review_required
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


def _extracts_offline(project: Project) -> bool:
    """Does this project's stage 1 run without an LLM? (An invalid project override is the
    LLM section's own error, shown when it is saved: no hint then.)"""
    try:
        return resolve_config(project).provider == OFFLINE
    except LlmMisconfigured:
        return False


def _page(
    request: HttpRequest,
    project: Project,
    bound: tuple[str, django_forms.Form] | None = None,
    status: int = 200,
    delete_form: django_forms.Form | None = None,
) -> HttpResponse:
    context = {
        "delete_form": delete_form or forms.ConfirmForm(),
        "sections": _forms(project, bound),
        # A refused save is re-rendered at the top of the page: say where the errors are.
        "refused": (bound[0], TITLES[bound[0]]) if bound else None,
        # The offline extractor is about half as precise as a careful reviewer on a new team's
        # sessions (README, "How good is extraction?"): the Review section, where review can be
        # turned on, says so.
        "offline_unreviewed": _extracts_offline(project) and not review_required(project.settings),
    }
    return render(request, "web/admin/settings.html", context, status=status)


@project_view(Role.MAINTAINER)
def settings_page(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return _page(request, access.project)


@require_POST
@project_view(Role.MAINTAINER)
def settings_save(request: HttpRequest, access: ProjectAccess, section: str) -> HttpResponse:
    if section not in SECTIONS:
        raise Http404("Unknown settings section.")
    form = SECTIONS[section](request.POST, prefix=section)
    if form.is_valid():
        value = form.section_value()  # type: ignore[attr-defined]
        try:
            services.project_settings_section_put(
                access=access, section=section, value=None if value in ({}, False) else value
            )
        except ApplicationError as exc:
            service_errors(form, exc)
        else:
            messages.success(
                request, _("%(section)s settings saved.") % {"section": TITLES[section]}
            )
            return redirect("web:settings", slug=access.project.slug)
    return _page(request, access.project, (section, form), status=400)


@require_POST
@project_view(Role.OWNER)
def project_delete(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ConfirmForm(request.POST)
    if form.is_valid():
        try:
            deleted = services.project_delete(access=access, confirm=form.cleaned_data["confirm"])
        except ApplicationError as exc:
            service_errors(form, exc, "confirm")
        else:
            messages.success(
                request,
                _(
                    "Project %(slug)s deleted: %(memories)s memories, %(sessions)s sessions,"
                    " %(members)s members."
                )
                % (deleted | {"slug": access.project.slug}),
            )
            return redirect("web:home")
    return _page(request, access.project, status=400, delete_form=form)
