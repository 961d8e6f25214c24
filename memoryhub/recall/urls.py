from django.urls import path

from memoryhub.recall.api import (
    artifacts,
    injection,
    instructions,
    panorama,
    recall,
    recall_files,
    search,
    similar,
)

P = "projects/<slug:slug>/"

urlpatterns = [
    path(P + "memories/search/", search.MemorySearchApi.as_view(), name="memories-search"),
    path(P + "injection/", injection.InjectionApi.as_view(), name="injection"),
    path(P + "panorama/", panorama.PanoramaApi.as_view(), name="panorama"),
    path(
        P + "memories/<uuid:memory_id>/similar/",
        similar.MemorySimilarApi.as_view(),
        name="memory-similar",
    ),
    path(P + "memory/", artifacts.MemoryUriApi.as_view(), name="memory-uri"),
    path(P + "artifacts/", artifacts.ArtifactListApi.as_view(), name="artifacts"),
    path(
        P + "artifacts/<path:path>", artifacts.ArtifactDetailApi.as_view(), name="artifact-detail"
    ),
    path(P + "instructions/", instructions.InstructionsResolvedApi.as_view(), name="instructions"),
    path(
        P + "instructions/files/",
        instructions.InstructionFileListApi.as_view(),
        name="instruction-files",
    ),
    path(
        P + "instructions/files/<path:path>",
        instructions.InstructionFileDetailApi.as_view(),
        name="instruction-file",
    ),
    path(
        P + "instructions/tree/", instructions.InstructionTreeApi.as_view(), name="instruction-tree"
    ),
    path(
        P + "instructions/user/",
        instructions.UserInstructionFileApi.as_view(),
        name="user-instruction-file",
    ),
    path(P + "recall-files/", recall_files.RecallFileListApi.as_view(), name="recall-files"),
    path(
        P + "recall-files/sync/", recall_files.RecallFileSyncApi.as_view(), name="recall-files-sync"
    ),
    path(
        P + "recall-files/<str:scope>/<path:path>",
        recall_files.RecallFileDetailApi.as_view(),
        name="recall-file",
    ),
    path(P + "recall/", recall.RecallApi.as_view(), name="recall"),
]
