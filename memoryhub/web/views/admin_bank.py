"""Bank administration: stats and diagnose for everyone on the project; enqueue and dream now
for maintainers; clear and rebuild (typed confirmation of the slug) for owners — the roles and
services of …/bank/ in the API. The rebuild's progress bar polls a fragment every second
until the job is done or shows its error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.selectors import worker_status
from memoryhub.llm import selectors as llm_selectors
from memoryhub.pipeline import selectors, services
from memoryhub.pipeline.dream import schedule
from memoryhub.pipeline.dream import selectors as dream_selectors
from memoryhub.pipeline.models import Job
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import is_htmx, render, service_errors
from projects.models import Role
from projects.selectors import ProjectAccess


@dataclass(frozen=True)
class RebuildState:
    job: Job
    polling: bool  # queued or running: the fragment asks again in a second
    percent: int
    error: str


def rebuild_state(job: Job | None) -> RebuildState | None:
    if job is None:
        return None
    # A restarted rebuild keeps its old status until a worker claims it: new input means queued.
    queued = job.input_watermark > job.success_watermark and job.status == Job.Status.DONE
    polling = job.status in (Job.Status.PENDING, Job.Status.RUNNING) or queued
    percent = 100 if job.status == Job.Status.DONE and not queued else job.progress
    error = job.last_error if job.status in (Job.Status.ERROR, Job.Status.FAILED) else ""
    return RebuildState(job=job, polling=polling, percent=min(percent, 100), error=error)


def _rebuild(access: ProjectAccess) -> RebuildState | None:
    try:
        return rebuild_state(selectors.rebuild_job(project=access.project))
    except Http404:  # never rebuilt
        return None


def _context(access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    overview = selectors.job_overview(project=access.project)
    return {
        "stats": selectors.bank_stats(project=access.project, access=access),
        "running": overview["running"],
        "failing": overview["failing"],
        "recent": overview["recent"],
        "llm": llm_selectors.llm_usage(project=access.project),
        "worker": worker_status(),
        "rebuild": _rebuild(access),
        "clear_form": forms.ClearForm(),
        "rebuild_form": forms.ConfirmForm(),
        **extra,
    }


@project_view()
def bank(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, "web/admin/bank.html", _context(access))


@project_view()
def rebuild_progress(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """The progress fragment htmx polls (a whole page without htmx). Once the rebuild has
    ended, htmx reloads the page: its stats and jobs changed, and the form needs them."""
    if not is_htmx(request):
        return render(request, "web/admin/bank.html", _context(access), partial="rebuild-progress")
    state = _rebuild(access)
    response = render(
        request,
        "web/admin/bank.html",
        {"rebuild": state, "rebuild_form": forms.ConfirmForm()},
        partial="rebuild-progress",
    )
    if state is None or not state.polling:
        response["HX-Refresh"] = "true"
    return response


@require_POST
@project_view(Role.MAINTAINER)
def bank_enqueue(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    sent = services.bank_enqueue(project=access.project, actor=access.actor)
    messages.success(
        request,
        _("Sent to the workers: %(stage1)s extractions, %(stage2)s consolidation, %(dream)s dream.")
        % sent,
    )
    return redirect("web:bank", slug=access.project.slug)


@require_POST
@project_view(Role.MAINTAINER)
def bank_dream(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    try:
        session = dream_selectors.latest_window(project=access.project)
        schedule.dream_request(project=access.project, session=session, actor=access.actor)
    except (ApplicationError, Http404) as exc:
        messages.error(request, getattr(exc, "message", None) or str(exc))
    else:
        messages.success(request, _("A dream about the latest session is queued."))
    return redirect("web:bank", slug=access.project.slug)


@require_POST
@project_view(Role.OWNER)
def bank_clear(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ClearForm(request.POST)
    if form.is_valid():
        try:
            counts = services.bank_clear(
                project=access.project,
                actor=access.actor,
                confirm=form.cleaned_data["confirm"],
                include_transcripts=form.cleaned_data["include_transcripts"],
            )
        except ApplicationError as exc:
            service_errors(form, exc, "confirm")
        else:
            messages.success(
                request,
                _("Cleared: %(memories)s memories, %(artifacts)s artifacts, %(jobs)s jobs.")
                % counts,
            )
            return redirect("web:bank", slug=access.project.slug)
    return render(request, "web/admin/bank.html", _context(access, clear_form=form), status=400)


@require_POST
@project_view(Role.OWNER)
def bank_rebuild(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ConfirmForm(request.POST)
    if form.is_valid():
        try:
            job = services.bank_rebuild_start(
                project=access.project, actor=access.actor, confirm=form.cleaned_data["confirm"]
            )
        except ApplicationError as exc:
            service_errors(form, exc, "confirm")
        else:
            if is_htmx(request):
                return render(
                    request,
                    "web/admin/bank.html",
                    {"rebuild": rebuild_state(job)},
                    partial="rebuild-progress",
                )
            return redirect("web:bank", slug=access.project.slug)
    if is_htmx(request):
        return render(
            request,
            "web/admin/bank.html",
            {"rebuild": _rebuild(access), "rebuild_form": form},
            partial="rebuild-progress",
        )
    return render(request, "web/admin/bank.html", _context(access, rebuild_form=form), status=400)
