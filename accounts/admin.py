from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.models import ApiToken, User
from memoryhub.core.admin import ReadOnlyModelAdmin

admin.site.register(User, UserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyModelAdmin):
    # Tokens are made and revoked by the API, the dashboard or `manage.py token_create`: they
    # show the secret once, revoke what a token minted with it and record the audit event.
    list_display = ("name", "prefix", "user", "project", "read_only", "created_at", "revoked_at")
    list_filter = ("read_only",)
    search_fields = ("name", "prefix", "user__username")
