from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from accounts.models import ApiToken, User

admin.site.register(User, UserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # Tokens are made by the API, the dashboard or `manage.py token_create` (only they see the
    # secret); an admin form could only store one nobody can use.
    list_display = ("name", "prefix", "user", "project", "read_only", "created_at", "revoked_at")
    list_filter = ("read_only",)
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
