from django.contrib import admin

from memoryhub.core.admin import ReadOnlyModelAdmin
from memoryhub.llm.models import LlmCall


@admin.register(LlmCall)
class LlmCallAdmin(ReadOnlyModelAdmin):
    # A log, written only by memoryhub.llm.services.
    list_display = ("created_at", "project", "purpose", "role", "model", "outcome", "latency_ms")
    list_filter = ("outcome", "provider", "purpose")
    list_select_related = ("project",)
