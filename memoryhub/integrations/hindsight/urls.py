from django.urls import path, re_path

from memoryhub.integrations.hindsight import api, openapi

# Bank ids are free-form (URL-decoded by Django): any characters but "/".
B = r"^v1/default/banks/(?P<bank_id>[^/]+)"

urlpatterns = [
    path("health", api.HealthApi.as_view(), name="hindsight-health"),
    path("version", api.VersionApi.as_view(), name="hindsight-version"),
    path("v1/default/banks", api.BankListApi.as_view(), name="hindsight-banks"),
    re_path(B + r"$", api.BankApi.as_view(), name="hindsight-bank"),
    re_path(B + r"/profile$", api.BankApi.as_view(), name="hindsight-bank-profile"),
    re_path(B + r"/stats$", api.BankStatisticsApi.as_view(), name="hindsight-bank-stats"),
    re_path(B + r"/memories$", api.RetainApi.as_view(), name="hindsight-retain"),
    re_path(B + r"/memories/recall$", api.RecallApi.as_view(), name="hindsight-recall"),
    re_path(B + r"/memories/list$", api.MemoryListApi.as_view(), name="hindsight-memories"),
    re_path(
        B + r"/memories/(?P<memory_id>[^/]+)$",
        api.MemoryDetailApi.as_view(),
        name="hindsight-memory",
    ),
    re_path(B + r"/reflect$", api.ReflectApi.as_view(), name="hindsight-reflect"),
    re_path(B + r"/documents$", api.DocumentListApi.as_view(), name="hindsight-documents"),
    re_path(
        B + r"/documents/(?P<document_id>[^/]+)$",
        api.DocumentDetailApi.as_view(),
        name="hindsight-document",
    ),
    re_path(B + r"/mental-models$", api.MentalModelListApi.as_view(), name="hindsight-models"),
    re_path(
        B + r"/mental-models/(?P<model_id>[^/]+)$",
        api.MentalModelDetailApi.as_view(),
        name="hindsight-model",
    ),
    re_path(
        B + r"/mental-models/(?P<model_id>[^/]+)/history$",
        api.MentalModelHistoryApi.as_view(),
        name="hindsight-model-history",
    ),
    re_path(
        B + r"/mental-models/(?P<model_id>[^/]+)/refresh$",
        api.MentalModelRefreshApi.as_view(),
        name="hindsight-model-refresh",
    ),
    re_path(
        B + r"/operations/(?P<operation_id>[^/]+)$",
        api.OperationApi.as_view(),
        name="hindsight-operation",
    ),
    # Their own OpenAPI document (not part of /api/schema/): see openapi.py.
    path("v1/openapi.json", openapi.schema_view, name="hindsight-schema"),
    re_path(r"^v1/", api.not_found),
]
