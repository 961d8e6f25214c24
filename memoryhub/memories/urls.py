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
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/reject/",
        api.MemoryRejectApi.as_view(),
        name="memory-reject",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/promote/",
        api.MemoryPromoteApi.as_view(),
        name="memory-promote",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/merge/",
        api.MemoryMergeApi.as_view(),
        name="memory-merge",
    ),
    path(
        "projects/<slug:slug>/memories/<uuid:memory_id>/delete/",
        api.MemoryDeleteApi.as_view(),
        name="memory-delete",
    ),
]
