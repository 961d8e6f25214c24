"""Import and export of the agents' on-disk memory formats (MewCode, Claude Code, meow-memory,
oh-my-pi): the page over memoryhub.interchange, with the API's roles — every member of the
project exports what they can see (the download is the API's own export), members import,
and project instructions, artifacts and rollouts need a maintainer (the import service says
so). "Preview" runs the whole import and rolls it back, so it shows exactly what an import
would create, update and keep."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.interchange import archive, formats
from memoryhub.interchange.bundle import ImportFailed
from memoryhub.interchange.services import PARTS, ImportResult
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import render
from projects.models import Role
from projects.selectors import ProjectAccess

TEMPLATE = "web/admin/interchange.html"


def _exports(access: ProjectAccess) -> list[dict[str, Any]]:
    rows = []
    for name, label in forms.FORMAT_LABELS.items():
        url = reverse("interchange-export", kwargs={"slug": access.project.slug, "fmt": name})
        rows.append(
            {
                "name": name,
                "label": label,
                "description": forms.FORMAT_FILES[name],
                "zip": f"{url}?archive=zip",
                "tar": f"{url}?archive=tar",
            }
        )
    return rows


def _summary(result: ImportResult) -> list[dict[str, Any]]:
    """One row per part the upload touched: created, updated, unchanged."""
    return [
        {
            "part": part,
            "created": result.created[part],
            "updated": result.updated[part],
            "unchanged": result.unchanged[part],
        }
        for part in PARTS
        if result.created[part] or result.updated[part] or result.unchanged[part]
    ]


@project_view()
def interchange(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, TEMPLATE, {"form": forms.ImportForm(), "exports": _exports(access)})


@require_POST
@project_view(Role.MEMBER)
def interchange_import(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.ImportForm(request.POST, request.FILES)
    dry_run = request.POST.get("action") == "preview"
    context: dict[str, Any] = {
        "form": form,
        "dry_run": dry_run,
        "exports": _exports(access),
        "nav_section": "interchange",
    }
    status = 400
    if form.is_valid():
        files = [
            (f, f.name or "", form.mtime_of(f.name or "")) for f in form.cleaned_data["upload"]
        ]
        try:
            with archive.unpack_files(files) as unpacked:
                result = formats.interchange_import(
                    access=access,
                    format=form.cleaned_data["format"],
                    tree=unpacked.tree,
                    dry_run=dry_run,
                )
        except ImportFailed as exc:
            context["errors"] = exc.details["errors"]
        except ApplicationError as exc:  # an unreadable or unsafe archive, too large an upload
            context["errors"] = [{"file": "", "line": None, "message": exc.message}]
            status = exc.status_code
        except PermissionDenied as exc:  # instructions or artifacts from a member
            context["errors"] = [{"file": "", "line": None, "message": str(exc)}]
            status = 403
        else:
            context |= {"result": result, "summary": _summary(result)}
            status = 200
    return render(request, TEMPLATE, context, partial="import-result", status=status)
