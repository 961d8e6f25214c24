from django.urls import path

from memoryhub.recall import api

urlpatterns = [
    path(
        "projects/<slug:slug>/memories/search/",
        api.MemorySearchApi.as_view(),
        name="memories-search",
    ),
]
