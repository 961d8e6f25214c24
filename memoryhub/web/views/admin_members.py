"""Members and tokens. Members: everyone on the project sees the list; maintainers invite,
change roles and remove up to maintainer, owners everyone (projects.services decides, as for
the API), and the last owner stays. Tokens: a person creates, sees and revokes their own;
owners also see and revoke every token limited to this project. A new token is shown once."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.models import ApiToken
from memoryhub.core.exceptions import ApplicationError
from memoryhub.web import forms_admin as forms
from memoryhub.web.access import project_view
from memoryhub.web.templatetags.web_tags import ROLES
from memoryhub.web.views.admin_common import is_htmx, paginate, render, service_errors
from projects import selectors, services
from projects.models import Role
from projects.selectors import ProjectAccess


def _context(request: HttpRequest, access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    user = access.actor.user
    assert user is not None
    own = account_selectors.token_list(user=user)
    project_tokens = (
        account_selectors.token_list_for_project(project_id=access.project.pk).exclude(user=user)
        if access.at_least(Role.OWNER)
        else ApiToken.objects.none()
    )
    return {
        "members": paginate(request, selectors.membership_list(project=access.project)),
        "roles": Role.values,
        "add_form": forms.MemberAddForm(),
        "token_form": forms.TokenCreateForm(),
        "own_tokens": own,
        "project_tokens": project_tokens,
        **extra,
    }


@project_view()
def members(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, "web/admin/members.html", _context(request, access))


@require_POST
@project_view(Role.MAINTAINER)
def member_add(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    form = forms.MemberAddForm(request.POST)
    if form.is_valid():
        user = account_selectors.user_get(username=form.cleaned_data["username"], active_only=True)
        if user is None:
            form.add_error("username", _("No active user with this name."))
        else:
            try:
                services.membership_add(
                    access=access, user=user, role=Role(form.cleaned_data["role"])
                )
            except (ApplicationError, PermissionDenied) as exc:
                service_errors(form, exc)
            else:
                messages.success(
                    request, _("%(user)s joined the project.") % {"user": user.username}
                )
                return redirect("web:members", slug=access.project.slug)
    return render(
        request, "web/admin/members.html", _context(request, access, add_form=form), status=400
    )


@require_POST
@project_view(Role.MAINTAINER)
def member_role(request: HttpRequest, access: ProjectAccess, username: str) -> HttpResponse:
    membership = selectors.membership_get(project=access.project, username=username)
    form = forms.RoleForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            services.membership_change_role(
                access=access, membership=membership, role=Role(form.cleaned_data["role"])
            )
        except (ApplicationError, PermissionDenied) as exc:
            error = getattr(exc, "message", None) or str(exc)
    else:
        error = _("Choose a role.")
    if error:
        messages.error(request, error)
    else:
        messages.success(
            request,
            _("%(user)s is now %(role)s.")
            % {"user": username, "role": ROLES.get(membership.role, membership.role)},
        )
    return redirect("web:members", slug=access.project.slug)


@require_POST
@project_view()
def member_remove(request: HttpRequest, access: ProjectAccess, username: str) -> HttpResponse:
    """Maintainers remove others; anyone may leave (the service decides, as for the API)."""
    membership = selectors.membership_get(project=access.project, username=username)
    try:
        services.membership_remove(access=access, membership=membership)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("web:members", slug=access.project.slug)
    messages.success(request, _("%(user)s left the project.") % {"user": username})
    if access.actor.user is not None and username == access.actor.user.username:
        return redirect("web:home")
    return redirect("web:members", slug=access.project.slug)


@require_POST
@project_view()
def token_create(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """A token of one's own (the actor's role applies to it); the secret is shown once."""
    form = forms.TokenCreateForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        user = access.actor.user
        assert user is not None
        try:
            token, raw = account_services.token_create(
                user=user,
                name=data["name"],
                actor=access.actor,
                project=access.project if data["this_project_only"] else None,
                read_only=data["read_only"],
                expires_at=data["expires_at"],
            )
        except ApplicationError as exc:
            service_errors(form, exc)
        else:
            # Rendered, not redirected: the secret must not travel through the session or a URL.
            return render(
                request,
                "web/admin/members.html",
                _context(request, access, new_token=token, new_token_raw=raw),
                status=201,
            )
    return render(
        request, "web/admin/members.html", _context(request, access, token_form=form), status=400
    )


@require_POST
@project_view()
def token_revoke(request: HttpRequest, access: ProjectAccess, token_id: UUID) -> HttpResponse:
    user = access.actor.user
    assert user is not None
    token = account_selectors.token_get(user=user, public_id=str(token_id))
    if token is None and access.at_least(Role.OWNER):
        token = (
            account_selectors.token_list_for_project(project_id=access.project.pk)
            .filter(public_id=str(token_id))
            .first()
        )
    if token is None:
        raise Http404("Token not found.")
    token = account_services.token_revoke(token=token, actor=access.actor)
    if is_htmx(request):
        return render(request, "web/admin/members.html", {"token": token}, partial="token-row")
    messages.success(request, _("Token %(prefix)s… is revoked.") % {"prefix": token.prefix})
    return redirect("web:members", slug=access.project.slug)
