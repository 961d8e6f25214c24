from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from projects.models import Project, ProjectMembership


class MembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "timezone", "created_at")
    search_fields = ("slug", "name")
    inlines = [MembershipInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting goes through projects.services.project_delete (the settings page, the API,
        # manage.py project_delete): audited, set-based. The admin's collector would load every
        # row and fails at 100k memories.
        return False
