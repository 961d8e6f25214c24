"""The review queue: proposed memories with their provenance; approve, edit-then-approve,
reject with a reason, one at a time (htmx, keyboard) or in bulk. Maintainers review the
project's proposals; every member reviews their own private (user-scope) proposals, which
nobody else can see (selectors.memory_review_queue / memory_review_check)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.memories import selectors, services
from memoryhub.memories.models import Memory
from memoryhub.web import forms, provenance
from memoryhub.web.access import project_view
from memoryhub.web.htmx import is_htmx
from memoryhub.web.pagination import decode_cursor, encode_cursor, error_text
from projects.models import Role
from projects.selectors import ProjectAccess

PAGE_SIZE = 25
BULK_MAX = 200


def _queue(access: ProjectAccess) -> Any:
    return selectors.memory_review_queue(access=access).order_by("created_at", "id")


def _item_context(access: ProjectAccess, memory: Memory, **extra: Any) -> dict[str, Any]:
    return {
        "item": memory,
        "excerpt": provenance.excerpts(access, [memory]).get(memory.pk),
        "project": access.project,
        **extra,
    }


@project_view(Role.MEMBER)
def review_queue(request: HttpRequest, access: ProjectAccess) -> TemplateResponse:
    return _queue_page(request, access)


def _queue_page(
    request: HttpRequest, access: ProjectAccess, *, status: int = 200, **extra: Any
) -> TemplateResponse:
    qs = _queue(access)
    cursor = decode_cursor(request.GET.get("cursor", ""), "created_at")
    if cursor is not None:
        created_at, pk = cursor
        qs = qs.filter(created_at__gte=created_at).exclude(created_at=created_at, pk__lte=pk)
    items = list(qs[: PAGE_SIZE + 1])
    next_cursor = None
    if len(items) > PAGE_SIZE:
        items = items[:PAGE_SIZE]
        next_cursor = encode_cursor(items[-1].created_at, items[-1].pk)
    context = {
        "items": items,
        "excerpts": provenance.excerpts(access, items),
        "total": qs.count() if cursor is None else None,
        "next_cursor": next_cursor,
        "nav_section": "review",
        **extra,
    }
    return TemplateResponse(request, "web/review/queue.html", context, status=status)


def _get(access: ProjectAccess, memory_id: UUID) -> Memory:
    return selectors.memory_get(access=access, public_id=str(memory_id))


def _reviewable(access: ProjectAccess, memory_id: UUID) -> Memory:
    """The memory, if the caller may review it (403 otherwise, as the API answers)."""
    memory = _get(access, memory_id)
    selectors.memory_review_check(access=access, memory=memory)
    return memory


def _respond(
    request: HttpRequest, access: ProjectAccess, memory: Memory, *, done: str = "", error: str = ""
) -> HttpResponse:
    """htmx: the item's block in its new state; otherwise back to the queue with a message."""
    if is_htmx(request):
        memory = _get(access, memory.public_id)
        context = _item_context(access, memory, done=done, error=error)
        return TemplateResponse(
            request,
            "web/review/queue.html#review-item",
            context,
            status=400 if error else 200,
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return redirect(reverse("web:review", kwargs={"slug": access.project.slug}))


@require_POST
@project_view(Role.MEMBER)
def review_approve(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    memory = _reviewable(access, memory_id)
    try:
        memory = services.memory_approve(memory=memory, actor=access.actor)
    except ApplicationError as exc:
        return _respond(request, access, memory, error=exc.message)
    return _respond(request, access, memory, done=_("Approved."))


@require_POST
@project_view(Role.MEMBER)
def review_reject(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    memory = _reviewable(access, memory_id)
    try:
        memory = services.memory_reject(
            memory=memory, actor=access.actor, reason=forms.posted_reason(request)
        )
    except (ValidationError, ApplicationError) as exc:
        return _respond(request, access, memory, error=error_text(exc))
    return _respond(request, access, memory, done=_("Rejected."))


@project_view(Role.MEMBER)
def review_edit(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    """Edit, then approve: both in one transaction, so a failed approval keeps the old text."""
    memory = _reviewable(access, memory_id)
    form = forms.MemoryEditForm.for_memory(memory)
    version = services.edit_version(memory)
    if request.method == "POST":
        form = forms.MemoryEditForm(request.POST)
        if form.is_valid():
            try:
                with transaction.atomic():
                    services.memory_update(
                        memory=memory,
                        actor=access.actor,
                        changes=form.changes(),
                        expected_version=request.POST.get("version") or None,
                    )
                    memory = services.memory_approve(memory=memory, actor=access.actor)
            except ValidationError as exc:
                form.add_service_errors(exc)
            except ApplicationError as exc:
                form.add_error(None, exc.message)
                version = exc.details.get("version", [version])[0]  # as on the edit page
            else:
                return _respond(request, access, memory, done=_("Edited and approved."))
        else:
            version = request.POST.get("version") or version
    status = 400 if form.errors else 200
    context = _item_context(
        access, memory, form=form, editing=True, version=version, nav_section="review"
    )
    template = "web/review/edit.html"
    if is_htmx(request):
        template = "web/review/queue.html#review-item"
    return TemplateResponse(request, template, context, status=status)


@require_POST
@project_view(Role.MEMBER)
def review_bulk(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Approve or reject the selected memories; each is its own transaction, and what could not
    be done (e.g. someone else reviewed it first) is reported, not fatal."""
    action = request.POST.get("action")
    ids = request.POST.getlist("selected")[:BULK_MAX]
    reason = forms.posted_reason(request)
    done, failed = 0, []
    if action == "reject" and not reason.strip():
        messages.error(request, _("Say why the selected memories are rejected."))
        return redirect(reverse("web:review", kwargs={"slug": access.project.slug}))
    if action == "approve" and reason.strip():
        # A typed reason means the person meant to reject: never approve then. The queue comes
        # back with their selection and reason kept.
        messages.error(
            request,
            _(
                "Nothing was approved: a reason for rejecting was typed. Use “Reject selected” "
                "to reject, or clear the reason to approve."
            ),
        )
        return _queue_page(request, access, status=400, bulk_reason=reason, bulk_selected=ids)
    valid_ids = []
    for value in ids:
        try:
            valid_ids.append(str(UUID(value)))
        except ValueError:
            continue
    proposed = _queue(access).filter(public_id__in=valid_ids)
    found = {str(m.public_id): m for m in proposed}
    for value in valid_ids:
        memory = found.get(value)
        if memory is None:
            failed.append(value)
            continue
        try:
            if action == "approve":
                services.memory_approve(memory=memory, actor=access.actor)
            elif action == "reject":
                services.memory_reject(memory=memory, actor=access.actor, reason=reason)
            else:
                break
            done += 1
        except (ValidationError, ApplicationError):
            failed.append(value)
    if action == "approve":
        messages.success(
            request,
            ngettext("%(n)d memory approved.", "%(n)d memories approved.", done) % {"n": done},
        )
    elif action == "reject":
        messages.success(
            request,
            ngettext("%(n)d memory rejected.", "%(n)d memories rejected.", done) % {"n": done},
        )
    if failed:
        messages.warning(
            request,
            ngettext(
                "%(n)d was no longer waiting for review.",
                "%(n)d were no longer waiting for review.",
                len(failed),
            )
            % {"n": len(failed)},
        )
    return redirect(reverse("web:review", kwargs={"slug": access.project.slug}))
