from typing import cast

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memoryhub.core import api_views, health

_csp = cast(dict[str, list[str]], settings.SECURE_CSP)

api_v1 = [
    path("", include("accounts.urls")),
    path("", include("projects.urls")),
    path("", include("memoryhub.recall.urls")),
    path("", include("memoryhub.memories.urls")),
    path("", include("memoryhub.sessions.urls")),
    path("", include("memoryhub.llm.urls")),
    path("", include("memoryhub.pipeline.urls")),
    path("", include("memoryhub.backups.urls")),
    path("", include("memoryhub.interchange.urls")),
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file; its template still has an
    # inline <style>, and Swagger UI sets styles from script, so only styles are relaxed here.
    path(
        "api/docs/",
        csp_override({**_csp, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="schema")
        ),
        name="api-docs",
    ),
    # Unknown API paths answer in the JSON error envelope, not Django's HTML 404 page.
    re_path(r"^api/", api_views.api_not_found),
    path("", include("memoryhub.integrations.hindsight.urls")),  # Hindsight API: /v1/…
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the header's EN / 中文
    path("", include("memoryhub.web.urls")),
]
