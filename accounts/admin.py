from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.models import ApiToken, User

admin.site.register(User, UserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "user", "project", "read_only", "created_at", "revoked_at")
    list_filter = ("read_only",)
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")
