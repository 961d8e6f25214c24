from django.contrib import admin

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
