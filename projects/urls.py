from django.urls import path

from projects import api

urlpatterns = [
    path("projects/", api.ProjectCollectionApi.as_view(), name="projects"),
    path("projects/<slug:slug>/", api.ProjectDetailApi.as_view(), name="project-detail"),
    path("projects/<slug:slug>/members/", api.MemberCollectionApi.as_view(), name="members"),
    path(
        "projects/<slug:slug>/members/<str:username>/",
        api.MemberDetailApi.as_view(),
        name="member-detail",
    ),
]
