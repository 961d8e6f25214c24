from django.urls import path

from memoryhub.pipeline import api

B = "projects/<slug:slug>/bank/"

urlpatterns = [
    path(B + "stats/", api.BankStatsApi.as_view(), name="bank-stats"),
    path(B + "diagnose/", api.BankDiagnoseApi.as_view(), name="bank-diagnose"),
    path(B + "enqueue/", api.BankEnqueueApi.as_view(), name="bank-enqueue"),
    path(B + "clear/", api.BankClearApi.as_view(), name="bank-clear"),
    path(B + "rebuild/", api.BankRebuildApi.as_view(), name="bank-rebuild"),
    path(B + "dream/", api.BankDreamApi.as_view(), name="bank-dream"),
    path(
        "projects/<slug:slug>/sessions/<str:ref>/extract/",
        api.SessionExtractApi.as_view(),
        name="session-extract",
    ),
]
