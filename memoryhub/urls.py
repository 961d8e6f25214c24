from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memoryhub.core import api_views, health, views

api_v1 = [
    path("", include("accounts.urls")),
    path("", include("projects.urls")),
    path("", include("memoryhub.recall.urls")),
    path("", include("memoryhub.memories.urls")),
    path("", include("memoryhub.sessions.urls")),
    path("", include("memoryhub.llm.urls")),
    path("", include("memoryhub.pipeline.urls")),
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # Unknown API paths answer in the JSON error envelope, not Django's HTML 404 page.
    re_path(r"^api/", api_views.api_not_found),
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
]
