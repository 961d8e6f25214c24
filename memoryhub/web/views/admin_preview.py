"""Injection preview: what an agent would receive, byte for byte, and why each memory was
chosen (memoryhub.recall.explain). Reads only; previewing as another member is for
maintainers, and audited."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from memoryhub.core.exceptions import ApplicationError
from memoryhub.recall import explain
from memoryhub.recall.injection import Profile
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import render, service_errors
from projects.models import Role
from projects.selectors import ProjectAccess, membership_list


@project_view()
def preview(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    me = access.actor.user.username if access.actor.user is not None else ""
    usernames = (
        list(membership_list(project=access.project).values_list("user__username", flat=True))
        if access.at_least(Role.MAINTAINER)
        else [me]
    )
    submitted = "profile" in request.GET
    form = forms.PreviewForm(
        request.GET if submitted else None,
        usernames=usernames,
        initial={"profile": Profile.MEWCODE, "user": me},
    )
    result = None
    if submitted and form.is_valid():
        data = form.cleaned_data
        try:
            as_access = explain.preview_access_for(access=access, username=data["user"] or me)
        except ApplicationError as exc:
            service_errors(form, exc, "user")
        else:
            result = explain.preview(
                access=as_access, profile=Profile(data["profile"]), prompt=data["prompt"]
            )
    return render(
        request,
        "web/admin/preview.html",
        {"form": form, "result": result},
        partial="preview-result",
        status=400 if form.errors else 200,
    )
