from django.urls import path

from memoryhub.llm import api

urlpatterns = [
    path("projects/<slug:slug>/llm/usage/", api.LlmUsageApi.as_view(), name="llm-usage"),
]
