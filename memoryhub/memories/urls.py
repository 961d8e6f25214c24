from django.urls import path

from memoryhub.memories import api

urlpatterns = [
    path("memory-kinds/", api.MemoryKindsApi.as_view(), name="memory-kinds"),
    path("projects/<slug:slug>/memories/", api.MemoryCollectionApi.as_view(), name="memories"),
    path(
        "projects/<slug:slug>/memories/bulk/",
        api.MemoryBulkCreateApi.as_view(),
        name="memories-bulk",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/",
        api.MemoryDetailApi.as_view(),
        name="memory-detail",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/archive/",
        api.MemoryArchiveApi.as_view(),
        name="memory-archive",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/stale/",
        api.MemoryMarkStaleApi.as_view(),
        name="memory-stale",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/restore/",
        api.MemoryRestoreApi.as_view(),
        name="memory-restore",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/approve/",
        api.MemoryApproveApi.as_view(),
        name="memory-approve",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/history/",
        api.MemoryHistoryApi.as_view(),
        name="memory-history",
    ),
]
