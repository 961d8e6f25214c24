from django.contrib import admin

from memoryhub.llm.models import LlmCall


@admin.register(LlmCall)
class LlmCallAdmin(admin.ModelAdmin):
    # A log: read-only here, written only by memoryhub.llm.services.
    list_display = ("created_at", "project", "purpose", "role", "model", "outcome", "latency_ms")
    list_filter = ("outcome", "provider", "purpose")
    list_select_related = ("project",)
    readonly_fields = [f.name for f in LlmCall._meta.fields]
