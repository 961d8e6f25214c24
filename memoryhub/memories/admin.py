from django.contrib import admin

from memoryhub.core.admin import ReadOnlyModelAdmin
from memoryhub.memories.models import Memory, MemoryEvent


@admin.register(Memory)
class MemoryAdmin(ReadOnlyModelAdmin):
    # Edits belong to the API and UI, which record audit events.
    list_display = ("title", "kind", "scope", "status", "importance", "project", "updated_at")
    list_filter = ("kind", "scope", "status")
    search_fields = ("title", "content")
    list_select_related = ("project",)


@admin.register(MemoryEvent)
class MemoryEventAdmin(ReadOnlyModelAdmin):
    list_display = ("memory", "verb", "actor_label", "created_at")
    list_select_related = ("memory",)
