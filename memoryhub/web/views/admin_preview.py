"""Injection preview: what the signed-in person's agent would receive, byte for byte, and why
each memory was chosen (memoryhub.recall.explain). Reads only. Always as oneself: another
member's payload holds their private memories, which only they may see."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from memoryhub.recall import explain
from memoryhub.recall.injection import Profile
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import render
from projects.selectors import ProjectAccess


@project_view()
def preview(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    submitted = "profile" in request.GET
    form = forms.PreviewForm(request.GET if submitted else None)
    result = None
    if submitted and form.is_valid():
        data = form.cleaned_data
        result = explain.preview(
            access=access, profile=Profile(data["profile"]), prompt=data["prompt"]
        )
    return render(
        request,
        "web/admin/preview.html",
        {"form": form, "result": result},
        partial="preview-result",
        status=400 if form.errors else 200,
    )
