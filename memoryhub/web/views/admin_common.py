"""What the admin pages share: htmx-aware rendering, errors from services as form errors,
and pagination."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from memoryhub.core.exceptions import ApplicationError

PAGE_SIZE = 50


def is_htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def render(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    partial: str | None = None,
    status: int = 200,
) -> TemplateResponse:
    """The whole page, or for an htmx request only its `partial` (a Django 6 partialdef)."""
    name = f"{template}#{partial}" if partial and is_htmx(request) else template
    return TemplateResponse(request, name, context, status=status)


def service_errors(form: forms.Form, exc: Exception, field: str | None = None) -> None:
    """Put a service's refusal on the form, as the API puts it in its error envelope."""
    if isinstance(exc, ApplicationError):
        messages = [exc.message]
    elif isinstance(exc, ValidationError):
        messages = list(exc.messages)
    elif isinstance(exc, PermissionDenied):
        messages = [str(exc)]
    else:
        raise exc
    for message in messages:
        form.add_error(field, message)


def paginate(request: HttpRequest, qs: QuerySet[Any], per_page: int = PAGE_SIZE) -> Page[Any]:
    """Indexed offset pagination: every list page orders by an index of its table."""
    return Paginator(qs, per_page).get_page(request.GET.get("page"))
