from django.urls import path

from memoryhub.interchange import api

urlpatterns = [
    path(
        "projects/<slug:slug>/interchange/",
        api.InterchangeFormatsApi.as_view(),
        name="interchange-formats",
    ),
    path(
        "projects/<slug:slug>/interchange/<str:fmt>/import/",
        api.InterchangeImportApi.as_view(),
        name="interchange-import",
    ),
    path(
        "projects/<slug:slug>/interchange/<str:fmt>/export/",
        api.InterchangeExportApi.as_view(),
        name="interchange-export",
    ),
]
