"""Pages of the dashboard's second half (sessions, recall files, instructions, injection
preview, bank, members and tokens, settings). Project pages take `slug` and use
memoryhub.web.access.project_view; their names appear in memoryhub.web.nav.PROJECT_NAV."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []
