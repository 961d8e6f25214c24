from django.urls import path

from memoryhub.backups import api

urlpatterns = [
    path("projects/<slug:slug>/backup/", api.ProjectBackupApi.as_view(), name="project-backup"),
    path("backups/restore/", api.ProjectRestoreApi.as_view(), name="project-restore"),
]
