"""Recall files (frontmatter as form fields) and MEWCODE.md instructions (project files, one's
own file, and the resolved preview with include problems in place). Same roles and services
as the API: project recall files and instruction files need a member; one's own files any
role."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.memories.kinds import Scope
from memoryhub.recall import selectors, services
from memoryhub.recall.instructions_preview import instructions_preview
from memoryhub.recall.models import InstructionFile, RecallFile, normalize_path
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import paginate, render, service_errors
from projects.models import Role
from projects.selectors import ProjectAccess

FILE_EDIT = "web/admin/file_edit.html"  # recall files and instruction files alike


def _can_write(access: ProjectAccess, scope: str) -> bool:
    return scope == Scope.USER or access.at_least(Role.MEMBER)


def _stored(path: str) -> str:
    try:
        return normalize_path(path)
    except ValidationError:
        raise Http404("Not found.") from None


@project_view()
def recall_file_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    scope = request.GET.get("scope")
    if scope not in Scope.values:
        scope = None
    page = paginate(request, selectors.recall_file_list(access=access, scope=scope))
    return render(
        request,
        "web/admin/recall_files.html",
        {"page": page, "scope": scope or "", "query": f"scope={scope}" if scope else ""},
        partial="recall-rows",
    )


@project_view()
def recall_file_edit(
    request: HttpRequest, access: ProjectAccess, scope: str = "", path: str = ""
) -> HttpResponse:
    """Create (no path) or edit a recall file. GET shows the form, POST saves through
    services.recall_file_put (PUT …/recall-files/{scope}/{path} of the API)."""
    file: RecallFile | None = None
    if path:
        if scope not in Scope.values:
            raise Http404("Unknown scope.")
        file = selectors.recall_file_get(access=access, scope=scope, path=_stored(path))
    other: list[str] = []
    if file is not None:
        known, other, body = forms.split_frontmatter(file.content)
        initial = {"scope": scope, "path": file.path, "body": body, **known}
    else:
        initial = {"scope": Scope.PROJECT if access.at_least(Role.MEMBER) else Scope.USER}
    # A new file offers only the scopes the person may write; an existing one keeps its own. A
    # post naming another scope did not come from this form: refused by role, as before.
    scopes = None if file else [s for s in Scope.values if _can_write(access, s)]
    posted = request.POST.get("scope")
    if scopes is not None and posted in Scope.values and posted not in scopes:
        raise PermissionDenied(
            f"This action needs the {Role.MEMBER} role or higher; you are {access.role}."
        )
    form = forms.RecallFileForm(request.POST or None, initial=initial, scopes=scopes)
    if file is not None:
        form.fields["scope"].disabled = True
        form.fields["path"].disabled = True
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if not _can_write(access, data["scope"]):
            raise PermissionDenied(
                f"This action needs the {Role.MEMBER} role or higher; you are {access.role}."
            )
        content = forms.join_frontmatter(
            {k: data[k] for k in forms.FRONTMATTER_FIELDS}, other, data["body"]
        )
        try:
            saved, _created = services.recall_file_put(
                project=access.project,
                actor=access.actor,
                scope=data["scope"],
                data=services.RecallFileInput(path=data["path"], content=content),
            )
        except (ApplicationError, ValidationError) as exc:
            service_errors(form, exc)
        else:
            messages.success(request, _("Saved %(path)s.") % {"path": saved.path})
            return redirect(
                "web:recall_file", slug=access.project.slug, scope=saved.scope, path=saved.path
            )
    slug = access.project.slug
    return render(
        request,
        FILE_EDIT,
        {
            "form": form,
            "file": file,
            "can_write": _can_write(access, scope or Scope.USER) if file else True,
            "nav_section": "recall_files",
            "back_url": reverse("web:recall_files", kwargs={"slug": slug}),
            "back_label": _("Recall files"),
            "new_title": _("New recall file"),
            "delete_url": reverse(
                "web:recall_file_delete",
                kwargs={"slug": slug, "scope": file.scope, "path": file.path},
            )
            if file
            else "",
        },
        status=400 if form.errors else 200,
    )


# --- instructions ---------------------------------------------------------------------------


@project_view()
def instructions(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    own: InstructionFile | None
    try:
        own = selectors.user_instruction_file_get(access=access)
    except Http404:  # no file of one's own yet
        own = None
    preview = instructions_preview(project=access.project, user=access.actor.user)
    user_form = forms.UserInstructionForm(initial={"content": own.content if own else ""})
    return render(
        request,
        "web/admin/instructions.html",
        {
            "files": selectors.instruction_file_list(access=access),
            "own": own,
            "preview": preview,
            "user_form": user_form,
        },
    )


@project_view()
def instruction_edit(request: HttpRequest, access: ProjectAccess, path: str = "") -> HttpResponse:
    """A project instruction file: create (no path) or edit; members and up may save."""
    file = selectors.instruction_file_get(access=access, path=_stored(path)) if path else None
    form = forms.InstructionFileForm(
        request.POST or None,
        initial={"path": file.path, "content": file.content} if file else {"path": "MEWCODE.md"},
    )
    if file is not None:
        form.fields["path"].disabled = True
    if request.method == "POST":
        if not access.at_least(Role.MEMBER):
            raise PermissionDenied(
                f"This action needs the {Role.MEMBER} role or higher; you are {access.role}."
            )
        if form.is_valid():
            try:
                saved, _created = services.instruction_file_put(
                    project=access.project,
                    actor=access.actor,
                    path=form.cleaned_data["path"],
                    content=form.cleaned_data["content"],
                )
            except (ApplicationError, ValidationError) as exc:
                service_errors(form, exc)
            else:
                messages.success(request, _("Saved %(path)s.") % {"path": saved.path})
                return redirect(reverse("web:instructions", kwargs={"slug": access.project.slug}))
    slug = access.project.slug
    return render(
        request,
        FILE_EDIT,
        {
            "form": form,
            "file": file,
            "can_write": access.at_least(Role.MEMBER),
            "nav_section": "instructions",
            "back_url": reverse("web:instructions", kwargs={"slug": slug}),
            "back_label": _("Instructions"),
            "new_title": _("New instruction file"),
            "help": _("A line “@include path” is replaced by that file, relative to this one."),
            "delete_url": reverse(
                "web:instruction_delete", kwargs={"slug": slug, "path": file.path}
            )
            if file
            else "",
        },
        status=400 if form.errors else 200,
    )


@project_view()
def user_instruction_save(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """One's own instructions (the ~/.mewcode/MEWCODE.md layer): any role, POST only."""
    if request.method != "POST":
        return redirect("web:instructions", slug=access.project.slug)
    form = forms.UserInstructionForm(request.POST)
    if form.is_valid():
        try:
            services.instruction_file_put(
                project=access.project,
                actor=access.actor,
                path=InstructionFile.USER_FILE_PATH,
                content=form.cleaned_data["content"],
                owner=access.actor.user,
            )
        except (ApplicationError, ValidationError) as exc:
            service_errors(form, exc, "content")
        else:
            messages.success(request, _("Your instructions are saved."))
            return redirect("web:instructions", slug=access.project.slug)
    for error in form.errors.get("content", []):
        messages.error(request, str(error))
    return redirect("web:instructions", slug=access.project.slug)


@require_POST
@project_view()
def recall_file_delete(
    request: HttpRequest, access: ProjectAccess, scope: str, path: str
) -> HttpResponse:
    """DELETE …/recall-files/{scope}/{path} of the API: project files need a member."""
    if scope not in Scope.values:
        raise Http404("Unknown scope.")
    if not _can_write(access, scope):
        raise PermissionDenied(
            f"This action needs the {Role.MEMBER} role or higher; you are {access.role}."
        )
    file = selectors.recall_file_get(access=access, scope=scope, path=_stored(path))
    services.recall_file_delete(file=file, actor=access.actor)
    messages.success(request, _("Deleted %(path)s.") % {"path": file.path})
    return redirect("web:recall_files", slug=access.project.slug)


@require_POST
@project_view(Role.MEMBER)
def instruction_delete(request: HttpRequest, access: ProjectAccess, path: str) -> HttpResponse:
    """DELETE …/instructions/files/{path} of the API (members and up)."""
    file = selectors.instruction_file_get(access=access, path=_stored(path))
    services.instruction_file_delete(file=file, actor=access.actor)
    messages.success(request, _("Deleted %(path)s.") % {"path": file.path})
    return redirect("web:instructions", slug=access.project.slug)
