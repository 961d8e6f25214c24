from django.urls import path

from memoryhub.sessions import api

S = "projects/<slug:slug>/sessions/"
R = S + "<str:ref>/"

urlpatterns = [
    path(S, api.SessionCollectionApi.as_view(), name="sessions"),
    path(S + "import/", api.SessionImportApi.as_view(), name="sessions-import"),
    path(
        S + "import/jobs/<str:job>/",
        api.SessionImportJobApi.as_view(),
        name="session-import-job",
    ),
    path(R, api.SessionDetailApi.as_view(), name="session-detail"),
    path(R + "records/", api.RecordCollectionApi.as_view(), name="session-records"),
    path(R + "resume/", api.SessionResumeApi.as_view(), name="session-resume"),
    path(R + "compaction/", api.SessionCompactionAdviceApi.as_view(), name="session-compaction"),
    path(R + "compact/", api.SessionCompactApi.as_view(), name="session-compact"),
    path(R + "end/", api.SessionEndApi.as_view(), name="session-end"),
    path(R + "transcript/", api.SessionTranscriptPushApi.as_view(), name="session-transcript"),
    path(
        R + "tool-results/<str:tool_use_id>/",
        api.ToolResultArtifactApi.as_view(),
        name="session-tool-result",
    ),
]
