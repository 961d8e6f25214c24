from django.urls import path

from memoryhub.recall.api import search

P = "projects/<slug:slug>/"

urlpatterns = [
    path(P + "memories/search/", search.MemorySearchApi.as_view(), name="memories-search"),
]
