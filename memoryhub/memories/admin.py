from django.contrib import admin

from memoryhub.memories.models import Memory, MemoryEvent


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    # Read-mostly: edits belong to the API and UI, which record audit events.
    list_display = ("title", "kind", "scope", "status", "importance", "project", "updated_at")
    list_filter = ("kind", "scope", "status")
    search_fields = ("title", "content")
    list_select_related = ("project",)
    readonly_fields = [f.name for f in Memory._meta.fields]


@admin.register(MemoryEvent)
class MemoryEventAdmin(admin.ModelAdmin):
    list_display = ("memory", "verb", "actor_label", "created_at")
    list_select_related = ("memory",)
    readonly_fields = [f.name for f in MemoryEvent._meta.fields]
